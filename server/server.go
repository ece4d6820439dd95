// Package server is the krm-catalog HTTP service: the JSON API under /api/v1, the curl-able
// catalog.yaml and definition.yaml endpoints, health, readiness and metrics.
package server

import (
	"context"
	_ "embed"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/krm-catalog/krm-catalog/catalog"
	"github.com/krm-catalog/krm-catalog/identity"
	"github.com/krm-catalog/krm-catalog/internal/docbudget"
	"github.com/krm-catalog/krm-catalog/internal/httpx"
	"github.com/krm-catalog/krm-catalog/store"
)

// Store is what the service needs of the database (store.Store implements it; tests use a fake).
// Add a method here when a handler needs one; the interfaces it embeds belong to their concerns.
type Store interface {
	Ping(ctx context.Context) error
	Authenticate(ctx context.Context, token string) (store.Principal, error)
	AuditRefusal(ctx context.Context, publisher, action, subject string, status int, reason string) error
	PublishCatalog(ctx context.Context, p store.PublishCatalogParams) (store.CatalogVersion, bool, error)
	PublishDefinition(ctx context.Context, p store.PublishDefinitionParams) (store.DefinitionRevision, bool, error)
	ListCatalogs(ctx context.Context) ([]store.CatalogSummary, error)
	GetCatalog(ctx context.Context, name string) (store.CatalogSummary, error)
	ListCatalogVersions(ctx context.Context, name string) ([]store.CatalogVersion, error)
	CatalogContent(ctx context.Context, name, version string) (store.Content, error)
	DefinitionContent(ctx context.Context, group, kind string) (store.Content, error)
	DefinitionDigest(ctx context.Context, group, kind string) (digest string, derived bool, err error)
	FunctionDigest(ctx context.Context, group, kind string) (string, error)
	SearchFunctions(ctx context.Context, q store.SearchQuery) (store.SearchResult, error)
	GetFunction(ctx context.Context, group, kind string) (store.FunctionDetail, error)
	GetFunctionVersion(ctx context.Context, group, kind, version string) ([]store.FunctionVersion, error)
	Resolve(ctx context.Context, apiVersion, kind string, catalogs []string) (store.Resolution, error)
	KeyStore
	OwnerStore
	ProposalStore
}

// DefaultMaxBodyBytes is the default limit on a request body.
const DefaultMaxBodyBytes = 4 << 20

// Config configures a Server.
type Config struct {
	Store     Store
	Validator *catalog.Validator
	Logger    *slog.Logger
	// Registry receives the service's metrics; /metrics serves it.
	Registry *prometheus.Registry
	// MaxBodyBytes limits request bodies; 0 means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// Cache serves catalog.yaml and definition.yaml without querying the store for content it
	// holds. Nil disables caching.
	Cache *ContentCache
	// OCI, when set, receives every new catalog version at OCIPrefix/catalogs/NAME:VERSION.
	OCI       Registry
	OCIPrefix string
	// Signatures reports signature statuses in the API; nil reports none.
	Signatures *Signatures
	// Keyless verifies the keyless proofs of publisher identities; nil refuses them.
	Keyless *identity.Verifier
	// Mount adds routes of other packages (the website) to the router.
	Mount func(r chi.Router)
	// Limiters bound validation, search, publishes and failed authentications (the website
	// shares them); nil means NewLimiters(DefaultLimits).
	Limiters *Limiters
	// Deadlines bound requests by class; zero fields take DefaultDeadlines'.
	Deadlines Deadlines
}

// Server serves the API. Build one with New.
type Server struct {
	store     Store
	validator *catalog.Validator
	logger    *slog.Logger
	maxBody   int64
	cache     *ContentCache
	metrics   *httpMetrics
	router    *chi.Mux
	handler   http.Handler // router behind the deadline
	routes    sync.Pool    // of *chi.Context, which deadline hands the router
	ids       httpx.RequestIDs

	// Cache-Control values of the curl endpoints, built once
	cacheLatest, cacheImmutable []string

	keys           KeyStore
	owners         OwnerStore
	registry       Registry
	registryPrefix string
	signatures     *Signatures
	keyless        *identity.Verifier

	deadlines Deadlines
	limits    *Limiters
	failures  *coalescer
	// reads holds functions (GET /api/v1/functions/GROUP/KIND) and lists of proposals by their
	// digest
	reads *readCache
	// docLimits bound what reading a posted document may cost: those of a body of maxBody
	docLimits docbudget.Limits

	draining atomic.Bool // Drain was called: readiness answers 503, everything else as before
}

//go:embed openapi.yaml
var openAPI []byte

// New builds the service.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil || cfg.Validator == nil {
		return nil, fmt.Errorf("new server: a store and a validator are required")
	}
	s := &Server{store: cfg.Store, validator: cfg.Validator, logger: cfg.Logger, maxBody: cfg.MaxBodyBytes, cache: cfg.Cache,
		keys: cfg.Store, owners: cfg.Store, registry: cfg.OCI, registryPrefix: cfg.OCIPrefix, signatures: cfg.Signatures, keyless: cfg.Keyless,
		cacheLatest: []string{cacheLatest}, cacheImmutable: []string{cacheImmutable}}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	if s.maxBody <= 0 {
		s.maxBody = DefaultMaxBodyBytes
	}
	s.docLimits = docbudget.ForBytes(s.maxBody)
	s.failures = newCoalescer(s.logger, 10*time.Second)
	s.reads = newReadCache(readCacheBytes)
	s.limits = cfg.Limiters
	if s.limits == nil {
		s.limits = NewLimiters(DefaultLimits(runtime.GOMAXPROCS(0)))
	}
	s.deadlines = DefaultDeadlines()
	for _, d := range []struct{ set, def *time.Duration }{{&cfg.Deadlines.Read, &s.deadlines.Read}, {&cfg.Deadlines.Validate, &s.deadlines.Validate}, {&cfg.Deadlines.Write, &s.deadlines.Write}, {&cfg.Deadlines.Body, &s.deadlines.Body}} {
		if *d.set > 0 {
			*d.def = *d.set
		}
	}
	reg := cfg.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m, err := newHTTPMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("new server: %w", err)
	}
	s.metrics = m
	if s.cache != nil {
		if err := s.cache.register(reg); err != nil {
			return nil, fmt.Errorf("new server: %w", err)
		}
	}

	r := chi.NewRouter()
	// deadline first, around the router: its context carries the request's ID too, which observe
	// and recoverPanics log, and the router's routing context
	r.Use(s.observe, s.recoverPanics, httpx.HeadAsGet, s.checkQuery)
	r.Get("/healthz", s.healthz)
	r.Get("/readyz", s.handle(s.readyz))
	r.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))

	r.Get("/catalogs/{name}/catalog.yaml", s.handle(s.latestCatalogYAML))
	r.Get("/catalogs/{name}/{version}/catalog.yaml", s.handle(s.pinnedCatalogYAML))
	r.Get("/functions/{group}/{kind}/definition.yaml", s.handle(s.definitionYAML))

	r.Route("/api/v1", func(r chi.Router) {
		r.Get("/openapi.yaml", s.openAPI)
		r.With(s.authenticate).Put("/catalogs/{name}/versions/{version}", s.handle(s.limitPublisher(s.limits.Publish, s.publishCatalog)))
		r.With(s.authenticate).Put("/definitions/{group}/{kind}", s.handle(s.limitPublisher(s.limits.Publish, s.publishDefinition)))
		r.Get("/catalogs", s.handle(s.listCatalogs))
		r.Get("/catalogs/{name}", s.handle(s.getCatalog))
		r.Get("/catalogs/{name}/versions", s.handle(s.listCatalogVersions))
		r.Get("/catalogs/{name}/versions/{version}", s.handle(s.getCatalogVersion))
		// proposals share the publish budget: each writes the database and the audit log
		r.With(s.authenticate).Post("/catalogs/{name}/proposals", s.handle(s.limitPublisher(s.limits.Publish, s.createProposal)))
		r.Get("/catalogs/{name}/proposals", s.handle(s.limit(s.limits.Search, s.listProposals)))
		r.Get("/catalogs/{name}/proposals/{id}", s.handle(s.getProposal))
		r.With(s.authenticate).Post("/catalogs/{name}/proposals/{id}/approve", s.handle(s.limitPublisher(s.limits.Publish, s.approveProposal)))
		r.With(s.authenticate).Post("/catalogs/{name}/proposals/{id}/reject", s.handle(s.limitPublisher(s.limits.Publish, s.rejectProposal)))
		r.Get("/functions", s.handle(s.limit(s.limits.Search, s.searchFunctions)))
		r.Get("/functions/{group}/{kind}", s.handle(s.getFunction))
		r.Get("/functions/{group}/{kind}/versions/{version}", s.handle(s.getFunctionVersion))
		// an SBOM is read from a registry, up to tens of MiB: limited per client as searches are
		r.Get("/functions/{group}/{kind}/versions/{version}/sboms/{digest}", s.handle(s.limit(s.limits.Search, s.functionSBOM)))
		r.Get("/resolve", s.handle(s.resolve))
		// key changes share the publish budget: each writes the database and the audit log
		r.With(s.authenticate).Put("/publishers/{name}/keys", s.handle(s.limitPublisher(s.limits.Publish, s.addKey)))
		r.Get("/publishers/{name}/keys", s.handle(s.listKeys))
		r.With(s.authenticate).Delete("/publishers/{name}/keys/{fingerprint}", s.handle(s.limitPublisher(s.limits.Publish, s.deleteKey)))
		r.With(s.authenticate).Post("/publishers/{name}/keys/challenges", s.handle(s.limitPublisher(s.limits.Publish, s.issueChallenge)))
		r.With(s.authenticate).Put("/publishers/{name}/identities", s.handle(s.limitPublisher(s.limits.Publish, s.addIdentity)))
		r.Get("/publishers/{name}/identities", s.handle(s.listIdentities))
		r.With(s.authenticate).Delete("/publishers/{name}/identities", s.handle(s.limitPublisher(s.limits.Publish, s.deleteIdentity)))
		r.With(s.authenticate).Post("/publishers/{name}/identities/challenges", s.handle(s.limitPublisher(s.limits.Publish, s.issueChallenge)))
		r.Get("/publishers/{name}/groups", s.handle(s.publisherGroups))
		r.Get("/groups/{group}", s.handle(s.groupOwner))
		r.Post("/validate", s.handle(s.limit(s.limits.Validate, s.validate)))
		r.NotFound(s.handle(func(http.ResponseWriter, *http.Request) error {
			return store.Errorf(store.ErrNotFound, "no such API endpoint")
		}))
		// a path the API has with another method: a JSON error like every other, not chi's empty 405
		r.MethodNotAllowed(s.handle(func(_ http.ResponseWriter, r *http.Request) error {
			return &methodNotAllowed{method: r.Method}
		}))
	})
	if cfg.Mount != nil {
		cfg.Mount(r)
	}
	s.router = r
	s.routes.New = func() any { return chi.NewRouteContext() }
	s.handler = s.deadline(r)
	return s, nil
}

// ServeHTTP serves a request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// checkQuery refuses a query string that net/url cannot read whole: past its limit on parameters
// it drops them all, and a bad escape drops one, so a filtered search would silently answer
// unfiltered. Every route, the website's too, reads its query through url.Values.
func (s *Server) checkQuery(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.RawQuery == "" {
			next.ServeHTTP(w, r) // nothing to read; ParseQuery would allocate an empty map
			return
		}
		if _, err := url.ParseQuery(r.URL.RawQuery); err != nil {
			s.handle(func(http.ResponseWriter, *http.Request) error {
				return &badRequest{message: "the query string cannot be read: " + err.Error()}
			})(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// healthz is liveness: the process is up and serves HTTP. It does not ask the database, so that
// an orchestrator does not restart replicas for a database outage they cannot fix.
func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write([]byte("ok\n"))
}

// readyzTimeout is how long readiness waits for the database.
const readyzTimeout = time.Second

// Drain makes readiness answer 503 from now on while every other request is served as before: a
// replica told to stop is taken out of its load balancer's rotation before it stops listening, so
// no client is sent to a closed port.
func (s *Server) Drain() { s.draining.Store(true) }

// readyz is readiness: the database answered within readyzTimeout, so the replica can serve more
// than its cache, and it is not draining. A failure answers 503 through the error adapter.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Cache-Control", "no-store")
	if s.draining.Load() {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "draining"})
		return nil
	}
	ctx, cancel := context.WithTimeout(r.Context(), readyzTimeout)
	defer cancel()
	if err := s.store.Ping(ctx); err != nil {
		return fmt.Errorf("%w: readiness: %w", store.ErrUnavailable, err)
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	return nil
}

func (s *Server) openAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/yaml")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(openAPI)
}

// observe records every request's metrics and writes one structured log line per request at
// debug level: at load, a line per request at info would be hundreds of megabytes an hour.
func (s *Server) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ww := &httpx.StatusRecorder{ResponseWriter: w}
		start := time.Now()
		next.ServeHTTP(ww, r)
		took := time.Since(start)
		s.metrics.observe(r, ww.Status(), took)
		if !s.logger.Enabled(r.Context(), slog.LevelDebug) {
			return
		}
		s.logger.LogAttrs(r.Context(), slog.LevelDebug, "request",
			slog.String("method", r.Method),
			slog.String("path", r.URL.Path),
			slog.Int("status", ww.Status()),
			slog.Int("bytes", ww.Bytes()),
			slog.Duration("duration", took),
			slog.String("remote", r.RemoteAddr),
			slog.String("request_id", httpx.RequestID(r.Context())),
		)
	})
}

// recoverPanics turns a handler's panic into a 500 and an error log line with the stack, so that
// one bad request does not take the process down. http.ErrAbortHandler is net/http's way to abort
// a response on purpose and is passed on.
func (s *Server) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.logger.LogAttrs(r.Context(), slog.LevelError, "handler panicked",
				slog.String("method", r.Method),
				slog.String("path", r.URL.Path),
				slog.String("request_id", httpx.RequestID(r.Context())),
				slog.Any("panic", v),
				slog.String("stack", string(debug.Stack())),
			)
			w.WriteHeader(http.StatusInternalServerError)
		}()
		next.ServeHTTP(w, r)
	})
}
