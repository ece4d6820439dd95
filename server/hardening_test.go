package server

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/krm-catalog/krm-catalog/internal/httpx"
	"github.com/krm-catalog/krm-catalog/store"
)

// TestMetricsMethodsBounded: a client choosing methods must not choose the number of series.
func TestMetricsMethodsBounded(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	for i := range 50 {
		ts.do(t, call{method: fmt.Sprintf("M%d", i), path: "/healthz"})
	}
	ts.do(t, call{method: http.MethodGet, path: "/healthz"})
	if n := testutil.CollectAndCount(ts.metrics.requests); n != 2 {
		t.Errorf("%d request series after 50 invented methods and a GET, want 2 (other, GET)", n)
	}
	if got := testutil.ToFloat64(ts.metrics.requests.WithLabelValues("unmatched", "other", "405")) + testutil.ToFloat64(ts.metrics.requests.WithLabelValues("/healthz", "other", "405")); got != 50 {
		t.Errorf("requests of invented methods counted under \"other\": %v, want 50", got)
	}
}

// TestQueryOverflow: a query string net/url reads only in part is refused, never answered as if
// it held no filter.
func TestQueryOverflow(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	many := "/api/v1/functions?publisher=nobody.example" + strings.Repeat("&x=1", 10_000)
	tests := []struct {
		path string
		want int
	}{
		{"/api/v1/functions?publisher=nobody.example", http.StatusOK},
		{many, http.StatusBadRequest},
		{"/api/v1/functions?publisher=%zz", http.StatusBadRequest},
		{"/api/v1/functions?publisher=a;tag=b", http.StatusBadRequest},
	}
	for _, tc := range tests {
		rec := ts.do(t, call{path: tc.path})
		if rec.Code != tc.want {
			t.Errorf("GET %.60s...: %d %s, want %d", tc.path, rec.Code, rec.Body, tc.want)
		}
	}
}

// TestSearchTextBounded: the API refuses search text over the bounds with a 400 that says which,
// before the database sees it.
func TestSearchTextBounded(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	tests := []struct {
		q, want string
	}{
		{strings.Repeat("word ", store.MaxSearchWords), ""},
		{strings.Repeat("word ", store.MaxSearchWords+1), "more than 16 words"},
		{strings.Repeat("w", store.MaxSearchText+1), "longer than 200 characters"},
		{strings.Repeat("w ", 8000), "longer than 200 characters"},
	}
	for _, tc := range tests {
		rec := ts.do(t, call{path: "/api/v1/functions?q=" + url.QueryEscape(tc.q)})
		switch {
		case tc.want == "" && rec.Code != http.StatusOK:
			t.Errorf("q of %d bytes: %d %s, want 200", len(tc.q), rec.Code, rec.Body)
		case tc.want != "" && (rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), tc.want)):
			t.Errorf("q of %d bytes: %d %s, want 400 saying %q", len(tc.q), rec.Code, rec.Body, tc.want)
		}
	}
}

// signalingBody closes read when its first Read is called.
type signalingBody struct {
	io.ReadCloser
	once sync.Once
	read chan struct{}
}

func (b *signalingBody) Read(p []byte) (int, error) {
	b.once.Do(func() { close(b.read) })
	return b.ReadCloser.Read(p)
}

// TestSlowBodyHoldsNoSlot: a body that trickles in holds no validate slot while it is read, and is
// cut off at the body deadline.
func TestSlowBodyHoldsNoSlot(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, func(c *Config) {
		c.Limiters = NewLimiters(Limits{Validate: httpx.Limit{Concurrent: 1}})
		c.Deadlines.Body = 300 * time.Millisecond
	})
	reading := make(chan struct{})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Slow") != "" {
			r.Body = &signalingBody{ReadCloser: r.Body, read: reading}
		}
		ts.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)

	pr, pw := io.Pipe()
	t.Cleanup(func() { _ = pw.Close() })
	slow, err := http.NewRequest(http.MethodPost, hs.URL+"/api/v1/validate", pr)
	if err != nil {
		t.Fatal(err)
	}
	slow.ContentLength = 100_000
	slow.Header.Set("X-Slow", "1")
	slowStatus := make(chan int, 1)
	go func() {
		res, err := hs.Client().Do(slow)
		if err != nil {
			slowStatus <- 0
			return
		}
		_ = res.Body.Close()
		slowStatus <- res.StatusCode
	}()
	if _, err := pw.Write([]byte("k")); err != nil {
		t.Fatal(err)
	}
	<-reading // the server reads the slow body now, and will get no more of it

	res, err := hs.Client().Post(hs.URL+"/api/v1/validate", "application/yaml", strings.NewReader("kind: KRMFunctionCatalog\n"))
	if err != nil {
		t.Fatal(err)
	}
	_ = res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Errorf("a validate beside a slow body: %d, want 200 (the slow body must not hold the only slot)", res.StatusCode)
	}
	select {
	case st := <-slowStatus:
		if st != http.StatusRequestTimeout {
			t.Errorf("the slow body: status %d, want 408", st)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the slow body was not cut off at the body deadline")
	}
}

// TestPublishRefusesMergeKeys: a catalog that YAML readers read differently is refused with where.
func TestPublishRefusesMergeKeys(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	cat := strings.Replace(string(readExample(t, "../catalog/testdata/reference/catalog.yaml")), "\n    - group: fn.example.com\n", "\n    - <<: {group: fn.other.org}\n      group: fn.example.com\n", 1)
	if !strings.Contains(cat, "<<:") {
		t.Fatal("the example catalog changed shape; the test no longer adds its merge key")
	}
	for _, path := range []string{"/api/v1/catalogs/example-functions/versions/9.0.0", "/api/v1/validate"} {
		method := http.MethodPut
		if strings.HasSuffix(path, "validate") {
			method = http.MethodPost
		}
		rec := ts.do(t, call{method: method, path: path, token: "secret", body: []byte(cat)})
		if !strings.Contains(rec.Body.String(), "merge key <<") || !strings.Contains(rec.Body.String(), `"line":`) {
			t.Errorf("%s %s: %d %s, want the merge key refused with its line", method, path, rec.Code, rec.Body)
		}
		if method == http.MethodPut && rec.Code != http.StatusUnprocessableEntity {
			t.Errorf("publish: %d, want 422", rec.Code)
		}
	}
}

// TestAuthFailuresLimited: past its budget of failed authentications, an address is refused
// before its token reaches the store; the right token from another address still works.
func TestAuthFailuresLimited(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, func(c *Config) {
		c.Limiters = NewLimiters(Limits{AuthFailures: httpx.Limit{Rate: 0.001, Burst: 3}})
	})
	var codes []int
	for range 6 {
		codes = append(codes, ts.do(t, call{method: http.MethodPut, path: "/api/v1/publishers/example.com/keys", token: "guess"}).Code)
	}
	if diff := cmp.Diff([]int{401, 401, 401, 429, 429, 429}, codes); diff != "" {
		t.Errorf("statuses of wrong tokens (-want +got):\n%s", diff)
	}
	ts.store.mu.Lock()
	checks := ts.store.authChecks
	ts.store.mu.Unlock()
	if checks != 3 {
		t.Errorf("%d tokens looked up, want 3: refusals past the budget must not reach the store", checks)
	}
	req := httptest.NewRequest(http.MethodPost, "/api/v1/publishers/example.com/keys/challenges", nil)
	req.RemoteAddr = "198.51.100.7:1"
	req.Header.Set("Authorization", "Bearer secret")
	rec := httptest.NewRecorder()
	ts.ServeHTTP(rec, req)
	if rec.Code == http.StatusTooManyRequests || rec.Code == http.StatusUnauthorized {
		t.Errorf("another address with the right token: %d %s", rec.Code, rec.Body)
	}
}

// TestRefusalsAudited: refused changes reach the audit log with who asked and the status; a
// refusal for too many requests does not.
func TestRefusalsAudited(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	cat := readExample(t, "../catalog/testdata/reference/catalog.yaml")
	ts.do(t, call{method: http.MethodPut, path: "/api/v1/catalogs/example-functions/versions/1.0.0", token: "wrong", body: cat})
	ts.do(t, call{method: http.MethodPut, path: "/api/v1/catalogs/example-functions/versions/1.0.0", token: "other", body: cat})
	ts.do(t, call{method: http.MethodPut, path: "/api/v1/catalogs/example-functions/versions/1.0.0", token: "secret", body: cat})
	ts.store.mu.Lock()
	got := slices.Clone(ts.store.refusals)
	ts.store.mu.Unlock()
	want := []string{
		"catalog.publish  /api/v1/catalogs/example-functions/versions/1.0.0 401",
		"catalog.publish other.example.com /api/v1/catalogs/example-functions/versions/1.0.0 403",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("refusals recorded (-want +got):\n%s", diff)
	}
}
