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

// Registry is what the service needs of an OCI registry: pushing catalogs and reading signatures.
type Registry interface {
	PushCatalog(ctx context.Context, ref string, data []byte, opts oci.PushOptions) (digest.Digest, error)
	SignatureStatus(ctx context.Context, ref string, keys []sign.PublicKey) (oci.SignatureStatus, error)
}

// KeyStore is what the service needs to keep publishers' keys and signature checks.
type KeyStore interface {
	IssueChallenge(ctx context.Context, publisher string, ttl time.Duration) (identity.Challenge, error)
	AddKey(ctx context.Context, publisher string, proof identity.Proof) (store.Key, bool, error)
	ListKeys(ctx context.Context, publisher string) ([]store.Key, error)
	KeyHistory(ctx context.Context, publisher string) ([]store.Key, error)
	DeleteKey(ctx context.Context, publisher, fingerprint string) error
	SignatureChecks(ctx context.Context, publisher string, subjects []string, maxAge time.Duration) (map[string]store.SignatureCheck, error)
	SaveSignatureCheck(ctx context.Context, publisher string, c store.SignatureCheck) error
}

// signatureCheckAge is how long a recorded check stands before the registry is asked again: a
// publisher signs after publishing, and the status should follow within minutes.
const signatureCheckAge = 2 * time.Minute

// Signatures reports the signature status of catalog and function versions (verified, signed or
// unsigned) against their publisher's registered keys, reading signatures from the registries the
// artifacts live in and recording what it learns in the store, so replicas share it. The JSON API
// and the website both use it. A nil *Signatures annotates nothing.
type Signatures struct {
	registry Registry
	keys     KeyStore
	logger   *slog.Logger
}

// NewSignatures returns the signature reporter of a service that has a registry.
func NewSignatures(registry Registry, keys KeyStore, logger *slog.Logger) *Signatures {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Signatures{registry: registry, keys: keys, logger: logger}
}

// statuses returns the status of each subject (a pinned reference, repository@sha256:...) for
// publisher. A subject whose registry cannot be reached is left out: its status is unknown.
func (c *Signatures) statuses(ctx context.Context, publisher string, subjects []string) map[string]string {
	out := map[string]string{}
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
			out[s] = r.Status
		} else if !seen[s] {
			seen[s] = true
			missing = append(missing, s)
		}
	}
	if len(missing) == 0 {
		return out
	}
	keys, err := c.publisherKeys(ctx, publisher)
	if err != nil {
		c.logger.WarnContext(ctx, "read publisher keys", slog.String("publisher", publisher), slog.Any("error", err))
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
			status, err := c.registry.SignatureStatus(ctx, subject, keys)
			if err != nil {
				c.logger.WarnContext(ctx, "check signatures", slog.String("subject", subject), slog.Any("error", err))
				return
			}
			if err := c.keys.SaveSignatureCheck(context.WithoutCancel(ctx), publisher, store.SignatureCheck{Subject: subject, Status: string(status)}); err != nil {
				c.logger.WarnContext(ctx, "save signature check", slog.Any("error", err))
			}
			mu.Lock()
			out[subject] = string(status)
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

func (c *Signatures) publisherKeys(ctx context.Context, publisher string) ([]sign.PublicKey, error) {
	stored, err := c.keys.ListKeys(ctx, publisher)
	if err != nil {
		return nil, err
	}
	keys := make([]sign.PublicKey, 0, len(stored))
	for _, k := range stored {
		pk, err := sign.ParsePublicKey(publisher+" key "+k.Fingerprint[:min(12, len(k.Fingerprint))], []byte(k.PEM))
		if err != nil {
			return nil, err
		}
		keys = append(keys, pk)
	}
	return keys, nil
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

// combine folds the statuses of a function version's artifacts into one: verified only if all are,
// unsigned if any is; "" when a status is unknown or there is no OCI artifact to sign.
func combine(subjects []string, statuses map[string]string) string {
	if len(subjects) == 0 {
		return ""
	}
	result := string(oci.StatusVerified)
	for _, s := range subjects {
		switch statuses[s] {
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

// AnnotateCatalogVersions fills in the Signature of every version that was pushed to a registry.
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
	statuses := map[string]string{}
	for pub, subjects := range byPublisher {
		for k, v := range s.statuses(ctx, pub, subjects) {
			statuses[pub+"\x00"+k] = v
		}
	}
	for i, v := range versions {
		versions[i].Signature = statuses[v.Publisher+"\x00"+catalogSubject(v)]
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
			c.Latest.Signature = versions[i].Signature
			i++
		}
	}
}

// AnnotateFunctionVersions fills in the Signature of every version whose artifacts are in OCI
// registries.
func (s *Signatures) AnnotateFunctionVersions(ctx context.Context, fvs []store.FunctionVersion) {
	if s == nil {
		return
	}
	for i, fv := range fvs {
		subjects := functionSubjects(fv)
		fvs[i].Signature = combine(subjects, s.statuses(ctx, fv.Publisher, subjects))
	}
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
