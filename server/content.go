package server

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/go-chi/chi/v5"

	"github.com/krm-catalog/krm-catalog/catalog"
	"github.com/krm-catalog/krm-catalog/internal/httpx"
	"github.com/krm-catalog/krm-catalog/store"
)

// Cache lifetimes of the curl endpoints: a pinned version never changes; "latest" may at any publish.
const (
	cacheImmutable = "public, max-age=31536000, immutable"
	cacheLatest    = "public, max-age=60"
)

// representation is one encoding of a document, with the headers that identify it. The header
// values are built once, as the slices net/http sends, so that serving allocates nothing for them
// (net/http never modifies header values).
type representation struct {
	body          []byte
	etag          string // strong: the sha256 of the body
	etagHeader    []string
	contentDigest []string // RFC 9530 Content-Digest
	contentLength []string
	contentType   []string
	// browserType is the Content-Type for a browser that asked for a page: YAML as text/plain,
	// which it shows instead of downloading; nil when the type is shown as it is (JSON)
	browserType   []string
	vary, noSniff []string
}

func newRepresentation(body []byte, contentType string) representation {
	sum := sha256.Sum256(body)
	etag := fmt.Sprintf(`"sha256:%x"`, sum)
	return representation{
		body:          body,
		etag:          etag,
		etagHeader:    []string{etag},
		contentDigest: []string{"sha-256=:" + base64.StdEncoding.EncodeToString(sum[:]) + ":"},
		contentLength: []string{strconv.Itoa(len(body))},
		contentType:   []string{contentType},
		vary:          []string{"Accept"},
		noSniff:       []string{"nosniff"},
	}
}

// preparedContent is a stored document ready to serve: its bytes as published, and a JSON rendering
// made on first request.
type preparedContent struct {
	name, version string
	derived       bool
	yaml          representation
	// the X-Catalog-Version and Content-Location values of a catalog version
	versionHeader, locationHeader []string

	jsonOnce sync.Once
	json     representation
	jsonErr  error
}

func prepare(c store.Content) *preparedContent {
	p := &preparedContent{name: c.Name, version: c.Version, derived: c.Derived, yaml: newRepresentation(c.Bytes, "application/yaml")}
	p.yaml.browserType = []string{"text/plain; charset=utf-8"}
	if c.Version != "" {
		p.versionHeader = []string{c.Version}
		p.locationHeader = []string{"/catalogs/" + c.Name + "/" + c.Version + "/catalog.yaml"}
	}
	return p
}

func (p *preparedContent) size() int64 { return int64(2*len(p.yaml.body) + 256) }

func (p *preparedContent) jsonRepresentation() (representation, error) {
	p.jsonOnce.Do(func() {
		docs, fs := catalog.Decode(p.name, p.yaml.body)
		if fs.HasErrors() || len(docs) != 1 {
			p.jsonErr = fmt.Errorf("render %s as JSON: the stored document does not decode", p.name)
			return
		}
		body, err := json.Marshal(docs[0].Value)
		if err != nil {
			p.jsonErr = fmt.Errorf("render %s as JSON: %w", p.name, err)
			return
		}
		p.json = newRepresentation(append(body, '\n'), "application/json")
	})
	return p.json, p.jsonErr
}

func (s *Server) latestCatalogYAML(w http.ResponseWriter, r *http.Request) error {
	name := chi.URLParam(r, "name")
	c, err := s.content("latest:", "catalog:", func() (store.Content, error) {
		return s.store.CatalogContent(r.Context(), name, "")
	}, name)
	if err != nil {
		return err
	}
	h := w.Header()
	h["Content-Location"] = c.locationHeader
	h["X-Catalog-Version"] = c.versionHeader
	return s.serveContent(w, r, c, s.cacheLatest)
}

func (s *Server) pinnedCatalogYAML(w http.ResponseWriter, r *http.Request) error {
	name, version := chi.URLParam(r, "name"), chi.URLParam(r, "version")
	c, err := s.content("pinned:", "", func() (store.Content, error) {
		return s.store.CatalogContent(r.Context(), name, version)
	}, name, "@", version)
	if err != nil {
		return err
	}
	w.Header()["X-Catalog-Version"] = c.versionHeader
	return s.serveContent(w, r, c, s.cacheImmutable)
}

// definitionYAML serves a function's definition: its latest published definition, cached until a
// publish of the function says otherwise; else the one generated from the catalogs that list it,
// cached by the digest of what it is generated from (which a publish of any of them changes), so
// that it is generated once a change and never past store.MaxDerivedBytes.
func (s *Server) definitionYAML(w http.ResponseWriter, r *http.Request) error {
	group, kind := chi.URLParam(r, "group"), chi.URLParam(r, "kind")
	read := func() (store.Content, error) { return s.store.DefinitionContent(r.Context(), group, kind) }
	c := s.cached("definition:", group, "/", kind)
	if c == nil {
		digest, derived, err := s.store.DefinitionDigest(r.Context(), group, kind)
		switch {
		case err != nil:
			return err
		case derived:
			c, err = s.content("derived:", "", read, group, "/", kind, "@", digest)
		default:
			c, err = s.content("definition:", "function:", read, group, "/", kind)
		}
		if err != nil {
			return err
		}
	}
	if c.derived {
		w.Header().Set("X-Definition-Derived", "generated from the catalogs that list this function")
	}
	return s.serveContent(w, r, c, s.cacheLatest)
}

// cached returns the content cached under the concatenation of key, or nil.
func (s *Server) cached(key ...string) *preparedContent {
	if s.cache == nil {
		return nil
	}
	var buf [256]byte
	k := buf[:0]
	for _, part := range key {
		k = append(k, part...)
	}
	return s.cache.get(k)
}

// content returns prepared content from the cache, or reads it from the store and caches it. The
// content's id is the concatenation of id; its cache key is kind+id, and the subject whose
// publishes change it subjectKind+id ("" for immutable content). The key is built on the stack, so
// that a cache hit, the hot path of the curl endpoints, allocates nothing for it.
func (s *Server) content(kind, subjectKind string, read func() (store.Content, error), id ...string) (*preparedContent, error) {
	if s.cache == nil {
		c, err := read()
		if err != nil {
			return nil, err
		}
		return prepare(c), nil
	}
	var buf [256]byte
	key := append(buf[:0], kind...)
	for _, part := range id {
		key = append(key, part...)
	}
	if c := s.cache.get(key); c != nil {
		return c, nil
	}
	subject := ""
	if subjectKind != "" {
		subject = subjectKind + string(key[len(kind):])
	}
	t := s.cache.ticket(subject)
	c, err := read()
	if err != nil {
		return nil, err
	}
	p := prepare(c)
	s.cache.put(string(key), t, p)
	return p, nil
}

// serveContent writes a document in the representation the client accepts, answering
// If-None-Match with 304; a large one is paced (paceDownload).
func (s *Server) serveContent(w http.ResponseWriter, r *http.Request, c *preparedContent, cacheControl []string) error {
	rep := c.yaml
	if wantsJSON(r.Header.Get("Accept")) {
		var err error
		if rep, err = c.jsonRepresentation(); err != nil {
			return err
		}
	}
	h := w.Header()
	h["Etag"] = rep.etagHeader
	h["Cache-Control"] = cacheControl
	h["Vary"] = rep.vary
	if httpx.ETagMatches(r.Header.Get("If-None-Match"), rep.etag) {
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	if err := s.paceDownload(r, len(rep.body)); err != nil {
		return err
	}
	h["Content-Type"] = rep.contentType
	if rep.browserType != nil && wantsPage(r.Header.Get("Accept")) {
		h["Content-Type"] = rep.browserType
	}
	h["Content-Digest"] = rep.contentDigest
	h["Content-Length"] = rep.contentLength
	h["X-Content-Type-Options"] = rep.noSniff
	_, _ = w.Write(rep.body) // a failed write means the client left
	return nil
}

// paceDownload spends, for an answer of size bytes, a request of its client's Downloads budget
// for every downloadUnit: answers from the cache cost a copy each, and eight clients reading a
// document of megabytes as fast as they can would take every core.
func (s *Server) paceDownload(r *http.Request, size int) error {
	if size < downloadUnit {
		return nil
	}
	return s.limits.Downloads.PaceN(r.Context(), httpx.ClientIP(r), (size+downloadUnit-1)/downloadUnit)
}

// wantsPage reports whether an Accept header prefers HTML to YAML: a browser following a link,
// which would download application/yaml rather than show it.
func wantsPage(accept string) bool {
	return strings.TrimSpace(accept) != "" && httpx.Quality(accept, "text/html") > httpx.Quality(accept, "application/yaml")
}

// wantsJSON reports whether an Accept header prefers JSON to YAML, by q-value; YAML wins a tie,
// and an empty header. YAML is served as application/yaml; the older YAML types count only where
// the header names them.
func wantsJSON(accept string) bool {
	if strings.TrimSpace(accept) == "" {
		return false
	}
	yaml := httpx.Quality(accept, "application/yaml")
	lower := strings.ToLower(accept)
	for _, t := range []string{"application/x-yaml", "text/yaml", "text/x-yaml"} {
		if strings.Contains(lower, t) {
			yaml = max(yaml, httpx.Quality(accept, t))
		}
	}
	return httpx.Quality(accept, "application/json") > yaml
}
