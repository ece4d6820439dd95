package server

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/opencontainers/go-digest"

	"github.com/krm-catalog/krm-catalog/catalog"
	"github.com/krm-catalog/krm-catalog/identity"
	"github.com/krm-catalog/krm-catalog/oci"
	"github.com/krm-catalog/krm-catalog/oci/sign"
	"github.com/krm-catalog/krm-catalog/store"
)

// Registry is what the service needs of an OCI registry: pushing catalogs, and reading what is
// attached to artifacts (signatures, attestations, SBOMs).
type Registry interface {
	PushCatalog(ctx context.Context, ref string, data []byte, opts oci.PushOptions) (digest.Digest, error)
	Evidence(ctx context.Context, ref string, keys []sign.PublicKey) (oci.Evidence, error)
	ReadSBOM(ctx context.Context, ref string, manifest digest.Digest) ([]byte, string, error)
}

// KeyStore is what the service needs to keep publishers' keys, identities and signature checks.
type KeyStore interface {
	IssueChallenge(ctx context.Context, publisher string, ttl time.Duration) (identity.Challenge, error)
	AddKey(ctx context.Context, publisher string, proof identity.Proof) (store.Key, bool, error)
	ListKeys(ctx context.Context, publisher string) ([]store.Key, error)
	KeyHistory(ctx context.Context, publisher string) ([]store.Key, error)
	DeleteKey(ctx context.Context, publisher, fingerprint string) error
	AddIdentity(ctx context.Context, publisher string, proof identity.KeylessProof, v store.ChallengeVerifier) (store.Identity, bool, error)
	ListIdentities(ctx context.Context, publisher string) ([]store.Identity, error)
	IdentityHistory(ctx context.Context, publisher string) ([]store.Identity, error)
	DeleteIdentity(ctx context.Context, publisher string, p identity.Pattern) error
	SignatureChecks(ctx context.Context, publisher string, subjects []string, maxAge time.Duration) (map[string]store.SignatureCheck, error)
	SaveSignatureCheck(ctx context.Context, publisher string, c store.SignatureCheck) error
}

// signatureCheckAge is how long a recorded check stands before the registry is asked again: a
// publisher signs after publishing, and the status should follow within minutes.
const signatureCheckAge = 2 * time.Minute

// Signatures reports the signature status of catalog and function versions (verified, signed or
// unsigned) against their publisher's registered keys and identities, with who signed, the SLSA
// provenance and the SBOMs attached, reading them from the registries the artifacts live in and
// recording what it learns in the store, so replicas share it. The JSON API and the website both
// use it. A nil *Signatures annotates nothing.
type Signatures struct {
	registry Registry
	keys     KeyStore
	keyless  *identity.Verifier
	logger   *slog.Logger
}

// NewSignatures returns the signature reporter of a service that has a registry. keyless verifies
// signatures by registered identities; nil verifies only keys.
func NewSignatures(registry Registry, keys KeyStore, keyless *identity.Verifier, logger *slog.Logger) *Signatures {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Signatures{registry: registry, keys: keys, keyless: keyless, logger: logger}
}

// checks returns the check of each subject (a pinned reference, repository@sha256:...) for
// publisher. A subject whose registry cannot be reached is left out: its status is unknown.
func (c *Signatures) checks(ctx context.Context, publisher string, subjects []string) map[string]store.SignatureCheck {
	out := map[string]store.SignatureCheck{}
	if c == nil || len(subjects) == 0 {
		return out
	}
	recorded, err := c.keys.SignatureChecks(ctx, publisher, subjects, signatureCheckAge)
	if err != nil {
		c.logger.WarnContext(ctx, "read signature checks", slog.Any("error", err))
		return out
	}
	var missing []string
	seen := make(map[string]bool, len(subjects))
	for _, s := range subjects {
		if r, ok := recorded[s]; ok {
			out[s] = r
		} else if !seen[s] {
			seen[s] = true
			missing = append(missing, s)
		}
	}
	if len(missing) == 0 {
		return out
	}
	trust, err := c.trustOf(ctx, publisher)
	if err != nil {
		c.logger.WarnContext(ctx, "read publisher keys and identities", slog.String("publisher", publisher), slog.Any("error", err))
		return out
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var (
		mu  sync.Mutex
		wg  sync.WaitGroup
		sem = make(chan struct{}, 4)
	)
	for _, subject := range missing {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			ev, err := c.registry.Evidence(ctx, subject, trust.keys)
			if err != nil {
				c.logger.WarnContext(ctx, "check signatures", slog.String("subject", subject), slog.Any("error", err))
				return
			}
			check := c.judge(subject, ev, trust)
			if err := c.keys.SaveSignatureCheck(context.WithoutCancel(ctx), publisher, check); err != nil {
				c.logger.WarnContext(ctx, "save signature check", slog.Any("error", err))
			}
			mu.Lock()
			out[subject] = check
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

// trust is what makes a publisher's signatures verified: its keys (with their fingerprints by the
// name the OCI client gives a verifying key) and its identities.
type trust struct {
	keys         []sign.PublicKey
	fingerprints map[string]string
	identities   []identity.Pattern
}

func (c *Signatures) trustOf(ctx context.Context, publisher string) (trust, error) {
	stored, err := c.keys.ListKeys(ctx, publisher)
	if err != nil {
		return trust{}, err
	}
	t := trust{keys: make([]sign.PublicKey, 0, len(stored)), fingerprints: map[string]string{}}
	for _, k := range stored {
		pk, err := sign.ParsePublicKey(publisher+" key "+k.Fingerprint[:min(12, len(k.Fingerprint))], []byte(k.PEM))
		if err != nil {
			return trust{}, err
		}
		t.keys = append(t.keys, pk)
		t.fingerprints[pk.String()] = k.Fingerprint
	}
	if c.keyless == nil {
		return t, nil
	}
	ids, err := c.keys.ListIdentities(ctx, publisher)
	if err != nil {
		return trust{}, err
	}
	for _, id := range ids {
		t.identities = append(t.identities, id.Pattern)
	}
	return t, nil
}

// judge reads what a registry holds for subject: verified by a registered key, or else by a
// keyless bundle a registered identity signed (cosign's signature statement, or a message
// signature over the manifest); the first SLSA provenance a registered identity signed; the SBOMs.
func (c *Signatures) judge(subject string, ev oci.Evidence, t trust) store.SignatureCheck {
	check := store.SignatureCheck{Subject: subject, Status: string(oci.Classify(ev.Signatures))}
	for _, s := range ev.Signatures {
		if s.Verified {
			check.Signer = identity.Signer{Key: t.fingerprints[s.Key]}
			break
		}
	}
	att := identity.Attestations{}
	for _, b := range ev.Bundles {
		if len(t.identities) == 0 {
			break
		}
		signer, st, err := c.keyless.VerifyDigest(b.Data, ev.Subject.Digest, t.identities,
			sign.CosignSignPredicateType, identity.SLSAProvenanceV1, identity.SLSAProvenanceV02)
		if err != nil {
			continue
		}
		switch st.PredicateType {
		case "", sign.CosignSignPredicateType:
			if check.Status != string(oci.StatusVerified) {
				check.Status, check.Signer = string(oci.StatusVerified), signer
			}
		default:
			if att.Provenance != nil {
				continue
			}
			p, err := identity.ParseProvenance(st.PredicateType, st.Predicate)
			if err != nil {
				c.logger.Warn("read provenance", slog.String("subject", subject), slog.Any("error", err))
				continue
			}
			p.Signer = signer
			att.Provenance = &p
		}
	}
	for _, s := range ev.SBOMs {
		att.SBOMs = append(att.SBOMs, identity.SBOM{ArtifactType: s.ArtifactType, Manifest: string(s.Manifest), Layer: string(s.Layer.Digest), Size: s.Layer.Size})
	}
	if !att.IsZero() {
		check.Attestations = &att
	}
	return check
}

// catalogSubject is the pinned reference of a pushed catalog version, or "".
func catalogSubject(v store.CatalogVersion) string {
	if v.OCIReference == "" || v.OCIDigest == "" {
		return ""
	}
	ref, err := oci.ParseReference(v.OCIReference)
	if err != nil {
		return ""
	}
	return ref.Name() + "@" + v.OCIDigest
}

// functionSubjects are the OCI artifacts a function version runs: its container image pinned by
// digest, and exec and starlark artifacts referenced with oci://.
func functionSubjects(fv store.FunctionVersion) []string {
	var out []string
	if fv.Image != "" && fv.ImageDigest != "" {
		if ref, err := catalog.ParseImage(fv.Image); err == nil {
			out = append(out, ref.Name+"@"+fv.ImageDigest)
		}
	}
	rt, _ := fv.Spec["runtime"].(map[string]any)
	exec, _ := rt["exec"].(map[string]any)
	platforms, _ := exec["platforms"].([]any)
	for _, p := range platforms {
		pm, _ := p.(map[string]any)
		if uri, _ := pm["uri"].(string); strings.HasPrefix(uri, "oci://") {
			out = append(out, strings.TrimPrefix(uri, "oci://"))
		}
	}
	switch s := rt["starlark"].(type) {
	case string:
		if strings.HasPrefix(s, "oci://") {
			out = append(out, strings.TrimPrefix(s, "oci://"))
		}
	case map[string]any:
		if uri, _ := s["uri"].(string); strings.HasPrefix(uri, "oci://") {
			out = append(out, strings.TrimPrefix(uri, "oci://"))
		} else if ref, _ := s["ref"].(string); ref != "" {
			out = append(out, ref)
		}
	}
	return out
}

// combine folds the checks of a function version's artifacts into one status: verified only if
// all are, unsigned if any is; "" when a status is unknown or there is no OCI artifact to sign.
func combine(subjects []string, checks map[string]store.SignatureCheck) string {
	if len(subjects) == 0 {
		return ""
	}
	result := string(oci.StatusVerified)
	for _, s := range subjects {
		switch checks[s].Status {
		case "":
			return ""
		case string(oci.StatusUnsigned):
			return string(oci.StatusUnsigned)
		case string(oci.StatusSigned):
			result = string(oci.StatusSigned)
		}
	}
	return result
}

// signerOf is who signed a verified check, or nil.
func signerOf(c store.SignatureCheck) *identity.Signer {
	if c.Status != string(oci.StatusVerified) || c.Signer.IsZero() {
		return nil
	}
	s := c.Signer
	return &s
}

// AnnotateCatalogVersions fills in the Signature and SignedBy of every version that was pushed to
// a registry.
func (s *Signatures) AnnotateCatalogVersions(ctx context.Context, versions []store.CatalogVersion) {
	if s == nil {
		return
	}
	byPublisher := map[string][]string{}
	for _, v := range versions {
		if subj := catalogSubject(v); subj != "" {
			byPublisher[v.Publisher] = append(byPublisher[v.Publisher], subj)
		}
	}
	checks := map[string]store.SignatureCheck{}
	for pub, subjects := range byPublisher {
		for k, v := range s.checks(ctx, pub, subjects) {
			checks[pub+"\x00"+k] = v
		}
	}
	for i, v := range versions {
		c := checks[v.Publisher+"\x00"+catalogSubject(v)]
		versions[i].Signature, versions[i].SignedBy = c.Status, signerOf(c)
	}
}

// annotateLatest fills in the signature status of each catalog's latest version.
func (s *Signatures) annotateLatest(ctx context.Context, cs []store.CatalogSummary) {
	if s == nil {
		return
	}
	var versions []store.CatalogVersion
	for _, c := range cs {
		if c.Latest != nil {
			versions = append(versions, *c.Latest)
		}
	}
	s.AnnotateCatalogVersions(ctx, versions)
	i := 0
	for _, c := range cs {
		if c.Latest != nil {
			c.Latest.Signature, c.Latest.SignedBy = versions[i].Signature, versions[i].SignedBy
			i++
		}
	}
}

// AnnotateFunctionVersions fills in the Signature, SignedBy, Provenance and SBOMs of every version
// whose artifacts are in OCI registries. The signer, provenance and SBOMs are those of the first
// artifact that has them: the container image, or the first exec platform's binary.
func (s *Signatures) AnnotateFunctionVersions(ctx context.Context, fvs []store.FunctionVersion) {
	if s == nil {
		return
	}
	for i, fv := range fvs {
		subjects := functionSubjects(fv)
		checks := s.checks(ctx, fv.Publisher, subjects)
		fvs[i].Signature = combine(subjects, checks)
		for _, subj := range subjects {
			c := checks[subj]
			if fvs[i].SignedBy == nil && fvs[i].Signature == string(oci.StatusVerified) {
				fvs[i].SignedBy = signerOf(c)
			}
			if c.Attestations == nil {
				continue
			}
			if fvs[i].Provenance == nil {
				fvs[i].Provenance = c.Attestations.Provenance
			}
			if fvs[i].SBOMs == nil {
				fvs[i].SBOMs = c.Attestations.SBOMs
			}
		}
	}
}

// sbomSubject finds, among a function version's artifacts, the one whose recorded check lists the
// SBOM referrer manifest, so that the service only reads SBOMs it has listed.
func (s *Signatures) sbomSubject(ctx context.Context, fv store.FunctionVersion, manifest string) (string, bool) {
	if s == nil {
		return "", false
	}
	subjects := functionSubjects(fv)
	checks := s.checks(ctx, fv.Publisher, subjects)
	for _, subj := range subjects {
		if a := checks[subj].Attestations; a != nil {
			for _, sb := range a.SBOMs {
				if sb.Manifest == manifest {
					return subj, true
				}
			}
		}
	}
	return "", false
}

func (s *Server) deleteKey(w http.ResponseWriter, r *http.Request) error {
	name := chi.URLParam(r, "name")
	if err := s.ownPublisher(r, name); err != nil {
		return err
	}
	if err := s.keys.DeleteKey(r.Context(), name, chi.URLParam(r, "fingerprint")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// ownPublisher allows a token to manage only its own publisher.
func (s *Server) ownPublisher(r *http.Request, name string) error {
	if p := publisherOf(r.Context()); p != name {
		return store.Errorf(store.ErrForbidden, "the token acts for publisher %q, not %q", p, name)
	}
	return nil
}

// pushCatalog returns the publish step that copies a new catalog version to the registry.
func (s *Server) pushCatalog(name, version string, body []byte) func(context.Context) (string, string, error) {
	if s.registry == nil {
		return nil
	}
	return func(ctx context.Context) (string, string, error) {
		ref := oci.CatalogReference(s.registryPrefix, name, version)
		d, err := s.registry.PushCatalog(ctx, ref, body, oci.PushOptions{Version: version, Title: name})
		if err != nil {
			return "", "", &upstreamError{message: fmt.Sprintf("pushing the catalog to %s failed; nothing was published", ref), err: err}
		}
		return ref, string(d), nil
	}
}

// upstreamError is a failure of a service krm-catalog depends on, such as the registry (502).
type upstreamError struct {
	message string
	err     error
}

func (e *upstreamError) Error() string { return e.message + ": " + e.err.Error() }
func (e *upstreamError) Unwrap() error { return e.err }
