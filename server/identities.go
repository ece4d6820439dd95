package server

import (
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/opencontainers/go-digest"

	"github.com/krm-catalog/krm-catalog/identity"
	"github.com/krm-catalog/krm-catalog/store"
)

// maxKeylessProofBytes bounds a posted keyless proof: a bundle is a few KiB.
const maxKeylessProofBytes = 64 << 10

// errNoTrustedRoot answers identity registration on a service built without a keyless verifier.
var errNoTrustedRoot = store.Errorf(store.ErrInvalid, "this service verifies no keyless signatures: it was started without a trusted root")

func (s *Server) addIdentity(w http.ResponseWriter, r *http.Request) error {
	name := chi.URLParam(r, "name")
	if err := s.ownPublisher(r, name); err != nil {
		return err
	}
	if s.keyless == nil {
		return errNoTrustedRoot
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, _ := mime.ParseMediaType(ct); mt != "application/json" {
			return &badRequest{message: fmt.Sprintf("the body must be application/json, not %s", mt)}
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxKeylessProofBytes))
	if err != nil {
		return err
	}
	var proof identity.KeylessProof
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&proof); err != nil {
		return &badRequest{message: "the body must be a JSON proof {issuer, subject, nonce, bundle}: " + err.Error()}
	}
	if proof.Issuer == "" || proof.Subject == "" || proof.Nonce == "" || len(proof.Bundle) == 0 {
		return &badRequest{message: "issuer, subject, nonce and bundle are all required: POST /api/v1/publishers/{name}/identities/challenges, " +
			"sign the challenge's payload keylessly as the identity (cosign sign-blob --bundle), and PUT the bundle here; krm-catalog publisher add-identity does it"}
	}
	id, created, err := s.keys.AddIdentity(r.Context(), name, proof, s.keyless)
	if err != nil {
		return err
	}
	writeRegistered(w, created, "identity", id)
	return nil
}

// writeRegistered answers a registration: 201 for a new one, 200 for one that was already active.
func writeRegistered(w http.ResponseWriter, created bool, field string, v any) {
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	writeJSON(w, status, map[string]any{"created": created, field: v})
}

// splitRemoved splits a history into what is active and what was removed, both non-nil.
func splitRemoved[T any](history []T, isRemoved func(T) bool) (active, removed []T) {
	active, removed = []T{}, []T{}
	for _, v := range history {
		if isRemoved(v) {
			removed = append(removed, v)
		} else {
			active = append(active, v)
		}
	}
	return active, removed
}

func (s *Server) listIdentities(w http.ResponseWriter, r *http.Request) error {
	history, err := s.keys.IdentityHistory(r.Context(), chi.URLParam(r, "name"))
	if err != nil {
		return err
	}
	active, removed := splitRemoved(history, func(id store.Identity) bool { return id.RemovedAt != nil })
	return serveJSON(w, map[string]any{"identities": active, "removed": removed})
}

// deleteIdentity takes the identity in the query (?issuer=...&subject=...): a subject is a URL.
func (s *Server) deleteIdentity(w http.ResponseWriter, r *http.Request) error {
	name := chi.URLParam(r, "name")
	if err := s.ownPublisher(r, name); err != nil {
		return err
	}
	q := r.URL.Query()
	p := identity.Pattern{Issuer: q.Get("issuer"), Subject: q.Get("subject")}
	if p.Issuer == "" || p.Subject == "" {
		return &badRequest{message: "issuer and subject are required, in the query"}
	}
	if err := s.keys.DeleteIdentity(r.Context(), name, p); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// functionSBOM serves an SBOM attached to a function version's artifact, read from its registry:
// only one the service listed for the version, so that this is no proxy to any registry.
func (s *Server) functionSBOM(w http.ResponseWriter, r *http.Request) error {
	fvs, err := s.store.GetFunctionVersion(r.Context(), chi.URLParam(r, "group"), chi.URLParam(r, "kind"), chi.URLParam(r, "version"))
	if err != nil {
		return err
	}
	manifest := chi.URLParam(r, "digest")
	for _, fv := range fvs {
		subject, ok := s.signatures.sbomSubject(r.Context(), fv, manifest)
		if !ok {
			continue
		}
		data, mediaType, err := s.registry.ReadSBOM(r.Context(), subject, digest.Digest(manifest))
		if err != nil {
			return &upstreamError{message: "reading the SBOM from the registry failed", err: err}
		}
		w.Header().Set("Content-Type", mediaType)
		w.Header().Set("Content-Disposition", `attachment; filename="sbom.json"`)
		w.Header().Set("Cache-Control", cacheImmutable)
		w.Header().Set("X-Content-Type-Options", "nosniff")
		_, _ = w.Write(data)
		return nil
	}
	return store.Errorf(store.ErrNotFound, "function version has no SBOM %s", manifest)
}
