package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/krm-catalog/krm-catalog/catalog"
	"github.com/krm-catalog/krm-catalog/catalog/catalogtest"
	"github.com/krm-catalog/krm-catalog/server"
	"github.com/krm-catalog/krm-catalog/store"
	"github.com/krm-catalog/krm-catalog/store/storetest"
	"github.com/krm-catalog/krm-catalog/web"
)

// service is one running replica of the service.
type service struct {
	url   string
	store *store.Store
	cache *server.ContentCache
}

// startService starts a replica on databaseURL the way `serve` assembles it (the website mounted,
// the content cache following publishes, every request logged as JSON, here to io.Discard so the
// formatting costs what it costs in production), on 127.0.0.1, with a 1 MiB body limit.
func startService(tb testing.TB, databaseURL string) *service {
	tb.Helper()
	return startServiceWith(tb, databaseURL, nil)
}

// startServiceWith is startService with the server's configuration changed by set first.
func startServiceWith(tb testing.TB, databaseURL string, set func(*server.Config)) *service {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	st, err := store.Open(ctx, databaseURL)
	if err != nil {
		tb.Fatal(err)
	}
	v, err := catalog.NewValidator()
	if err != nil {
		tb.Fatal(err)
	}
	logger := slog.New(slog.NewJSONHandler(io.Discard, nil))
	site, err := web.New(web.Config{Store: st, Logger: logger})
	if err != nil {
		tb.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(server.NewPoolCollector(st))
	cache := server.NewContentCache(64 << 20)
	cfg := server.Config{Store: st, Validator: v, Registry: reg, Cache: cache, Logger: logger,
		MaxBodyBytes: 1 << 20, Mount: site.Mount}
	if set != nil {
		set(&cfg)
	}
	srv, err := server.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		cache.Listen(ctx, st, slogDiscard())
	}()
	hs := httptest.NewServer(srv)
	tb.Cleanup(func() {
		hs.Close()
		cancel()
		<-done
		st.Close()
	})
	waitFor(tb, 5*time.Second, "the cache listener to connect", cache.Live)
	return &service{url: hs.URL, store: st, cache: cache}
}

func waitFor(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", limit, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("response %d is not JSON: %v\n%s", r.status, err, r.body)
	}
	return m
}

func do(t *testing.T, method, url, token string, body []byte, header ...string) response {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: data}
}

func token(t *testing.T, s *service, publisher string) string {
	t.Helper()
	tok, _, err := s.store.CreateToken(context.Background(), publisher, "e2e")
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func exampleCatalog(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile("../catalog/testdata/reference/catalog.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestPublishReadSearchResolve(t *testing.T) {
	t.Parallel()
	s := startService(t, storetest.NewDatabase(t))
	tok := token(t, s, "example.com")
	cat := exampleCatalog(t)

	r := do(t, http.MethodPut, s.url+"/api/v1/catalogs/example-functions/versions/1.0.0", tok, cat)
	if r.status != http.StatusCreated || r.header.Get("Location") != "/catalogs/example-functions/1.0.0/catalog.yaml" {
		t.Fatalf("publish: %d %s", r.status, r.body)
	}
	if r = do(t, http.MethodPut, s.url+"/api/v1/catalogs/example-functions/versions/1.0.0", tok, cat); r.status != http.StatusOK {
		t.Errorf("publishing the same bytes again: %d, want 200", r.status)
	}

	// the curl endpoints serve the bytes as published
	latest := do(t, http.MethodGet, s.url+"/catalogs/example-functions/catalog.yaml", "", nil)
	if latest.status != http.StatusOK || !bytes.Equal(latest.body, cat) {
		t.Fatalf("catalog.yaml: %d, same bytes %v", latest.status, bytes.Equal(latest.body, cat))
	}
	etag := latest.header.Get("ETag")
	wantETag := `"` + store.Digest(cat) + `"`
	for name, got := range map[string]string{
		"ETag":             etag,
		"Content-Type":     latest.header.Get("Content-Type"),
		"Cache-Control":    latest.header.Get("Cache-Control"),
		"Content-Location": latest.header.Get("Content-Location"),
	} {
		want := map[string]string{"ETag": wantETag, "Content-Type": "application/yaml", "Cache-Control": "public, max-age=60",
			"Content-Location": "/catalogs/example-functions/1.0.0/catalog.yaml"}[name]
		if got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	if !strings.HasPrefix(latest.header.Get("Content-Digest"), "sha-256=:") {
		t.Errorf("Content-Digest = %q", latest.header.Get("Content-Digest"))
	}
	if r := do(t, http.MethodGet, s.url+"/catalogs/example-functions/catalog.yaml", "", nil, "If-None-Match", etag); r.status != http.StatusNotModified || len(r.body) != 0 {
		t.Errorf("If-None-Match: %d with %d bytes, want 304 and none", r.status, len(r.body))
	}
	pinned := do(t, http.MethodGet, s.url+"/catalogs/example-functions/1.0.0/catalog.yaml", "", nil)
	if pinned.status != http.StatusOK || pinned.header.Get("Cache-Control") != "public, max-age=31536000, immutable" {
		t.Errorf("pinned: %d %q", pinned.status, pinned.header.Get("Cache-Control"))
	}
	asJSON := do(t, http.MethodGet, s.url+"/catalogs/example-functions/1.0.0/catalog.yaml", "", nil, "Accept", "application/json")
	if asJSON.status != http.StatusOK || asJSON.header.Get("Content-Type") != "application/json" || asJSON.header.Get("ETag") == etag {
		t.Errorf("JSON: %d %q, ETag %q", asJSON.status, asJSON.header.Get("Content-Type"), asJSON.header.Get("ETag"))
	}
	if m := asJSON.json(t); m["kind"] != "KRMFunctionCatalog" {
		t.Errorf("JSON body kind = %v", m["kind"])
	}
	if head := do(t, http.MethodHead, s.url+"/catalogs/example-functions/catalog.yaml", "", nil); head.status != http.StatusOK || len(head.body) != 0 || head.header.Get("ETag") != etag {
		t.Errorf("HEAD: %d, %d bytes, ETag %q", head.status, len(head.body), head.header.Get("ETag"))
	}
	def := do(t, http.MethodGet, s.url+"/functions/fn.example.com/SetNamespace/definition.yaml", "", nil)
	if def.status != http.StatusOK || !strings.Contains(string(def.body), "kind: KRMFunctionDefinition") {
		t.Errorf("definition.yaml: %d\n%s", def.status, def.body)
	}

	// search
	res := do(t, http.MethodGet, s.url+"/api/v1/functions?q=namespace", "", nil).json(t)
	fns, _ := res["functions"].([]any)
	if len(fns) == 0 || fns[0].(map[string]any)["kind"] != "SetNamespace" {
		t.Errorf("search for namespace: %v", res["functions"])
	}
	if res["facets"] == nil {
		t.Error("no facets")
	}
	if capped, ok := res["totalCapped"].(bool); !ok || capped {
		t.Errorf("totalCapped = %v, want false for a small catalog", res["totalCapped"])
	}
	// resolve
	rv := do(t, http.MethodGet, s.url+"/api/v1/resolve?apiVersion=fn.example.com/v1&kind=SetNamespace&catalog=example-functions", "", nil)
	if rv.status != http.StatusOK || rv.json(t)["runtime"] == nil {
		t.Errorf("resolve: %d %s", rv.status, rv.body)
	}
	missing := do(t, http.MethodGet, s.url+"/api/v1/resolve?apiVersion=fn.example.com/v9&kind=SetNamespace&catalog=example-functions&catalog=other", "", nil)
	if msg := string(missing.body); missing.status != http.StatusNotFound || !strings.Contains(msg, "searched example-functions, other") {
		t.Errorf("unresolvable: %d %s", missing.status, msg)
	}
	// lists
	for path, key := range map[string]string{
		"/api/v1/catalogs": "catalogs", "/api/v1/catalogs/example-functions/versions": "versions",
		"/api/v1/functions/fn.example.com/SetNamespace": "entries", "/api/v1/functions/fn.example.com/SetNamespace/versions/v1": "entries",
	} {
		if r := do(t, http.MethodGet, s.url+path, "", nil); r.status != http.StatusOK || r.json(t)[key] == nil {
			t.Errorf("GET %s: %d %s", path, r.status, r.body)
		}
	}
	if r := do(t, http.MethodGet, s.url+"/api/v1/openapi.yaml", "", nil); r.status != http.StatusOK || !strings.Contains(string(r.body), "openapi: 3.") {
		t.Errorf("openapi.yaml: %d", r.status)
	}
}

func TestRejections(t *testing.T) {
	t.Parallel()
	s := startService(t, storetest.NewDatabase(t))
	tok := token(t, s, "example.com")
	other := token(t, s, "other.example")
	cat := exampleCatalog(t)
	url := s.url + "/api/v1/catalogs/example-functions/versions/1.0.0"
	if r := do(t, http.MethodPut, url, tok, cat); r.status != http.StatusCreated {
		t.Fatalf("publish: %d %s", r.status, r.body)
	}
	changed := append([]byte("# another comment\n"), cat...)
	big := append(bytes.Repeat([]byte("# padding\n"), 110_000), cat...)
	invalid := []byte("apiVersion: config.kubernetes.io/v1alpha1\nkind: KRMFunctionCatalog\nmetadata: {name: example-functions}\nspec: {}\n")
	tests := []struct {
		name       string
		url, token string
		body       []byte
		want       int
		wantInBody string
	}{
		{"no token", url, "", cat, http.StatusUnauthorized, "bearer token"},
		{"unknown token", url, store.TokenPrefix + "nope", cat, http.StatusUnauthorized, "bearer token"},
		// a catalog's name is its owner's; listing others' functions is curation (TestCuratedCatalog)
		{"another publisher's catalog", s.url + "/api/v1/catalogs/example-functions/versions/2.0.0", other, cat, http.StatusForbidden, `belongs to publisher \"example.com\"`},
		{"other bytes for a published version", url, tok, changed, http.StatusConflict, "already published with other content"},
		{"body above the limit", s.url + "/api/v1/catalogs/example-functions/versions/3.0.0", tok, big, http.StatusRequestEntityTooLarge, "larger than the limit of 1.0 MiB"},
		{"invalid document", s.url + "/api/v1/catalogs/example-functions/versions/4.0.0", tok, invalid, http.StatusUnprocessableEntity, `missing required field \"krmFunctions\"`},
		{"name differs from metadata.name", s.url + "/api/v1/catalogs/renamed/versions/1.0.0", tok, cat, http.StatusUnprocessableEntity, "metadata.name"},
		{"malformed version", s.url + "/api/v1/catalogs/example-functions/versions/..", tok, cat, http.StatusBadRequest, "version"},
		{"a definition where a catalog belongs", s.url + "/api/v1/catalogs/example-functions/versions/5.0.0", tok, mustRead(t, "../examples/definition.yaml"), http.StatusUnprocessableEntity, "expected a KRMFunctionCatalog"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, http.MethodPut, tc.url, tc.token, tc.body)
			if r.status != tc.want || !strings.Contains(string(r.body), tc.wantInBody) {
				t.Errorf("got %d %s; want %d containing %q", r.status, r.body, tc.want, tc.wantInBody)
			}
			if r.status >= 400 && !strings.HasPrefix(string(r.body), `{"error":{"message":`) {
				t.Errorf("error body is not the JSON error shape: %s", r.body)
			}
		})
	}
	if r := do(t, http.MethodGet, s.url+"/api/v1/catalogs/example-functions/versions", "", nil); len(r.json(t)["versions"].([]any)) != 1 {
		t.Errorf("rejected publishes stored versions: %s", r.body)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestConcurrentPublishesOfOneVersion(t *testing.T) {
	t.Parallel()
	s := startService(t, storetest.NewDatabase(t))
	tok := token(t, s, "example.com")
	base := catalogtest.Catalog(catalogtest.Options{Name: "race", Functions: 20})
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		statuses = map[int]int{}
	)
	for i := range 20 {
		body := base
		if i%2 == 1 {
			body = append([]byte(fmt.Sprintf("# writer %d\n", i)), base...)
		}
		wg.Go(func() {
			r := do(t, http.MethodPut, s.url+"/api/v1/catalogs/race/versions/1.0.0", tok, body)
			mu.Lock()
			statuses[r.status]++
			mu.Unlock()
		})
	}
	wg.Wait()
	for status := range statuses {
		if status != http.StatusCreated && status != http.StatusOK && status != http.StatusConflict {
			t.Errorf("status %d answered %d times", status, statuses[status])
		}
	}
	if statuses[http.StatusCreated] != 1 {
		t.Errorf("%d publishes created the version, want exactly 1 (statuses %v)", statuses[http.StatusCreated], statuses)
	}
	versions := do(t, http.MethodGet, s.url+"/api/v1/catalogs/race/versions", "", nil).json(t)["versions"].([]any)
	if len(versions) != 1 {
		t.Errorf("%d versions stored, want 1", len(versions))
	}
}

func TestInvalidCorpusIsRejectedAndNothingStored(t *testing.T) {
	t.Parallel()
	s := startService(t, storetest.NewDatabase(t))
	tok := token(t, s, "example.com")
	files, err := filepath.Glob("../catalog/testdata/invalid/*")
	if err != nil || len(files) < 40 {
		t.Fatalf("corpus: %d files, %v", len(files), err)
	}
	for _, f := range files {
		body := mustRead(t, f)
		r := do(t, http.MethodPut, s.url+"/api/v1/catalogs/invalid/versions/1.0.0", tok, body)
		if r.status != http.StatusUnprocessableEntity {
			t.Errorf("%s: %d %s, want 422", filepath.Base(f), r.status, r.body)
		}
	}
	if r := do(t, http.MethodGet, s.url+"/api/v1/catalogs", "", nil); len(r.json(t)["catalogs"].([]any)) != 0 {
		t.Errorf("something was stored: %s", r.body)
	}
	if r := do(t, http.MethodGet, s.url+"/api/v1/functions", "", nil); r.json(t)["total"].(float64) != 0 {
		t.Errorf("functions were indexed: %s", r.body)
	}
}

func TestReplicasSeeEachOthersPublishes(t *testing.T) {
	t.Parallel()
	db := storetest.NewDatabase(t)
	a, b := startService(t, db), startService(t, db)
	tok := token(t, a, "example.com")
	v1 := catalogtest.Catalog(catalogtest.Options{Name: "shared", Functions: 2})
	v2 := catalogtest.Catalog(catalogtest.Options{Name: "shared", Functions: 3})
	if r := do(t, http.MethodPut, a.url+"/api/v1/catalogs/shared/versions/1.0.0", tok, v1); r.status != http.StatusCreated {
		t.Fatal(r.status)
	}
	// B caches v1 as latest ...
	for range 3 {
		if r := do(t, http.MethodGet, b.url+"/catalogs/shared/catalog.yaml", "", nil); !bytes.Equal(r.body, v1) {
			t.Fatal("B does not serve v1")
		}
	}
	// ... and must serve v2 soon after A publishes it
	if r := do(t, http.MethodPut, a.url+"/api/v1/catalogs/shared/versions/2.0.0", tok, v2); r.status != http.StatusCreated {
		t.Fatal(r.status)
	}
	waitFor(t, 5*time.Second, "replica B to serve the new latest version", func() bool {
		return bytes.Equal(do(t, http.MethodGet, b.url+"/catalogs/shared/catalog.yaml", "", nil).body, v2)
	})
}

func TestHealthReadinessMetrics(t *testing.T) {
	t.Parallel()
	s := startService(t, storetest.NewDatabase(t))
	if r := do(t, http.MethodGet, s.url+"/healthz", "", nil); r.status != http.StatusOK {
		t.Errorf("healthz: %d", r.status)
	}
	if r := do(t, http.MethodGet, s.url+"/readyz", "", nil); r.status != http.StatusOK {
		t.Errorf("readyz: %d", r.status)
	}
	do(t, http.MethodGet, s.url+"/catalogs/none/catalog.yaml", "", nil)
	m := string(do(t, http.MethodGet, s.url+"/metrics", "", nil).body)
	for _, want := range []string{
		`krm_catalog_http_requests_total{method="GET",route="/catalogs/{name}/catalog.yaml",status="404"} 1`,
		`krm_catalog_http_request_duration_seconds_bucket{method="GET",route="/readyz"`,
		"krm_catalog_content_cache_misses_total",
	} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	s.store.Close()
	if r := do(t, http.MethodGet, s.url+"/readyz", "", nil); r.status != http.StatusServiceUnavailable {
		t.Errorf("readyz with the database gone: %d, want 503", r.status)
	}
}
