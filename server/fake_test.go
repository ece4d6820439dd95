package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/krm-catalog/krm-catalog/identity"
	"github.com/krm-catalog/krm-catalog/store"
)

// fakeStore keeps catalogs, definitions and keys in memory, with the rules of the PostgreSQL store
// that handlers rely on (same bytes again is a no-op, other bytes under a version conflict). Its
// fail field makes every method fail; stall makes every method wait for its context to end, as a
// stopped database does.
type fakeStore struct {
	mu       sync.Mutex
	tokens   map[string]string // token → publisher
	catalogs map[string][]store.CatalogVersion
	content  map[string][]byte // name@version → bytes
	defs     map[string][]byte // group/kind → bytes
	keys     map[string][]store.Key
	ids      map[string][]store.Identity
	// challenges are the open key challenges, by nonce
	challenges map[string]identity.Challenge
	checks     map[string]store.SignatureCheck
	fns        []store.FunctionDetail
	searched   store.SearchQuery
	pushes     int
	authChecks int      // tokens looked up
	refusals   []string // AuditRefusal calls: action publisher subject status
	proposals  []store.Proposal

	fail  error
	stall bool
	// derived holds definitions generated from catalogs (DefinitionContent's Derived), by
	// group/kind; reads counts the reads of definitions and functions
	derived map[string][]byte
	reads   int
	// authGate, when set, keeps Authenticate from looking a token up until it is closed, as a
	// database does that takes its time; each call first sends on authEntered
	authGate, authEntered chan struct{}
	// hold, when set, keeps PublishCatalog from returning until it is closed; each call first
	// sends on entered (when set)
	hold, entered chan struct{}
}

func newFakeStore() *fakeStore {
	return &fakeStore{
		tokens:     map[string]string{"secret": "example.com", "other": "other.example.com"},
		catalogs:   map[string][]store.CatalogVersion{},
		content:    map[string][]byte{},
		defs:       map[string][]byte{},
		keys:       map[string][]store.Key{},
		ids:        map[string][]store.Identity{},
		challenges: map[string]identity.Challenge{},
		checks:     map[string]store.SignatureCheck{},
	}
}

var fakeTime = time.Date(2026, 3, 14, 9, 26, 53, 0, time.UTC)

// enter applies fail and stall; every method calls it first.
func (f *fakeStore) enter(ctx context.Context) error {
	f.mu.Lock()
	fail, stall := f.fail, f.stall
	f.mu.Unlock()
	if stall {
		<-ctx.Done()
		return ctx.Err()
	}
	return fail
}

func (f *fakeStore) set(fail error, stall bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail, f.stall = fail, stall
}

func (f *fakeStore) Ping(ctx context.Context) error { return f.enter(ctx) }

func (f *fakeStore) Authenticate(ctx context.Context, token string) (store.Principal, error) {
	if err := f.enter(ctx); err != nil {
		return store.Principal{}, err
	}
	f.mu.Lock()
	gate, entered := f.authGate, f.authEntered
	f.mu.Unlock()
	if gate != nil {
		entered <- struct{}{}
		<-gate
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.authChecks++
	p, ok := f.tokens[token]
	if !ok {
		return store.Principal{}, store.Errorf(store.ErrUnauthorized, "unknown token")
	}
	return store.Principal{Publisher: p, TokenID: int64(len(token))}, nil
}

func (f *fakeStore) AuditRefusal(ctx context.Context, publisher, action, subject string, status int, reason string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refusals = append(f.refusals, fmt.Sprintf("%s %s %s %d", action, publisher, subject, status))
	return nil
}

func (f *fakeStore) PublishCatalog(ctx context.Context, p store.PublishCatalogParams) (store.CatalogVersion, bool, error) {
	if err := f.enter(ctx); err != nil {
		return store.CatalogVersion{}, false, err
	}
	f.mu.Lock()
	hold, entered := f.hold, f.entered
	f.mu.Unlock()
	if entered != nil {
		entered <- struct{}{}
	}
	if hold != nil {
		<-hold
	}
	f.mu.Lock()
	key := p.Name + "@" + p.Version
	if old, ok := f.content[key]; ok {
		f.mu.Unlock()
		if string(old) == string(p.Content) {
			return store.CatalogVersion{Catalog: p.Name, Version: p.Version, Digest: store.Digest(old)}, false, nil
		}
		return store.CatalogVersion{}, false, store.Errorf(store.ErrConflict, "version %s of %q is taken", p.Version, p.Name)
	}
	for _, fn := range p.Catalog.Functions { // the store refuses others' functions unless curated, which the fake has none of
		if fn.Publisher != p.Publisher {
			f.mu.Unlock()
			return store.CatalogVersion{}, false, store.Errorf(store.ErrForbidden, "the catalog lists functions of others: %s", fn.ID())
		}
	}
	if vs := f.catalogs[p.Name]; len(vs) > 0 && vs[0].Publisher != p.Publisher {
		f.mu.Unlock()
		return store.CatalogVersion{}, false, store.Errorf(store.ErrForbidden, "catalog %q belongs to %q", p.Name, vs[0].Publisher)
	}
	f.mu.Unlock()
	cv := store.CatalogVersion{Catalog: p.Name, Version: p.Version, Digest: store.Digest(p.Content), Publisher: p.Publisher,
		PublishedAt: fakeTime, Size: len(p.Content), Latest: true, Functions: len(p.Catalog.Functions)}
	if p.Push != nil { // as the store does: push with nothing held, then commit
		ref, dgst, err := p.Push(ctx)
		if err != nil {
			return store.CatalogVersion{}, false, err
		}
		cv.OCIReference, cv.OCIDigest = ref, dgst
		f.mu.Lock()
		f.pushes++
		f.mu.Unlock()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.catalogs[p.Name] {
		f.catalogs[p.Name][i].Latest = false
	}
	f.catalogs[p.Name] = append(f.catalogs[p.Name], cv)
	f.content[key] = p.Content
	f.content[p.Name+"@"] = p.Content
	return cv, true, nil
}

func (f *fakeStore) PublishDefinition(ctx context.Context, p store.PublishDefinitionParams) (store.DefinitionRevision, bool, error) {
	if err := f.enter(ctx); err != nil {
		return store.DefinitionRevision{}, false, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	id := p.Definition.Function.Group + "/" + p.Definition.Function.Kind
	rev := store.DefinitionRevision{Group: p.Definition.Function.Group, Kind: p.Definition.Function.Kind, Digest: store.Digest(p.Content),
		Publisher: p.Publisher, PublishedAt: fakeTime}
	if string(f.defs[id]) == string(p.Content) {
		return rev, false, nil
	}
	f.defs[id] = p.Content
	return rev, true, nil
}

func (f *fakeStore) ListCatalogs(ctx context.Context) ([]store.CatalogSummary, error) {
	if err := f.enter(ctx); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []store.CatalogSummary
	for name := range f.catalogs {
		out = append(out, f.summary(name))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (f *fakeStore) summary(name string) store.CatalogSummary {
	vs := f.catalogs[name]
	latest := vs[len(vs)-1]
	return store.CatalogSummary{Name: name, Publisher: latest.Publisher, CreatedAt: fakeTime, Versions: len(vs), Latest: &latest}
}

func (f *fakeStore) GetCatalog(ctx context.Context, name string) (store.CatalogSummary, error) {
	if err := f.enter(ctx); err != nil {
		return store.CatalogSummary{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.catalogs[name]) == 0 {
		return store.CatalogSummary{}, store.Errorf(store.ErrNotFound, "no catalog %q", name)
	}
	return f.summary(name), nil
}

func (f *fakeStore) ListCatalogVersions(ctx context.Context, name string) ([]store.CatalogVersion, error) {
	if err := f.enter(ctx); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.catalogs[name]) == 0 {
		return nil, store.Errorf(store.ErrNotFound, "no catalog %q", name)
	}
	return append([]store.CatalogVersion(nil), f.catalogs[name]...), nil
}

func (f *fakeStore) CatalogContent(ctx context.Context, name, version string) (store.Content, error) {
	if err := f.enter(ctx); err != nil {
		return store.Content{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	b, ok := f.content[name+"@"+version]
	if !ok {
		return store.Content{}, store.Errorf(store.ErrNotFound, "no catalog %q version %q", name, version)
	}
	if version == "" {
		version = f.catalogs[name][len(f.catalogs[name])-1].Version
	}
	return store.Content{Name: name, Version: version, Bytes: b, Digest: store.Digest(b)}, nil
}

func (f *fakeStore) DefinitionContent(ctx context.Context, group, kind string) (store.Content, error) {
	if err := f.enter(ctx); err != nil {
		return store.Content{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	if b, ok := f.derived[group+"/"+kind]; ok {
		return store.Content{Name: group + "/" + kind, Bytes: b, Digest: store.Digest(b), Derived: true}, nil
	}
	b, ok := f.defs[group+"/"+kind]
	if !ok {
		return store.Content{}, store.Errorf(store.ErrNotFound, "no function %s/%s", group, kind)
	}
	return store.Content{Name: group + "/" + kind, Bytes: b, Digest: store.Digest(b)}, nil
}

func (f *fakeStore) DefinitionDigest(ctx context.Context, group, kind string) (string, bool, error) {
	if err := f.enter(ctx); err != nil {
		return "", false, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if b, ok := f.defs[group+"/"+kind]; ok {
		return store.Digest(b), false, nil
	}
	if b, ok := f.derived[group+"/"+kind]; ok {
		return store.Digest(append([]byte("derived "), b...)), true, nil
	}
	return "", false, store.Errorf(store.ErrNotFound, "no function %s/%s", group, kind)
}

func (f *fakeStore) FunctionDigest(ctx context.Context, group, kind string) (string, error) {
	if err := f.enter(ctx); err != nil {
		return "", err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	fn, ok := f.function(group, kind)
	if !ok {
		return "", store.Errorf(store.ErrNotFound, "no function %s/%s", group, kind)
	}
	return store.Digest(fmt.Appendf(nil, "%v", fn)), nil
}

func (f *fakeStore) SearchFunctions(ctx context.Context, q store.SearchQuery) (store.SearchResult, error) {
	if err := f.enter(ctx); err != nil {
		return store.SearchResult{}, err
	}
	if q.PageToken == "bad" {
		return store.SearchResult{}, store.ErrBadPageToken
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.searched = q
	res := store.SearchResult{Functions: []store.FunctionSummary{}}
	for _, fn := range f.fns {
		if strings.Contains(strings.ToLower(fn.Kind), strings.ToLower(q.Text)) {
			res.Functions = append(res.Functions, fn.FunctionSummary)
		}
	}
	res.Total = len(res.Functions)
	return res, nil
}

func (f *fakeStore) function(group, kind string) (store.FunctionDetail, bool) {
	for _, fn := range f.fns {
		if fn.Group == group && fn.Kind == kind {
			return fn, true
		}
	}
	return store.FunctionDetail{}, false
}

func (f *fakeStore) GetFunction(ctx context.Context, group, kind string) (store.FunctionDetail, error) {
	if err := f.enter(ctx); err != nil {
		return store.FunctionDetail{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	fn, ok := f.function(group, kind)
	if !ok {
		return store.FunctionDetail{}, store.Errorf(store.ErrNotFound, "no function %s/%s", group, kind)
	}
	f.reads++
	return fn, nil
}

func (f *fakeStore) GetFunctionVersion(ctx context.Context, group, kind, version string) ([]store.FunctionVersion, error) {
	fn, err := f.GetFunction(ctx, group, kind)
	if err != nil {
		return nil, err
	}
	var out []store.FunctionVersion
	for _, e := range fn.Entries {
		if e.Version == version {
			out = append(out, e)
		}
	}
	if len(out) == 0 {
		return nil, store.Errorf(store.ErrNotFound, "no version %s of %s/%s", version, group, kind)
	}
	return out, nil
}

func (f *fakeStore) Resolve(ctx context.Context, apiVersion, kind string, catalogs []string) (store.Resolution, error) {
	group, version, _ := strings.Cut(apiVersion, "/")
	fvs, err := f.GetFunctionVersion(ctx, group, kind, version)
	if err != nil {
		return store.Resolution{}, err
	}
	return store.Resolution{APIVersion: apiVersion, Kind: kind, Function: fvs[0], Runtime: fvs[0].Spec["runtime"], Searched: catalogs}, nil
}

func (f *fakeStore) IssueChallenge(ctx context.Context, publisher string, ttl time.Duration) (identity.Challenge, error) {
	if err := f.enter(ctx); err != nil {
		return identity.Challenge{}, err
	}
	nonce, err := identity.NewNonce()
	if err != nil {
		return identity.Challenge{}, err
	}
	c := identity.Challenge{Publisher: publisher, Nonce: nonce, ExpiresAt: fakeTime.Add(ttl)}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.challenges[nonce] = c
	return c, nil
}

// AddKey applies the store's rules: the challenge must have been issued to the publisher and is
// used up by the attempt; the signature must verify with the posted key.
func (f *fakeStore) AddKey(ctx context.Context, publisher string, proof identity.Proof) (store.Key, bool, error) {
	if err := f.enter(ctx); err != nil {
		return store.Key{}, false, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.challenges[proof.Nonce]
	delete(f.challenges, proof.Nonce)
	if !ok || c.Publisher != publisher {
		return store.Key{}, false, store.Errorf(store.ErrForbidden, "no open challenge %q for %s", proof.Nonce, publisher)
	}
	pk, err := c.Verify(proof)
	switch {
	case errors.Is(err, identity.ErrBadProof):
		return store.Key{}, false, store.Errorf(store.ErrForbidden, "no proof of possession of key %s", pk.ID())
	case err != nil:
		return store.Key{}, false, store.Errorf(store.ErrInvalid, "%s", err)
	}
	for _, k := range f.keys[publisher] {
		if k.Fingerprint == pk.ID() && k.RemovedAt == nil {
			return k, false, nil
		}
	}
	proven := fakeTime
	k := store.Key{Publisher: publisher, Fingerprint: pk.ID(), PEM: proof.PublicKey, CreatedAt: fakeTime, ProvenAt: &proven}
	f.keys[publisher] = append(f.keys[publisher], k)
	return k, true, nil
}

func (f *fakeStore) KeyHistory(ctx context.Context, publisher string) ([]store.Key, error) {
	if err := f.enter(ctx); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]store.Key(nil), f.keys[publisher]...), nil
}

func (f *fakeStore) GetGroupOwner(ctx context.Context, group string) (store.GroupOwner, error) {
	if err := f.enter(ctx); err != nil {
		return store.GroupOwner{}, err
	}
	for _, name := range identity.Ancestors(group) {
		for _, pub := range f.tokens {
			if pub == name {
				return store.GroupOwner{Group: group, Owner: pub, Via: identity.OwnedByName, Through: name}, nil
			}
		}
	}
	return store.GroupOwner{Group: group}, nil
}

func (f *fakeStore) ListGrants(ctx context.Context, publisher string) ([]store.Grant, error) {
	return nil, f.enter(ctx)
}

func (f *fakeStore) ListKeys(ctx context.Context, publisher string) ([]store.Key, error) {
	if err := f.enter(ctx); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var active []store.Key
	for _, k := range f.keys[publisher] {
		if k.RemovedAt == nil {
			active = append(active, k)
		}
	}
	return active, nil
}

func (f *fakeStore) DeleteKey(ctx context.Context, publisher, fingerprint string) error {
	if err := f.enter(ctx); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, k := range f.keys[publisher] {
		if k.Fingerprint == fingerprint && k.RemovedAt == nil {
			removed := fakeTime
			f.keys[publisher][i].RemovedAt = &removed
			return nil
		}
	}
	return store.Errorf(store.ErrNotFound, "no key %s", fingerprint)
}

// AddIdentity applies the store's rules, as AddKey does, with v checking the keyless proof.
func (f *fakeStore) AddIdentity(ctx context.Context, publisher string, proof identity.KeylessProof, v store.ChallengeVerifier) (store.Identity, bool, error) {
	if err := f.enter(ctx); err != nil {
		return store.Identity{}, false, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.challenges[proof.Nonce]
	delete(f.challenges, proof.Nonce)
	if !ok || c.Publisher != publisher {
		return store.Identity{}, false, store.Errorf(store.ErrForbidden, "no open challenge %q for %s", proof.Nonce, publisher)
	}
	if _, err := v.VerifyChallenge(c, proof); err != nil {
		if errors.Is(err, identity.ErrKeylessMismatch) || errors.Is(err, identity.ErrKeylessUnverified) {
			return store.Identity{}, false, store.Errorf(store.ErrForbidden, "no proof of the identity: %s", err)
		}
		return store.Identity{}, false, store.Errorf(store.ErrInvalid, "%s", err)
	}
	for _, id := range f.ids[publisher] {
		if id.Pattern == proof.Pattern && id.RemovedAt == nil {
			return id, false, nil
		}
	}
	proven := fakeTime
	id := store.Identity{Publisher: publisher, Pattern: proof.Pattern, CreatedAt: fakeTime, ProvenAt: &proven}
	f.ids[publisher] = append(f.ids[publisher], id)
	return id, true, nil
}

func (f *fakeStore) IdentityHistory(ctx context.Context, publisher string) ([]store.Identity, error) {
	if err := f.enter(ctx); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]store.Identity(nil), f.ids[publisher]...), nil
}

func (f *fakeStore) ListIdentities(ctx context.Context, publisher string) ([]store.Identity, error) {
	all, err := f.IdentityHistory(ctx, publisher)
	return slices.DeleteFunc(all, func(id store.Identity) bool { return id.RemovedAt != nil }), err
}

func (f *fakeStore) DeleteIdentity(ctx context.Context, publisher string, p identity.Pattern) error {
	if err := f.enter(ctx); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, id := range f.ids[publisher] {
		if id.Pattern == p && id.RemovedAt == nil {
			removed := fakeTime
			f.ids[publisher][i].RemovedAt = &removed
			return nil
		}
	}
	return store.Errorf(store.ErrNotFound, "no identity %s", p)
}

func (f *fakeStore) SignatureChecks(ctx context.Context, publisher string, subjects []string, _ time.Duration) (map[string]store.SignatureCheck, error) {
	if err := f.enter(ctx); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]store.SignatureCheck{}
	for _, s := range subjects {
		if c, ok := f.checks[publisher+" "+s]; ok {
			out[s] = c
		}
	}
	return out, nil
}

func (f *fakeStore) SaveSignatureCheck(ctx context.Context, publisher string, c store.SignatureCheck) error {
	if err := f.enter(ctx); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.checks[publisher+" "+c.Subject] = c
	return nil
}

func (f *fakeStore) CreateProposal(ctx context.Context, p store.CreateProposalParams) (store.Proposal, bool, error) {
	if err := f.enter(ctx); err != nil {
		return store.Proposal{}, false, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.catalogs[p.Catalog]) == 0 {
		return store.Proposal{}, false, store.Errorf(store.ErrNotFound, "no catalog %q", p.Catalog)
	}
	pr := store.Proposal{ID: int64(len(f.proposals) + 1), Catalog: p.Catalog, Proposer: p.Proposer, Group: p.Definition.Function.Group,
		Kind: p.Definition.Function.Kind, Digest: store.Digest(p.Content), Status: store.ProposalOpen, CreatedAt: fakeTime, Definition: string(p.Content)}
	f.proposals = append(f.proposals, pr)
	return pr, true, nil
}

func (f *fakeStore) ListProposals(ctx context.Context, catalogName string) ([]store.Proposal, error) {
	if err := f.enter(ctx); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	out := []store.Proposal{}
	for _, p := range f.proposals {
		if p.Catalog == catalogName && p.Status == store.ProposalOpen {
			p.Definition = "" // a list leaves the definitions out
			out = append(out, p)
		}
	}
	return out, nil
}

func (f *fakeStore) ProposalsDigest(ctx context.Context, catalogName string) (string, error) {
	if err := f.enter(ctx); err != nil {
		return "", err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.catalogs[catalogName]) == 0 {
		return "", store.Errorf(store.ErrNotFound, "no catalog %q", catalogName)
	}
	state := ""
	for _, p := range f.proposals {
		if p.Catalog == catalogName && p.Status == store.ProposalOpen {
			state += fmt.Sprint(p.ID, ",")
		}
	}
	return store.Digest([]byte(state)), nil
}

func (f *fakeStore) GetProposal(ctx context.Context, catalogName string, id int64) (store.Proposal, error) {
	if err := f.enter(ctx); err != nil {
		return store.Proposal{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.proposals {
		if p.Catalog == catalogName && p.ID == id {
			return p, nil
		}
	}
	return store.Proposal{}, store.Errorf(store.ErrNotFound, "catalog %q has no proposal %d", catalogName, id)
}

func (f *fakeStore) RejectProposal(ctx context.Context, catalogName string, id int64, publisher, reason string) (store.Proposal, error) {
	p, err := f.GetProposal(ctx, catalogName, id)
	if err != nil {
		return p, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if owner := f.catalogs[catalogName][0].Publisher; owner != publisher {
		return p, store.Errorf(store.ErrForbidden, "only catalog %q's publisher %q decides its proposals", catalogName, owner)
	}
	f.proposals[id-1].Status, f.proposals[id-1].Reason = store.ProposalRejected, reason
	return f.proposals[id-1], nil
}

var _ Store = (*fakeStore)(nil)
