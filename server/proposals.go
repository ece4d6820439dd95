package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/krm-catalog/krm-catalog/catalog"
	"github.com/krm-catalog/krm-catalog/store"
)

// ProposalStore is what the proposal endpoints need of the database.
type ProposalStore interface {
	CreateProposal(ctx context.Context, p store.CreateProposalParams) (store.Proposal, bool, error)
	ListProposals(ctx context.Context, catalogName string) ([]store.Proposal, error)
	ProposalsDigest(ctx context.Context, catalogName string) (string, error)
	GetProposal(ctx context.Context, catalogName string, id int64) (store.Proposal, error)
	RejectProposal(ctx context.Context, catalogName string, id int64, publisher, reason string) (store.Proposal, error)
}

// maxRejectBytes bounds the body of a rejection: a JSON object with a reason.
const maxRejectBytes = 4 << 10

func proposalPath(name string, id int64) string {
	return "/api/v1/catalogs/" + url.PathEscape(name) + "/proposals/" + strconv.FormatInt(id, 10)
}

// createProposal stores a KRMFunctionDefinition of a function its proposer owns as a proposed
// entry of a catalog: 201 with the proposal (its id), or 200 with the open proposal of the same
// document.
func (s *Server) createProposal(w http.ResponseWriter, r *http.Request) error {
	name := chi.URLParam(r, "name")
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	if len(body) > store.MaxProposalBytes {
		return &http.MaxBytesError{Limit: store.MaxProposalBytes}
	}
	doc, _, release, err := s.decodeOne(r.Context(), "definition.yaml", body, catalog.KindDefinition)
	if err != nil {
		return err
	}
	defer release()
	def, err := catalog.DecodeDefinition(doc)
	if err != nil {
		return err
	}
	proposer := publisherOf(r.Context())
	if def.Function.Publisher != proposer {
		return store.Errorf(store.ErrForbidden, "the token acts for publisher %q, but the definition's publisher is %q: only a function's publisher proposes it", proposer, def.Function.Publisher)
	}
	p, created, err := s.store.CreateProposal(r.Context(), store.CreateProposalParams{Catalog: name, Proposer: proposer, Content: body, Document: doc, Definition: def})
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
		w.Header().Set("Location", proposalPath(name, p.ID))
	}
	writeJSON(w, status, p)
	return nil
}

func proposalID(r *http.Request) (int64, error) {
	id, err := strconv.ParseInt(chi.URLParam(r, "id"), 10, 64)
	if err != nil || id < 1 {
		return 0, store.Errorf(store.ErrNotFound, "no proposal %q: proposals are numbered from 1", chi.URLParam(r, "id"))
	}
	return id, nil
}

func (s *Server) getProposal(w http.ResponseWriter, r *http.Request) error {
	id, err := proposalID(r)
	if err != nil {
		return err
	}
	p, err := s.store.GetProposal(r.Context(), chi.URLParam(r, "name"), id)
	if err != nil {
		return err
	}
	return serveJSON(w, p)
}

// approveProposal publishes version X of the catalog: its latest version with the proposed entry
// (in place of the entry of the same function, else added), and closes the proposal as approved.
// Only the catalog's publisher approves.
func (s *Server) approveProposal(w http.ResponseWriter, r *http.Request) error {
	name, version := chi.URLParam(r, "name"), r.URL.Query().Get("version")
	if !versionPattern().MatchString(version) {
		return &badRequest{message: fmt.Sprintf("?version= must name the catalog version the approval publishes: 1 to 128 letters, digits, '.', '_' or '-', not %q", version)}
	}
	id, err := proposalID(r)
	if err != nil {
		return err
	}
	ctx := r.Context()
	p, err := s.store.GetProposal(ctx, name, id)
	if err != nil {
		return err
	}
	c, err := s.store.GetCatalog(ctx, name)
	if err != nil {
		return err
	}
	publisher := publisherOf(ctx)
	if c.Publisher != publisher {
		return store.Errorf(store.ErrForbidden, "only catalog %q's publisher %q decides its proposals; the token acts for %q", name, c.Publisher, publisher)
	}
	latest, err := s.store.CatalogContent(ctx, name, "")
	if err != nil {
		return err
	}
	body, err := catalog.WithFunction(latest.Bytes, []byte(p.Definition))
	if err != nil {
		return err
	}
	doc, cat, warnings, release, err := s.decodeCatalog(ctx, name, body)
	if err != nil {
		return err
	}
	defer release()
	cv, created, err := s.store.PublishCatalog(ctx, store.PublishCatalogParams{
		Name: name, Version: version, Publisher: publisher, Content: body, Document: doc, Catalog: cat,
		Push: s.pushCatalog(name, version, body), Proposal: id,
	})
	if err != nil {
		return err
	}
	writePublished(w, "/catalogs/"+name+"/"+version+"/catalog.yaml", publishResponse{Created: created, Catalog: &cv, Warnings: warningsOf(warnings)})
	return nil
}

// rejectRequest is the body of a rejection.
type rejectRequest struct {
	Reason string `json:"reason"`
}

func (s *Server) rejectProposal(w http.ResponseWriter, r *http.Request) error {
	id, err := proposalID(r)
	if err != nil {
		return err
	}
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	if len(body) > maxRejectBytes {
		return &http.MaxBytesError{Limit: maxRejectBytes}
	}
	var req rejectRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return &badRequest{message: "the body must be a JSON object {\"reason\": \"...\"}: " + err.Error()}
	}
	p, err := s.store.RejectProposal(r.Context(), chi.URLParam(r, "name"), id, publisherOf(r.Context()), req.Reason)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, p)
	return nil
}
