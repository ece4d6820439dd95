package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/krm-catalog/krm-catalog/catalog/catalogtest"
	"github.com/krm-catalog/krm-catalog/internal/docbudget"
	"github.com/krm-catalog/krm-catalog/internal/httpx"
)

// TestDocumentCostBounded: what a posted document may cost follows what it is, not its bytes. A
// catalog of a million [0] in a schema default (4 MB, two million values) is refused with 413
// naming the limit, unparsed, by validate and publish alike; one just past the limit by the count
// of what was read. Before, it took seconds of a core and near a gigabyte to validate; here, the
// same shape at a quarter of the size, under the 1 MiB body limit of the test server.
func TestDocumentCostBounded(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	dense := catalogtest.Dense(250_000) // 1 MB, 500,000 values
	limit := "more than 131,072 values" // one per 8 bytes of the 1 MiB body limit
	for _, c := range []call{
		{method: http.MethodPost, path: "/api/v1/validate", body: dense},
		{method: http.MethodPut, path: "/api/v1/catalogs/dense-functions/versions/1.0.0", token: "secret", body: dense},
	} {
		rec := ts.do(t, c)
		if rec.Code != http.StatusRequestEntityTooLarge || !strings.Contains(rec.Body.String(), limit) {
			t.Errorf("%s %s of the dense catalog: %d %.300s; want 413 naming the limit", c.method, c.path, rec.Code, rec.Body)
		}
	}
	// within the scan's margin, refused by the count: 131,072 values hold 65,536 elements
	rec := ts.do(t, call{method: http.MethodPost, path: "/api/v1/validate", body: catalogtest.Dense(65_600)})
	var body apiError
	_ = json.Unmarshal(rec.Body.Bytes(), &body)
	if rec.Code != http.StatusRequestEntityTooLarge || len(body.Error.Details) != 1 || body.Error.Details[0].Line != 16 {
		t.Errorf("just past the limit: %d %.300s; want 413 with where the read stopped", rec.Code, rec.Body)
	}
	if rec := ts.do(t, call{method: http.MethodPost, path: "/api/v1/validate", body: catalogtest.Dense(60_000)}); rec.Code != http.StatusOK {
		t.Errorf("within the limit: %d %.300s", rec.Code, rec.Body)
	}
}

// TestValidationDeadlineStopsTheWork: when a validation's deadline passes, the work stops where
// it is and the client is told (503), rather than answered later as if nothing happened.
func TestValidationDeadlineStopsTheWork(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, func(c *Config) { c.Deadlines.Validate = time.Millisecond })
	rec := ts.do(t, call{method: http.MethodPost, path: "/api/v1/validate", body: catalogtest.Dense(60_000)})
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "not read within the request's deadline") || rec.Header().Get("Retry-After") == "" {
		t.Fatalf("validation past its deadline: %d %s", rec.Code, rec.Body)
	}
	if strings.Contains(ts.logs.String(), "database unavailable") {
		t.Errorf("logged as a database outage:\n%s", ts.logs)
	}
}

// TestAuthFailuresChargedAtOnce: wrong tokens sent at once are charged before they are looked
// up: no more than the budget reach the database, the others are refused once those lookups
// failed, and the address is then locked for a token's refill, not one for every refusal. Before,
// 1,000 of 1,000 were looked up and audited, and the address was then locked for 1,000 s.
func TestAuthFailuresChargedAtOnce(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, func(c *Config) {
		// a token back every 100 s: none comes back while the test runs
		c.Limiters = NewLimiters(Limits{AuthFailures: httpx.Limit{Rate: 0.01, Burst: 10}})
	})
	// the lookups wait, as a database's take their time, until the budget's worth have reached
	// the store: every request has arrived by then, on the base as now
	gate, entered := make(chan struct{}), make(chan struct{}, 300)
	ts.store.mu.Lock()
	ts.store.authGate, ts.store.authEntered = gate, entered
	ts.store.mu.Unlock()
	var wg sync.WaitGroup
	codes := make([]int, 300)
	for i := range codes {
		wg.Go(func() {
			codes[i] = ts.do(t, call{method: http.MethodPut, path: "/api/v1/publishers/example.com/keys", token: fmt.Sprintf("guess-%d", i)}).Code
		})
	}
	for range 10 {
		<-entered
	}
	close(gate)
	wg.Wait()
	count := map[int]int{}
	for _, c := range codes {
		count[c]++
	}
	ts.store.mu.Lock()
	checks, audited := ts.store.authChecks, len(ts.store.refusals)
	ts.store.authGate = nil
	ts.store.mu.Unlock()
	if checks > 10 || audited > 10 || count[http.StatusUnauthorized] > 10 {
		t.Errorf("%d tokens looked up, %d refusals audited, statuses %v; want at most the burst of 10", checks, audited, count)
	}
	rec := ts.do(t, call{method: http.MethodPut, path: "/api/v1/publishers/example.com/keys", token: "guess"})
	ra, _ := strconv.Atoi(rec.Header().Get("Retry-After"))
	if rec.Code != http.StatusTooManyRequests || ra < 1 || ra > 101 {
		t.Errorf("after the burst: %d Retry-After %q; want 429 and a token's refill to wait (100 s), not one per refusal", rec.Code, rec.Header().Get("Retry-After"))
	}
	// a valid token meanwhile, from another address, and many at once from one: none refused
	var ok sync.WaitGroup
	fails := make(chan int, 30)
	for range 30 {
		ok.Go(func() {
			req := httptest.NewRequest(http.MethodPost, "/api/v1/publishers/example.com/keys/challenges", nil)
			req.RemoteAddr = "198.51.100.7:1"
			req.Header.Set("Authorization", "Bearer secret")
			rec := httptest.NewRecorder()
			ts.ServeHTTP(rec, req)
			if rec.Code == http.StatusTooManyRequests || rec.Code == http.StatusUnauthorized {
				fails <- rec.Code
			}
		})
	}
	ok.Wait()
	close(fails)
	for c := range fails {
		t.Errorf("a valid token among 30 at once: %d", c)
	}
}

// TestDecodeMemoryShared: validations and publishes share a budget of the memory their documents
// take, and a publisher has its share of publishes in flight at most (two here). Before, eight
// concurrent 3.6 MB publishes of one publisher reached 1.43 GB and kept another publisher waiting
// into 429s.
func TestDecodeMemoryShared(t *testing.T) {
	t.Parallel()
	cat := readExample(t, "../catalog/testdata/reference/catalog.yaml")
	hold, entered := make(chan struct{}), make(chan struct{}, 8)
	ts := newTestServer(t, func(c *Config) {
		c.Limiters = NewLimiters(Limits{
			Validate:     httpx.Limit{Concurrent: 4, MaxWait: 20 * time.Millisecond},
			Publish:      httpx.Limit{Concurrent: 8, PerClient: 2, MaxWait: 20 * time.Millisecond},
			DecodeMemory: 3 * decodeCost(docbudget.Scan(cat), len(cat)) / 2, // one publish of the catalog fits, not two
		})
	})
	ts.store.mu.Lock()
	ts.store.hold, ts.store.entered = hold, entered
	ts.store.mu.Unlock()
	put := func(version, token string) chan int {
		got := make(chan int, 1)
		go func() {
			got <- ts.do(t, call{method: http.MethodPut, path: "/api/v1/catalogs/example-functions/versions/" + version, token: token, body: cat}).Code
		}()
		return got
	}
	first := put("1.0.0", "secret")
	<-entered // the first publish holds its share in the store
	if code := <-put("1.0.1", "secret"); code != http.StatusTooManyRequests {
		t.Errorf("a second publish while the first holds the memory: %d, want 429", code)
	}
	rec := ts.do(t, call{method: http.MethodPost, path: "/api/v1/validate", body: cat})
	if rec.Code != http.StatusTooManyRequests || !strings.Contains(rec.Body.String(), "decoding documents") {
		t.Errorf("a validation while the publish holds the memory: %d %s, want 429 naming the budget", rec.Code, rec.Body)
	}
	if rec := ts.do(t, call{method: http.MethodPost, path: "/api/v1/validate", body: []byte("kind: KRMFunctionCatalog\n")}); rec.Code != http.StatusOK {
		t.Errorf("a small validation beside it: %d %s", rec.Code, rec.Body)
	}
	close(hold)
	if code := <-first; code != http.StatusCreated {
		t.Errorf("the first publish: %d", code)
	}
	if rec := ts.do(t, call{method: http.MethodPost, path: "/api/v1/validate", body: cat}); rec.Code != http.StatusOK {
		t.Errorf("a validation once the memory is free: %d %s", rec.Code, rec.Body)
	}
}

// TestPublishesPerPublisher: one publisher has its share of publishes in flight at most (two
// here); another publisher's go ahead meanwhile.
func TestPublishesPerPublisher(t *testing.T) {
	t.Parallel()
	cat := readExample(t, "../catalog/testdata/reference/catalog.yaml")
	hold, entered := make(chan struct{}), make(chan struct{}, 8)
	ts := newTestServer(t, func(c *Config) {
		c.Limiters = NewLimiters(Limits{Publish: httpx.Limit{Concurrent: 8, PerClient: 2, MaxWait: 20 * time.Millisecond}})
	})
	ts.store.mu.Lock()
	ts.store.hold, ts.store.entered = hold, entered
	ts.store.mu.Unlock()
	var wg sync.WaitGroup
	for _, v := range []string{"1.0.0", "1.0.1"} {
		wg.Go(func() {
			ts.do(t, call{method: http.MethodPut, path: "/api/v1/catalogs/example-functions/versions/" + v, token: "secret", body: cat})
		})
	}
	<-entered
	<-entered
	rec := ts.do(t, call{method: http.MethodPut, path: "/api/v1/catalogs/example-functions/versions/1.0.2", token: "secret", body: cat})
	if rec.Code != http.StatusTooManyRequests || !strings.Contains(rec.Body.String(), "in flight") {
		t.Errorf("a third publish of one publisher: %d %s, want 429", rec.Code, rec.Body)
	}
	def := readExample(t, "../examples/definition.yaml")
	if rec := ts.do(t, call{method: http.MethodPut, path: "/api/v1/definitions/fn.example.com/SetLabels", token: "other", body: def}); rec.Code == http.StatusTooManyRequests {
		t.Errorf("another publisher meanwhile: %d %s", rec.Code, rec.Body)
	}
	close(hold)
	wg.Wait()
}
