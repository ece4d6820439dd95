// Package web is the browsable website of krm-catalog: server-rendered html/template pages and
// embedded static assets, served by the same process as the API. Every page works without
// JavaScript; the one script only adds copy buttons and search as you type. No page makes the
// browser request anything from another origin.
package web

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/krm-catalog/krm-catalog/internal/httpx"
	"github.com/krm-catalog/krm-catalog/store"
)

// Store is what the website reads. *store.Store implements it.
type Store interface {
	SearchFunctions(ctx context.Context, q store.SearchQuery) (store.SearchResult, error)
	GetFunction(ctx context.Context, group, kind string) (store.FunctionDetail, error)
	ListCatalogs(ctx context.Context) ([]store.CatalogSummary, error)
	GetCatalog(ctx context.Context, name string) (store.CatalogSummary, error)
	ListCatalogVersions(ctx context.Context, name string) ([]store.CatalogVersion, error)
	CatalogContent(ctx context.Context, name, version string) (store.Content, error)
	GetPublisher(ctx context.Context, name string) (store.Publisher, error)
	PublisherFunctions(ctx context.Context, name string, limit int) ([]store.FunctionSummary, error)
	PublisherCatalogs(ctx context.Context, name string) ([]store.CatalogSummary, error)
	ListKeys(ctx context.Context, publisher string) ([]store.Key, error)
	ListIdentities(ctx context.Context, publisher string) ([]store.Identity, error)
	GetGroupOwner(ctx context.Context, group string) (store.GroupOwner, error)
	ListGrants(ctx context.Context, publisher string) ([]store.Grant, error)
	ListProposals(ctx context.Context, catalogName string) ([]store.Proposal, error)
}

// SignatureAnnotator fills in the Signature of function and catalog versions (verified, signed or
// unsigned) the way the service's JSON API does: the store records signature checks, but the
// status comes from the component that reads signatures from registries. Without one, the pages
// show a status only when the data the store returns carries it; they never guess one.
type SignatureAnnotator interface {
	AnnotateFunctionVersions(ctx context.Context, fvs []store.FunctionVersion)
	AnnotateCatalogVersions(ctx context.Context, vs []store.CatalogVersion)
}

// Config configures a Site.
type Config struct {
	Store  Store
	Logger *slog.Logger
	// Signatures is optional; see SignatureAnnotator.
	Signatures SignatureAnnotator
	// Search bounds searches and Pages the other pages that read the database, per client address;
	// the service passes the limiters its API uses, so a client has one budget either way. Nil
	// limiters bound nothing.
	Search, Pages *httpx.Limiter
	// CatalogCacheBytes bounds the catalog pages' cache; 0 means DefaultCatalogCacheBytes.
	CatalogCacheBytes int
}

// Site serves the website. Build one with New and add its routes with Mount.
type Site struct {
	store      Store
	logger     *slog.Logger
	signatures SignatureAnnotator
	assets     *assets
	pages      *pages
	catalogs   *catalogCache

	searchLimit, pageLimit *httpx.Limiter
}

// New parses the templates and fingerprints the assets, once.
func New(cfg Config) (*Site, error) {
	if cfg.Store == nil {
		return nil, fmt.Errorf("new site: a store is required")
	}
	s := &Site{store: cfg.Store, logger: cfg.Logger, signatures: cfg.Signatures, searchLimit: cfg.Search, pageLimit: cfg.Pages}
	if cfg.CatalogCacheBytes <= 0 {
		cfg.CatalogCacheBytes = DefaultCatalogCacheBytes
	}
	s.catalogs = newCatalogCache(cfg.CatalogCacheBytes)
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	var err error
	if s.assets, err = newAssets(); err != nil {
		return nil, fmt.Errorf("new site: %w", err)
	}
	if s.pages, err = parsePages(s.assets); err != nil {
		return nil, fmt.Errorf("new site: %w", err)
	}
	return s, nil
}

// Mount adds the website's routes to r, and makes its 404 page the router's.
func (s *Site) Mount(r chi.Router) {
	r.Group(func(r chi.Router) {
		r.Use(securityHeaders)
		r.Get("/", s.handle(limit(s.searchLimit, s.home)))
		r.Get("/functions/{group}/{kind}", s.handle(limit(s.pageLimit, s.function)))
		r.Get("/catalogs", s.handle(limit(s.pageLimit, s.catalogList)))
		r.Get("/catalogs/{name}", s.handle(limit(s.pageLimit, s.catalog)))
		r.Get("/publishers/{name}", s.handle(limit(s.pageLimit, s.publisher)))
		r.Get("/static/{file}", s.assets.serve)
	})
	r.NotFound(securityHeaders(s.handle(s.notFound)).ServeHTTP)
}

// limit runs h within l's bounds for the client's address.
func limit(l *httpx.Limiter, h handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		release, err := l.Admit(r.Context(), httpx.ClientIP(r))
		if err != nil {
			return err
		}
		defer release()
		return h(w, r)
	}
}
