package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/krm-catalog/krm-catalog/catalog"
	"github.com/krm-catalog/krm-catalog/internal/docbudget"
	"github.com/krm-catalog/krm-catalog/internal/lazyre"
	"github.com/krm-catalog/krm-catalog/store"
)

// versionPattern bounds catalog version names: they appear in URLs and OCI tags.
var versionPattern = lazyre.New(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// Costs of reading a document, for the decode budget (Limits.DecodeMemory): measured peaks of
// validating documents at the node limit, dense and sparse (docs/security.md).
const (
	decodeBytesPerNode = 300 // the YAML node, its value, and their part of the checks
	decodeBytesPerByte = 16  // the text of strings, held by the node, the value and the findings
)

// decodeCost is the memory that reading a document of this shape and size takes, at most.
func decodeCost(shape docbudget.Shape, size int) int64 {
	nodes := int64(min(shape.Nodes, 1<<40))
	return nodes*decodeBytesPerNode + int64(size)*decodeBytesPerByte
}

// validateBody validates a posted document within what the service lets a request cost: the
// limit on its values (413 past it, before it is parsed where its scan shows it), on its nesting
// and its expansion through aliases (an invalid document, whose finding names the limit), its
// share of the decode memory (waiting up to wait for it, 429 past that), and the request's
// deadline (503 when it passes, the work stopped). The caller calls release once it is done with
// the documents.
func (s *Server) validateBody(ctx context.Context, name string, body []byte, wait time.Duration) (docs []*catalog.Document, findings catalog.Findings, release func(), err error) {
	shape := docbudget.Scan(body)
	release, err = s.limits.Decode.Take(ctx, decodeCost(shape, len(body)), wait)
	if err != nil {
		return nil, nil, nil, err
	}
	docs, findings, err = s.validator.ValidateContext(ctx, name, body, catalog.Options{Limits: s.docLimits, Shape: &shape})
	var exceeded *docbudget.Error
	switch {
	case errors.As(err, &exceeded) && exceeded.Limit != "nodes":
		// too deep, or an alias bomb: an invalid document, as it always was (its finding says
		// which limit)
		return nil, findings, release, nil
	case err != nil && exceeded != nil:
		release()
		return nil, nil, nil, &tooCostly{message: err.Error(), findings: findings}
	case err != nil:
		release()
		return nil, nil, nil, &unfinished{err: err}
	}
	return docs, findings, release, nil
}

// decodeOne validates a posted document and returns it, or a 422 with every finding (validateBody
// says what else it may answer). The caller calls release once it is done with the document.
func (s *Server) decodeOne(ctx context.Context, name string, body []byte, kinds ...string) (*catalog.Document, catalog.Findings, func(), error) {
	docs, findings, release, err := s.validateBody(ctx, name, body, s.limits.Publish.MaxWait())
	if err != nil {
		return nil, nil, nil, err
	}
	fail := func(err error) (*catalog.Document, catalog.Findings, func(), error) {
		release()
		return nil, nil, nil, err
	}
	if findings.HasErrors() {
		return fail(&invalidDocument{message: fmt.Sprintf("the document is not valid: %s", catalog.Summarize(1, findings)), findings: findings})
	}
	if len(docs) != 1 {
		return fail(&invalidDocument{message: fmt.Sprintf("expected exactly one document, found %d", len(docs))})
	}
	for _, k := range kinds {
		if docs[0].Kind == k {
			return docs[0], findings, release, nil
		}
	}
	return fail(&invalidDocument{
		message:  fmt.Sprintf("expected a %s, found a %s", strings.Join(kinds, " or "), docs[0].Kind),
		findings: catalog.Findings{{Severity: catalog.SeverityError, Pointer: "/kind", Message: "kind must be " + strings.Join(kinds, " or ")}},
	})
}

// publishResponse is the body of a successful publish.
type publishResponse struct {
	Created  bool                      `json:"created"`
	Warnings []errorDetail             `json:"warnings,omitempty"`
	Catalog  *store.CatalogVersion     `json:"catalog,omitempty"`
	Def      *store.DefinitionRevision `json:"definition,omitempty"`
}

func (s *Server) publishCatalog(w http.ResponseWriter, r *http.Request) error {
	name, version := chi.URLParam(r, "name"), chi.URLParam(r, "version")
	if !versionPattern().MatchString(version) {
		return &badRequest{message: fmt.Sprintf("version %q must be 1 to 128 letters, digits, '.', '_' or '-', starting with a letter or digit", version)}
	}
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	doc, cat, warnings, release, err := s.decodeCatalog(r.Context(), name, body)
	if err != nil {
		return err
	}
	defer release()
	// which entries the publisher may list (its own, or others' exactly as they published them) is
	// the store's to decide, against what is published
	cv, created, err := s.store.PublishCatalog(r.Context(), store.PublishCatalogParams{
		Name: name, Version: version, Publisher: publisherOf(r.Context()), Content: body, Document: doc, Catalog: cat,
		Push: s.pushCatalog(name, version, body),
	})
	if err != nil {
		return err
	}
	writePublished(w, "/catalogs/"+name+"/"+version+"/catalog.yaml", publishResponse{Created: created, Catalog: &cv, Warnings: warningsOf(warnings)})
	return nil
}

// decodeCatalog validates a catalog document whose name the URL gives. The caller calls release
// once it is done with it.
func (s *Server) decodeCatalog(ctx context.Context, name string, body []byte) (*catalog.Document, *catalog.Catalog, catalog.Findings, func(), error) {
	doc, warnings, release, err := s.decodeOne(ctx, "catalog.yaml", body, catalog.KindCatalog, catalog.KindCatalogShort)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	cat, err := catalog.DecodeCatalog(doc)
	if err != nil {
		release()
		return nil, nil, nil, nil, err
	}
	if cat.Name != name {
		release()
		line, col := doc.Position("/metadata/name")
		return nil, nil, nil, nil, &invalidDocument{
			message:  fmt.Sprintf("the URL names catalog %q but metadata.name is %q", name, cat.Name),
			findings: catalog.Findings{{Severity: catalog.SeverityError, Pointer: "/metadata/name", Line: line, Column: col, Message: "must equal the catalog name in the URL, " + strconv.Quote(name)}},
		}
	}
	return doc, cat, warnings, release, nil
}

// writePublished answers a publish: 201 with the new document's location, or 200 for a no-op.
func writePublished(w http.ResponseWriter, location string, res publishResponse) {
	status := http.StatusOK
	if res.Created {
		status = http.StatusCreated
		w.Header().Set("Location", location)
	}
	writeJSON(w, status, res)
}

func (s *Server) publishDefinition(w http.ResponseWriter, r *http.Request) error {
	group, kind := chi.URLParam(r, "group"), chi.URLParam(r, "kind")
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	doc, warnings, release, err := s.decodeOne(r.Context(), "definition.yaml", body, catalog.KindDefinition)
	if err != nil {
		return err
	}
	defer release()
	def, err := catalog.DecodeDefinition(doc)
	if err != nil {
		return err
	}
	if def.Function.Group != group || def.Function.Kind != kind {
		return &invalidDocument{message: fmt.Sprintf("the URL names %s/%s but the document defines %s", group, kind, def.Function.ID())}
	}
	publisher := publisherOf(r.Context())
	if def.Function.Publisher != publisher {
		return store.Errorf(store.ErrForbidden, "the token acts for publisher %q, but the definition's publisher is %q", publisher, def.Function.Publisher)
	}
	rev, created, err := s.store.PublishDefinition(r.Context(), store.PublishDefinitionParams{Publisher: publisher, Content: body, Document: doc, Definition: def})
	if err != nil {
		return err
	}
	writePublished(w, "/functions/"+group+"/"+kind+"/definition.yaml", publishResponse{Created: created, Def: &rev, Warnings: warningsOf(warnings)})
	return nil
}

func warningsOf(fs catalog.Findings) []errorDetail {
	if len(fs) == 0 {
		return nil
	}
	return details(fs)
}

// serveJSON writes a GET response of the JSON API; clients revalidate rather than trust a copy.
func serveJSON(w http.ResponseWriter, v any) error {
	w.Header().Set("Cache-Control", "no-cache")
	writeJSON(w, http.StatusOK, v)
	return nil
}

func (s *Server) listCatalogs(w http.ResponseWriter, r *http.Request) error {
	cs, err := s.store.ListCatalogs(r.Context())
	if err != nil {
		return err
	}
	if cs == nil {
		cs = []store.CatalogSummary{}
	}
	s.signatures.annotateLatest(r.Context(), cs)
	return serveJSON(w, map[string]any{"catalogs": cs})
}

func (s *Server) getCatalog(w http.ResponseWriter, r *http.Request) error {
	c, err := s.store.GetCatalog(r.Context(), chi.URLParam(r, "name"))
	if err != nil {
		return err
	}
	cs := []store.CatalogSummary{c}
	s.signatures.annotateLatest(r.Context(), cs)
	return serveJSON(w, cs[0])
}

func (s *Server) listCatalogVersions(w http.ResponseWriter, r *http.Request) error {
	vs, err := s.store.ListCatalogVersions(r.Context(), chi.URLParam(r, "name"))
	if err != nil {
		return err
	}
	s.signatures.AnnotateCatalogVersions(r.Context(), vs)
	return serveJSON(w, map[string]any{"versions": vs})
}

// getCatalogVersion serves one version of a catalog as the list of its versions has it.
func (s *Server) getCatalogVersion(w http.ResponseWriter, r *http.Request) error {
	name, version := chi.URLParam(r, "name"), chi.URLParam(r, "version")
	vs, err := s.store.ListCatalogVersions(r.Context(), name)
	if err != nil {
		return err
	}
	for i := range vs {
		if vs[i].Version == version {
			one := vs[i : i+1]
			s.signatures.AnnotateCatalogVersions(r.Context(), one)
			return serveJSON(w, one[0])
		}
	}
	return store.Errorf(store.ErrNotFound, "catalog %q has no version %q", name, version)
}

func (s *Server) searchFunctions(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	limit := 0
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > store.MaxSearchLimit {
			return &badRequest{message: fmt.Sprintf("limit must be a number from 1 to %d", store.MaxSearchLimit)}
		}
		limit = n
	}
	runtime := q.Get("runtime")
	switch runtime {
	case "", "container", "exec", "starlark":
	default:
		return &badRequest{message: "runtime must be container, exec or starlark"}
	}
	sq := store.SearchQuery{Text: q.Get("q"), Tags: q["tag"], Publisher: q.Get("publisher"), Runtime: runtime, Limit: limit, PageToken: q.Get("page_token")}
	if err := sq.Check(); err != nil {
		return err
	}
	res, err := s.store.SearchFunctions(r.Context(), sq)
	if err != nil {
		return err
	}
	return serveJSON(w, res)
}

func (s *Server) getFunctionVersion(w http.ResponseWriter, r *http.Request) error {
	fvs, err := s.store.GetFunctionVersion(r.Context(), chi.URLParam(r, "group"), chi.URLParam(r, "kind"), chi.URLParam(r, "version"))
	if err != nil {
		return err
	}
	s.signatures.AnnotateFunctionVersions(r.Context(), fvs)
	return serveJSON(w, map[string]any{"entries": fvs})
}

func (s *Server) resolve(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	apiVersion, kind := q.Get("apiVersion"), q.Get("kind")
	if apiVersion == "" || kind == "" {
		return &badRequest{message: "apiVersion and kind are required, e.g. ?apiVersion=fn.example.com/v1&kind=SetNamespace"}
	}
	res, err := s.store.Resolve(r.Context(), apiVersion, kind, q["catalog"])
	if err != nil {
		return err
	}
	fvs := []store.FunctionVersion{res.Function}
	s.signatures.AnnotateFunctionVersions(r.Context(), fvs)
	res.Function = fvs[0]
	return serveJSON(w, res)
}

// validateResponse is the body of POST /api/v1/validate.
type validateResponse struct {
	Valid    bool             `json:"valid"`
	Findings catalog.Findings `json:"findings"`
	Summary  catalog.Summary  `json:"summary"`
}

func (s *Server) validate(w http.ResponseWriter, r *http.Request) error {
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	name := r.URL.Query().Get("filename")
	if name == "" {
		name = "document"
	}
	_, findings, release, err := s.validateBody(r.Context(), name, body, s.limits.Validate.MaxWait())
	if err != nil {
		return err
	}
	defer release()
	if strict, _ := strconv.ParseBool(r.URL.Query().Get("strict")); strict {
		findings = findings.Strict()
	}
	if findings == nil {
		findings = catalog.Findings{}
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, validateResponse{Valid: !findings.HasErrors(), Findings: findings, Summary: catalog.Summarize(1, findings)})
	return nil
}
