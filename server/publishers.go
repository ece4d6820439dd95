package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/krm-catalog/krm-catalog/identity"
	"github.com/krm-catalog/krm-catalog/store"
)

// OwnerStore is what the service needs to say who owns groups.
type OwnerStore interface {
	GetGroupOwner(ctx context.Context, group string) (store.GroupOwner, error)
	ListGrants(ctx context.Context, publisher string) ([]store.Grant, error)
}

// maxProofBytes bounds a posted proof: a PEM public key and a signature are a few hundred bytes.
const maxProofBytes = 16 << 10

// challengeResponse is a challenge with the exact bytes to sign, for clients that do not build
// the payload themselves (krm-catalog's own client does, and checks it).
type challengeResponse struct {
	identity.Challenge
	Payload string `json:"payload"`
}

func (s *Server) issueChallenge(w http.ResponseWriter, r *http.Request) error {
	name := chi.URLParam(r, "name")
	if err := s.ownPublisher(r, name); err != nil {
		return err
	}
	c, err := s.keys.IssueChallenge(r.Context(), name, identity.ChallengeTTL)
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusCreated, challengeResponse{Challenge: c, Payload: string(c.Payload())})
	return nil
}

// bareKeyRefused is the answer to a PEM public key posted as it is, as this endpoint once took.
const bareKeyRefused = "a bare public key is refused: registering a key needs proof that you hold its private half. " +
	"POST /api/v1/publishers/{name}/keys/challenges, sign the challenge's payload with the key, and PUT " +
	`{"publicKey": PEM, "nonce": ..., "signature": base64} here; krm-catalog publisher add-key --key cosign.key does it`

func (s *Server) addKey(w http.ResponseWriter, r *http.Request) error {
	name := chi.URLParam(r, "name")
	if err := s.ownPublisher(r, name); err != nil {
		return err
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxProofBytes))
	if err != nil {
		return err
	}
	if strings.HasPrefix(strings.TrimSpace(string(body)), "-----BEGIN") {
		return &badRequest{message: bareKeyRefused}
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, _ := mime.ParseMediaType(ct); mt != "application/json" {
			return &badRequest{message: fmt.Sprintf("the body must be application/json, not %s: %s", mt, bareKeyRefused)}
		}
	}
	var proof identity.Proof
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&proof); err != nil {
		return &badRequest{message: "the body must be a JSON proof {publicKey, nonce, signature}: " + err.Error()}
	}
	if proof.PublicKey == "" || proof.Nonce == "" || proof.Signature == "" {
		return &badRequest{message: "publicKey, nonce and signature are all required: " + bareKeyRefused}
	}
	k, created, err := s.keys.AddKey(r.Context(), name, proof)
	if err != nil {
		return err
	}
	writeRegistered(w, created, "key", k)
	return nil
}

func (s *Server) listKeys(w http.ResponseWriter, r *http.Request) error {
	history, err := s.keys.KeyHistory(r.Context(), chi.URLParam(r, "name"))
	if err != nil {
		return err
	}
	active, removed := splitRemoved(history, func(k store.Key) bool { return k.RemovedAt != nil })
	return serveJSON(w, map[string]any{"keys": active, "removed": removed})
}

// publisherGroups is what GET /api/v1/publishers/{name}/groups answers.
type publisherGroups struct {
	Publisher string `json:"publisher"`
	// ByName is the group the publisher's name owns, with the groups under it; "" when the name is
	// no DNS name. A grant of a group under it to another publisher takes that group out.
	ByName string        `json:"byName,omitempty"`
	Grants []store.Grant `json:"grants"`
}

func (s *Server) publisherGroups(w http.ResponseWriter, r *http.Request) error {
	name := chi.URLParam(r, "name")
	grants, err := s.owners.ListGrants(r.Context(), name)
	if err != nil {
		return err
	}
	if grants == nil {
		grants = []store.Grant{}
	}
	out := publisherGroups{Publisher: name, Grants: grants}
	if identity.ValidateName(name) == nil {
		out.ByName = name
	}
	return serveJSON(w, out)
}

func (s *Server) groupOwner(w http.ResponseWriter, r *http.Request) error {
	o, err := s.owners.GetGroupOwner(r.Context(), chi.URLParam(r, "group"))
	if err != nil {
		return err
	}
	return serveJSON(w, o)
}
