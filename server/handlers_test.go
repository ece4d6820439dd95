package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/opencontainers/go-digest"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/krm-catalog/krm-catalog/catalog"
	"github.com/krm-catalog/krm-catalog/internal/httpx"
	"github.com/krm-catalog/krm-catalog/internal/testenv"
	"github.com/krm-catalog/krm-catalog/oci"
	"github.com/krm-catalog/krm-catalog/oci/sign"
	"github.com/krm-catalog/krm-catalog/store"
)

func readExample(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// testServer is a Server on a fakeStore, as serve assembles it.
type testServer struct {
	*Server
	store *fakeStore
	cache *ContentCache
	reg   *prometheus.Registry
	logs  *testenv.SyncBuffer
}

func newTestServer(t testing.TB, edit func(*Config)) *testServer {
	t.Helper()
	v, err := catalog.NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	f := newFakeStore()
	f.fns = []store.FunctionDetail{{
		FunctionSummary: store.FunctionSummary{Group: "fn.example.com", Kind: "SetNamespace", Publisher: "example.com", Catalogs: []string{"example-functions"}},
		Entries: []store.FunctionVersion{{Group: "fn.example.com", Kind: "SetNamespace", Version: "v1", Publisher: "example.com",
			Spec: map[string]any{"runtime": map[string]any{"container": map[string]any{"image": "registry.example.com/set-namespace@sha256:00"}}}}},
	}}
	logs := &testenv.SyncBuffer{}
	ts := &testServer{store: f, cache: NewContentCache(1 << 20), reg: prometheus.NewRegistry(), logs: logs}
	cfg := Config{Store: f, Validator: v, Registry: ts.reg, Cache: ts.cache, MaxBodyBytes: 1 << 20,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	if edit != nil {
		edit(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts.Server = s
	return ts
}

type call struct {
	method, path, token string
	body                []byte
	header              []string // name, value, ...
}

func (ts *testServer) do(t testing.TB, c call) *httptest.ResponseRecorder {
	t.Helper()
	method := c.method
	if method == "" {
		method = http.MethodGet
	}
	req := httptest.NewRequest(method, c.path, bytes.NewReader(c.body))
	req.RemoteAddr = "192.0.2.1:1234"
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	for i := 0; i+1 < len(c.header); i += 2 {
		req.Header.Set(c.header[i], c.header[i+1])
	}
	rec := httptest.NewRecorder()
	ts.ServeHTTP(rec, req)
	return rec
}

func (ts *testServer) publishExample(t testing.TB) {
	t.Helper()
	rec := ts.do(t, call{method: http.MethodPut, path: "/api/v1/catalogs/example-functions/versions/1.0.0", token: "secret", body: readExample(t, "../catalog/testdata/reference/catalog.yaml")})
	if rec.Code != http.StatusCreated {
		t.Fatalf("publish: %d %s", rec.Code, rec.Body)
	}
}

// TestHandlers runs each endpoint against the fake store: status, and what the body must say.
func TestHandlers(t *testing.T) {
	t.Parallel()
	catalogYAML := readExample(t, "../catalog/testdata/reference/catalog.yaml")
	definitionYAML := readExample(t, "../examples/definition.yaml")
	const catalogPath = "/api/v1/catalogs/example-functions/versions/"
	tests := []struct {
		name      string
		published bool // the example catalog is published first
		call      call
		want      int
		contains  []string
		header    map[string]string
	}{
		{name: "liveness", call: call{path: "/healthz"}, want: 200, contains: []string{"ok"}},
		{name: "readiness", call: call{path: "/readyz"}, want: 200, contains: []string{`"ready"`}},
		{name: "openapi", call: call{path: "/api/v1/openapi.yaml"}, want: 200, contains: []string{"openapi"}},
		{name: "unknown API endpoint", call: call{path: "/api/v1/nothing"}, want: 404, contains: []string{"no such API endpoint"}},
		{name: "publish without a token", call: call{method: "PUT", path: catalogPath + "1.0.0", body: catalogYAML}, want: 401,
			header: map[string]string{"WWW-Authenticate": `Bearer realm="krm-catalog"`}},
		{name: "publish with an unknown token", call: call{method: "PUT", path: catalogPath + "1.0.0", token: "nope", body: catalogYAML}, want: 401},
		{name: "publish a catalog", call: call{method: "PUT", path: catalogPath + "1.0.0", token: "secret", body: catalogYAML}, want: 201,
			contains: []string{`"created":true`}, header: map[string]string{"Location": "/catalogs/example-functions/1.0.0/catalog.yaml"}},
		{name: "publish the same bytes again", published: true, call: call{method: "PUT", path: catalogPath + "1.0.0", token: "secret", body: catalogYAML}, want: 200,
			contains: []string{`"created":false`}},
		{name: "publish other bytes under a version", published: true, call: call{method: "PUT", path: catalogPath + "1.0.0", token: "secret", body: append(append([]byte{}, catalogYAML...), "\n# changed\n"...)}, want: 409},
		{name: "publish a bad version", call: call{method: "PUT", path: catalogPath + "-x", token: "secret", body: catalogYAML}, want: 400, contains: []string{"version"}},
		{name: "publish under another name", call: call{method: "PUT", path: "/api/v1/catalogs/other/versions/1.0.0", token: "secret", body: catalogYAML}, want: 422,
			contains: []string{"metadata.name"}},
		{name: "publish others' functions", call: call{method: "PUT", path: catalogPath + "1.0.0", token: "other", body: catalogYAML}, want: 403},
		{name: "publish an invalid document", call: call{method: "PUT", path: catalogPath + "1.0.0", token: "secret", body: []byte("kind: KRMFunctionCatalog\n")}, want: 422},
		{name: "publish a definition as a catalog", call: call{method: "PUT", path: catalogPath + "1.0.0", token: "secret", body: definitionYAML}, want: 422,
			contains: []string{"expected a"}},
		{name: "publish too large a body", call: call{method: "PUT", path: catalogPath + "1.0.0", token: "secret", body: make([]byte, 2<<20)}, want: 413,
			contains: []string{"1.0 MiB"}},
		{name: "publish a definition", call: call{method: "PUT", path: "/api/v1/definitions/fn.example.com/SetLabels", token: "secret", body: definitionYAML}, want: 201},
		{name: "publish a definition under another kind", call: call{method: "PUT", path: "/api/v1/definitions/fn.example.com/Other", token: "secret", body: definitionYAML}, want: 422},
		{name: "publish others' definition", call: call{method: "PUT", path: "/api/v1/definitions/fn.example.com/SetLabels", token: "other", body: definitionYAML}, want: 403},
		{name: "list catalogs, none", call: call{path: "/api/v1/catalogs"}, want: 200, contains: []string{`"catalogs":[]`}},
		{name: "list catalogs", published: true, call: call{path: "/api/v1/catalogs"}, want: 200, contains: []string{`"name":"example-functions"`}},
		{name: "get a catalog", published: true, call: call{path: "/api/v1/catalogs/example-functions"}, want: 200, contains: []string{`"versions":1`}},
		{name: "get a missing catalog", call: call{path: "/api/v1/catalogs/none"}, want: 404},
		{name: "list versions", published: true, call: call{path: "/api/v1/catalogs/example-functions/versions"}, want: 200, contains: []string{`"version":"1.0.0"`}},
		{name: "get a version", published: true, call: call{path: catalogPath + "1.0.0"}, want: 200, contains: []string{`"catalog":"example-functions"`, `"version":"1.0.0"`, `"digest":"sha256:`}},
		{name: "get a missing version", published: true, call: call{path: catalogPath + "9.9.9"}, want: 404, contains: []string{`"error":{"message":"catalog \"example-functions\" has no version \"9.9.9\""`}},
		{name: "a method the endpoint does not take", published: true, call: call{method: "DELETE", path: catalogPath + "1.0.0"}, want: 405, contains: []string{`"error":{"message":"this API endpoint does not take DELETE`},
			header: map[string]string{"Content-Type": "application/json"}},
		{name: "latest catalog.yaml", published: true, call: call{path: "/catalogs/example-functions/catalog.yaml"}, want: 200,
			contains: []string{"kind: KRMFunctionCatalog"}, header: map[string]string{"X-Catalog-Version": "1.0.0", "Cache-Control": cacheLatest, "Content-Type": "application/yaml"}},
		{name: "pinned catalog.yaml", published: true, call: call{path: "/catalogs/example-functions/1.0.0/catalog.yaml"}, want: 200,
			header: map[string]string{"Cache-Control": cacheImmutable}},
		{name: "catalog.yaml as JSON", published: true, call: call{path: "/catalogs/example-functions/1.0.0/catalog.yaml", header: []string{"Accept", "application/json"}}, want: 200,
			contains: []string{`"kind":"KRMFunctionCatalog"`}, header: map[string]string{"Content-Type": "application/json"}},
		{name: "catalog.yaml in a browser, shown rather than downloaded", published: true, call: call{path: "/catalogs/example-functions/1.0.0/catalog.yaml",
			header: []string{"Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}}, want: 200,
			contains: []string{"kind: KRMFunctionCatalog"}, header: map[string]string{"Content-Type": "text/plain; charset=utf-8", "X-Content-Type-Options": "nosniff"}},
		{name: "catalog.yaml not modified", published: true, call: call{path: "/catalogs/example-functions/1.0.0/catalog.yaml", header: []string{"If-None-Match", `"` + store.Digest(catalogYAML) + `"`}}, want: 304},
		{name: "missing catalog.yaml", call: call{path: "/catalogs/none/catalog.yaml"}, want: 404},
		{name: "missing definition.yaml", call: call{path: "/functions/fn.example.com/None/definition.yaml"}, want: 404},
		{name: "search", call: call{path: "/api/v1/functions?q=namespace&limit=5&runtime=container&tag=a&tag=b"}, want: 200, contains: []string{`"kind":"SetNamespace"`, `"total":1`}},
		{name: "search with a bad limit", call: call{path: "/api/v1/functions?limit=0"}, want: 400},
		{name: "search with a bad runtime", call: call{path: "/api/v1/functions?runtime=wasm"}, want: 400},
		{name: "search with a bad page token", call: call{path: "/api/v1/functions?page_token=bad"}, want: 400},
		{name: "get a function", call: call{path: "/api/v1/functions/fn.example.com/SetNamespace"}, want: 200, contains: []string{`"kind":"SetNamespace"`}},
		{name: "get a missing function", call: call{path: "/api/v1/functions/fn.example.com/None"}, want: 404},
		{name: "get a function version", call: call{path: "/api/v1/functions/fn.example.com/SetNamespace/versions/v1"}, want: 200, contains: []string{`"entries"`}},
		{name: "resolve", call: call{path: "/api/v1/resolve?apiVersion=fn.example.com/v1&kind=SetNamespace&catalog=example-functions"}, want: 200, contains: []string{`"runtime"`}},
		{name: "resolve without a kind", call: call{path: "/api/v1/resolve?apiVersion=fn.example.com/v1"}, want: 400},
		{name: "validate a valid document", call: call{method: "POST", path: "/api/v1/validate?filename=catalog.yaml", body: catalogYAML}, want: 200, contains: []string{`"valid":true`}},
		{name: "validate strictly", call: call{method: "POST", path: "/api/v1/validate?strict=true", body: []byte("apiVersion: config.kubernetes.io/v1alpha1\nkind: KRMFunctionCatalog\n")}, want: 200,
			contains: []string{`"valid":false`}},
		{name: "list keys, none", call: call{path: "/api/v1/publishers/example.com/keys"}, want: 200, contains: []string{`"keys":[]`}},
		{name: "add a key that is not PEM", call: call{method: "PUT", path: "/api/v1/publishers/example.com/keys", token: "secret", body: []byte("nope")}, want: 400},
		{name: "add a key for another publisher", call: call{method: "PUT", path: "/api/v1/publishers/other.example.com/keys", token: "secret", body: []byte("nope")}, want: 403},
		{name: "delete a missing key", call: call{method: "DELETE", path: "/api/v1/publishers/example.com/keys/abc", token: "secret"}, want: 404},
		{name: "metrics", call: call{path: "/metrics"}, want: 200, contains: []string{"krm_catalog_content_cache_hits_total"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ts := newTestServer(t, nil)
			if tc.published {
				ts.publishExample(t)
			}
			rec := ts.do(t, tc.call)
			if rec.Code != tc.want {
				t.Fatalf("status %d, want %d: %s", rec.Code, tc.want, rec.Body)
			}
			for _, s := range tc.contains {
				if !strings.Contains(rec.Body.String(), s) {
					t.Errorf("body does not contain %q:\n%s", s, rec.Body)
				}
			}
			for k, v := range tc.header {
				if got := rec.Header().Get(k); got != v {
					t.Errorf("header %s = %q, want %q", k, got, v)
				}
			}
			if rec.Code >= 400 {
				var e apiError
				if tc.call.path != "/metrics" && json.Unmarshal(rec.Body.Bytes(), &e) != nil {
					t.Errorf("error body is not the API's error JSON: %s", rec.Body)
				}
			}
		})
	}
}

func TestConditionalAndCachedContent(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	ts.cache.setLive(true)
	ts.publishExample(t)
	first := ts.do(t, call{path: "/catalogs/example-functions/catalog.yaml"})
	etag := first.Header().Get("Etag")
	if first.Code != 200 || etag == "" {
		t.Fatalf("first fetch: %d etag %q", first.Code, etag)
	}
	if rec := ts.do(t, call{path: "/catalogs/example-functions/catalog.yaml", header: []string{"If-None-Match", etag}}); rec.Code != http.StatusNotModified {
		t.Errorf("If-None-Match with the ETag: %d, want 304", rec.Code)
	}
	// The cache holds it: an outage does not stop cached reads.
	ts.store.set(fmt.Errorf("query: %w", store.ErrUnavailable), false)
	if rec := ts.do(t, call{path: "/catalogs/example-functions/catalog.yaml"}); rec.Code != 200 || rec.Body.String() != first.Body.String() {
		t.Errorf("cached catalog.yaml during an outage: %d", rec.Code)
	}
	if rec := ts.do(t, call{path: "/api/v1/catalogs"}); rec.Code != http.StatusServiceUnavailable {
		t.Errorf("uncached read during an outage: %d, want 503", rec.Code)
	}
}

func TestDefinitionYAML(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	def := readExample(t, "../examples/definition.yaml")
	if rec := ts.do(t, call{method: "PUT", path: "/api/v1/definitions/fn.example.com/SetLabels", token: "secret", body: def}); rec.Code != 201 {
		t.Fatalf("publish: %d %s", rec.Code, rec.Body)
	}
	rec := ts.do(t, call{path: "/functions/fn.example.com/SetLabels/definition.yaml"})
	if rec.Code != 200 || rec.Body.String() != string(def) {
		t.Errorf("definition.yaml: %d, body equal %v", rec.Code, rec.Body.String() == string(def))
	}
}

// TestOutages checks that every way the database can fail answers 503 with Retry-After and says
// the database is unavailable, never 500, and that a stalled database answers within the
// request's deadline.
func TestOutages(t *testing.T) {
	t.Parallel()
	paths := []call{
		{path: "/api/v1/catalogs"},
		{path: "/api/v1/functions?q=x"},
		{path: "/catalogs/example-functions/catalog.yaml"},
		{path: "/readyz"},
		{method: "PUT", path: "/api/v1/catalogs/example-functions/versions/2.0.0", token: "secret"},
	}
	tests := []struct {
		name  string
		fail  error
		stall bool
	}{
		{"store unavailable", fmt.Errorf("list catalogs: %w", store.ErrUnavailable), false},
		{"deadline exceeded", fmt.Errorf("query: %w", context.DeadlineExceeded), false},
		{"stalled database", nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ts := newTestServer(t, func(c *Config) {
				c.Deadlines = Deadlines{Read: 50 * time.Millisecond, Write: 50 * time.Millisecond, Validate: 50 * time.Millisecond}
			})
			ts.store.set(tc.fail, tc.stall)
			for _, c := range paths {
				if c.method == "PUT" {
					c.body = readExample(t, "../catalog/testdata/reference/catalog.yaml")
				}
				rec := ts.do(t, c)
				if rec.Code != http.StatusServiceUnavailable {
					t.Errorf("%s %s: %d, want 503: %s", c.method, c.path, rec.Code, rec.Body)
					continue
				}
				if rec.Header().Get("Retry-After") == "" {
					t.Errorf("%s: 503 without Retry-After", c.path)
				}
				if !strings.Contains(rec.Body.String(), "database is unavailable") {
					t.Errorf("%s: body %s", c.path, rec.Body)
				}
			}
			if rec := ts.do(t, call{path: "/healthz"}); rec.Code != 200 {
				t.Errorf("liveness during an outage: %d, want 200", rec.Code)
			}
		})
	}
}

// TestOutageLoggedOnce checks that a burst of failed requests is one line when it starts and one
// with its count when it stops.
func TestOutageLoggedOnce(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	var flush []func()
	ts.failures.after = func(_ time.Duration, f func()) { flush = append(flush, f) }
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ts.failures.now = func() time.Time { return clock }
	ts.store.set(store.ErrUnavailable, false)
	for range 100 {
		ts.do(t, call{path: "/api/v1/catalogs"})
	}
	if n := strings.Count(ts.logs.String(), "answering 503"); n != 1 {
		t.Fatalf("%d lines about the outage during it, want 1:\n%s", n, ts.logs)
	}
	clock = clock.Add(time.Minute)
	for _, f := range flush {
		f()
	}
	if !strings.Contains(ts.logs.String(), "failures stopped") || !strings.Contains(ts.logs.String(), "count=100") {
		t.Errorf("no end line with the count:\n%s", ts.logs)
	}
}

func TestCoalescerWaitsForQuiet(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	c := newCoalescer(slog.New(slog.NewTextHandler(&logs, nil)), 10*time.Second)
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c.now = func() time.Time { return clock }
	var pending []func()
	c.after = func(_ time.Duration, f func()) { pending = append(pending, f) }
	c.failed(context.Background(), slog.LevelWarn, "k", "first")
	clock = clock.Add(5 * time.Second)
	c.failed(context.Background(), slog.LevelWarn, "k", "second")
	clock = clock.Add(6 * time.Second) // 11 s after the first, 6 after the last: not quiet yet
	pending[0]()
	if strings.Contains(logs.String(), "failures stopped") {
		t.Fatal("ended a burst that was not quiet")
	}
	clock = clock.Add(10 * time.Second)
	pending[len(pending)-1]()
	if !strings.Contains(logs.String(), "count=2") {
		t.Errorf("end line: %s", logs.String())
	}
}

func TestRequestLinesAtDebug(t *testing.T) {
	t.Parallel()
	for _, level := range []slog.Level{slog.LevelDebug, slog.LevelInfo} {
		var logs bytes.Buffer
		ts := newTestServer(t, func(c *Config) {
			c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: level}))
		})
		ts.do(t, call{path: "/healthz"})
		if got, want := strings.Contains(logs.String(), "msg=request"), level == slog.LevelDebug; got != want {
			t.Errorf("at level %s, request line logged: %v, want %v", level, got, want)
		}
	}
}

// The request line carries the request's ID: the proxy's X-Request-Id when it sent one, else one
// made for the request, a new one each time.
func TestRequestLineIDs(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	ts := newTestServer(t, func(c *Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	ts.do(t, call{path: "/healthz", header: []string{httpx.RequestIDHeader, "from-the-proxy"}})
	ts.do(t, call{path: "/healthz"})
	ts.do(t, call{path: "/healthz"})
	ids := regexp.MustCompile(`request_id=(\S+)`).FindAllStringSubmatch(logs.String(), -1)
	if len(ids) != 3 || ids[0][1] != "from-the-proxy" || !strings.HasSuffix(ids[1][1], "-000001") || !strings.HasSuffix(ids[2][1], "-000002") {
		t.Errorf("request IDs %q, want the proxy's, then two made here in order:\n%s", ids, logs.String())
	}
}

// TestLimits checks the 429s of the validation, search and publish limits.
func TestLimits(t *testing.T) {
	t.Parallel()
	t.Run("rate per client", func(t *testing.T) {
		t.Parallel()
		ts := newTestServer(t, func(c *Config) {
			c.Limiters = NewLimiters(Limits{Validate: httpx.Limit{Rate: 1, Burst: 2}, Search: httpx.Limit{Rate: 1, Burst: 1}, Publish: httpx.Limit{Rate: 1, Burst: 1}})
		})
		body := []byte("kind: KRMFunctionCatalog\n")
		var codes []int
		for range 3 {
			codes = append(codes, ts.do(t, call{method: "POST", path: "/api/v1/validate", body: body}).Code)
		}
		if diff := cmp.Diff([]int{200, 200, 429}, codes); diff != "" {
			t.Errorf("validate statuses (-want +got):\n%s", diff)
		}
		rec := ts.do(t, call{path: "/api/v1/functions"})
		rec = ts.do(t, call{path: "/api/v1/functions"})
		if rec.Code != 429 || rec.Header().Get("Retry-After") != "1" {
			t.Errorf("second search: %d Retry-After %q", rec.Code, rec.Header().Get("Retry-After"))
		}
		cat := readExample(t, "../catalog/testdata/reference/catalog.yaml")
		ts.do(t, call{method: "PUT", path: "/api/v1/catalogs/example-functions/versions/1.0.0", token: "secret", body: cat})
		if rec := ts.do(t, call{method: "PUT", path: "/api/v1/catalogs/example-functions/versions/1.0.0", token: "secret", body: cat}); rec.Code != 429 {
			t.Errorf("second publish of a token limited to 1: %d", rec.Code)
		}
		if rec := ts.do(t, call{method: "PUT", path: "/api/v1/definitions/fn.example.com/SetLabels", token: "other", body: readExample(t, "../examples/definition.yaml")}); rec.Code == 429 {
			t.Error("another publisher was limited by the first one's publishes")
		}
	})
}

// fakePushRegistry is a registry that pushes or fails.
type fakePushRegistry struct {
	Registry
	err error
}

func (f *fakePushRegistry) PushCatalog(ctx context.Context, ref string, data []byte, _ oci.PushOptions) (digest.Digest, error) {
	if f.err != nil {
		return "", f.err
	}
	return digest.FromBytes(data), nil
}

func (f *fakePushRegistry) Evidence(context.Context, string, []sign.PublicKey) (oci.Evidence, error) {
	return oci.Evidence{}, nil
}

func TestPublishPushes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  error
		want int
	}{
		{"pushed", nil, 201},
		{"registry down", errors.New("connection refused"), 502},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			reg := &fakePushRegistry{err: tc.err}
			ts := newTestServer(t, func(c *Config) {
				c.OCI, c.OCIPrefix = reg, "127.0.0.1:5000/krm"
				c.Signatures = NewSignatures(reg, c.Store, nil, nil)
			})
			rec := ts.do(t, call{method: "PUT", path: "/api/v1/catalogs/example-functions/versions/1.0.0", token: "secret", body: readExample(t, "../catalog/testdata/reference/catalog.yaml")})
			if rec.Code != tc.want {
				t.Fatalf("publish: %d, want %d: %s", rec.Code, tc.want, rec.Body)
			}
			if tc.err == nil && !strings.Contains(rec.Body.String(), "127.0.0.1:5000/krm/catalogs/example-functions:1.0.0") {
				t.Errorf("the answer does not say where it was pushed: %s", rec.Body)
			}
			versions := ts.do(t, call{path: "/api/v1/catalogs/example-functions/versions"})
			if tc.err != nil && versions.Code != 404 {
				t.Errorf("a failed push published the version: %d %s", versions.Code, versions.Body)
			}
			if tc.err == nil && !strings.Contains(versions.Body.String(), `"signature":"unsigned"`) {
				t.Errorf("versions carry no signature status: %s", versions.Body)
			}
		})
	}
}

// fakeSubscriber delivers scripted changes, then fails.
type fakeSubscriber struct {
	mu      sync.Mutex
	calls   int
	changes []store.Change
}

func (f *fakeSubscriber) Subscribe(ctx context.Context, fn func(store.Change)) error {
	f.mu.Lock()
	f.calls++
	first := f.calls == 1
	f.mu.Unlock()
	if !first {
		<-ctx.Done()
		return ctx.Err()
	}
	for _, c := range f.changes {
		fn(c)
	}
	return errors.New("connection lost")
}

func TestCacheListen(t *testing.T) {
	t.Parallel()
	c := NewContentCache(1 << 20)
	var seen []bool
	sub := &fakeSubscriber{changes: []store.Change{{Resync: true}}}
	// after the resync, a latest entry is cached, then invalidated by a change
	sub.changes = append(sub.changes, store.Change{Subject: "catalog:c"})
	var logs testenv.SyncBuffer
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Listen(ctx, sub, slog.New(slog.NewTextHandler(&logs, nil)))
	}()
	for {
		sub.mu.Lock()
		n := sub.calls
		sub.mu.Unlock()
		if n >= 2 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	seen = append(seen, c.Live())
	cancel()
	<-done
	if seen[0] {
		t.Error("the cache is live after its subscription failed")
	}
	if c.gen["catalog:c"] != 1 {
		t.Errorf("the change was not applied: gen %d", c.gen["catalog:c"])
	}
	if n := strings.Count(logs.String(), "disconnected"); n != 1 {
		t.Errorf("%d disconnect lines, want 1: %s", n, logs.String())
	}
}

type fakeStats struct{}

func (fakeStats) Stats() store.PoolStats {
	return store.PoolStats{Acquired: 1, Idle: 2, Total: 3, Max: 16, Acquires: 10, EmptyAcquires: 4, AcquireWait: time.Second, Canceled: 1}
}

func TestPoolCollector(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewPoolCollector(fakeStats{}))
	n, err := testutil.GatherAndCount(reg)
	if err != nil || n != 8 {
		t.Fatalf("%d metrics, %v; want 8", n, err)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP krm_catalog_db_pool_max_connections The pool's size limit.
# TYPE krm_catalog_db_pool_max_connections gauge
krm_catalog_db_pool_max_connections 16
`), "krm_catalog_db_pool_max_connections"); err != nil {
		t.Error(err)
	}
}

func TestNewNeedsAStoreAndValidator(t *testing.T) {
	t.Parallel()
	if _, err := New(Config{}); err == nil {
		t.Error("New without a store succeeded")
	}
}

// TestDrain checks that a draining server reports not ready while it keeps answering everything
// else, the database's reads among them.
func TestDrain(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	ts.publishExample(t)
	ts.Drain()
	tests := []struct {
		path string
		want int
	}{
		{"/readyz", http.StatusServiceUnavailable},
		{"/healthz", http.StatusOK},
		{"/api/v1/catalogs/example-functions/versions", http.StatusOK},
		{"/catalogs/example-functions/1.0.0/catalog.yaml", http.StatusOK},
	}
	for _, tc := range tests {
		if rec := ts.do(t, call{path: tc.path}); rec.Code != tc.want {
			t.Errorf("%s while draining: %d %s, want %d", tc.path, rec.Code, rec.Body, tc.want)
		}
	}
}
