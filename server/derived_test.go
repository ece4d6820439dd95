package server

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/krm-catalog/krm-catalog/internal/httpx"
	"github.com/krm-catalog/krm-catalog/store"
)

func (f *fakeStore) readCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reads
}

// TestDerivedDefinitionCachedByDigest: a generated definition.yaml is generated once a change of
// what it is generated from, and kept whatever its size within store.MaxDerivedBytes, even above
// the quarter of the cache other content is held to. Before, one too large for that quarter was
// generated again on every GET.
func TestDerivedDefinitionCachedByDigest(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, func(c *Config) { c.Cache = NewContentCache(16 << 20) })
	ts.cache.setLive(true)
	big := []byte("apiVersion: config.kubernetes.io/v1alpha1\nkind: KRMFunctionDefinition\nspec:\n  default:\n" + strings.Repeat("    - - 0\n", 300_000))
	ts.store.mu.Lock()
	ts.store.derived = map[string][]byte{"dense.example.com/Dense": big}
	ts.store.mu.Unlock()
	path := "/functions/dense.example.com/Dense/definition.yaml"
	for range 5 {
		rec := ts.do(t, call{path: path})
		if rec.Code != http.StatusOK || !bytes.Equal(rec.Body.Bytes(), big) || rec.Header().Get("X-Definition-Derived") == "" {
			t.Fatalf("GET %s: %d, %d bytes", path, rec.Code, rec.Body.Len())
		}
	}
	if n := ts.store.readCount(); n != 1 {
		t.Errorf("%d generations for 5 GETs of an unchanged definition; want 1", n)
	}
	changed := append([]byte(nil), big...)
	changed = append(changed, "    - - 1\n"...)
	ts.store.mu.Lock()
	ts.store.derived["dense.example.com/Dense"] = changed
	ts.store.mu.Unlock()
	if rec := ts.do(t, call{path: path}); !bytes.Equal(rec.Body.Bytes(), changed) {
		t.Error("a changed source served the old generated definition")
	}
	if n := ts.store.readCount(); n != 2 {
		t.Errorf("%d generations after a change; want 2", n)
	}
}

// TestFunctionCachedByDigest: GET /api/v1/functions/GROUP/KIND reads the function once a change
// of its entries; each request asks for the digest alone. Before, every request read and encoded
// every entry (a second and 4 MB for a dense one).
func TestFunctionCachedByDigest(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, nil)
	var first []byte
	for i := range 5 {
		rec := ts.do(t, call{path: "/api/v1/functions/fn.example.com/SetNamespace"})
		if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"kind":"SetNamespace"`) {
			t.Fatalf("GET: %d %s", rec.Code, rec.Body)
		}
		if i == 0 {
			first = rec.Body.Bytes()
		} else if !bytes.Equal(first, rec.Body.Bytes()) {
			t.Fatal("a cached answer differs from the first")
		}
	}
	if n := ts.store.readCount(); n != 1 {
		t.Errorf("%d reads for 5 GETs of an unchanged function; want 1", n)
	}
	ts.store.mu.Lock()
	ts.store.fns[0].Description = "changed"
	ts.store.mu.Unlock()
	if rec := ts.do(t, call{path: "/api/v1/functions/fn.example.com/SetNamespace"}); !strings.Contains(rec.Body.String(), `"description":"changed"`) {
		t.Errorf("a changed function served from the cache: %s", rec.Body)
	}
	if rec := ts.do(t, call{path: "/api/v1/functions/fn.example.com/Missing"}); rec.Code != http.StatusNotFound {
		t.Errorf("an unknown function: %d", rec.Code)
	}
}

// TestTooLargeIsRefused: the store's refusal of a publish whose generated form would be too
// large answers 413.
func TestTooLargeIsRefused(t *testing.T) {
	t.Parallel()
	status, msg, _ := statusOf(store.Errorf(store.ErrTooLarge, "the definition.yaml generated for function a/B would be larger than 4.0 MiB, the limit"))
	if status != http.StatusRequestEntityTooLarge || !strings.Contains(msg, "4.0 MiB") {
		t.Errorf("ErrTooLarge answers %d %q, want 413 with the limit", status, msg)
	}
}

// TestProposalsListBounded: the list of a catalog's proposals leaves their definitions out (each
// is one GET away), is read once a change, and is limited per client as searches are. Before,
// five proposals of 256 KiB made each anonymous GET a 1.3 MB answer read from the database, and
// 64 clients pulled 2.4 GB in 15 s.
func TestProposalsListBounded(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, func(c *Config) {
		c.Limiters = NewLimiters(Limits{Search: httpx.Limit{Rate: 0.001, Burst: 8}})
	})
	ts.publishExample(t)
	ts.store.mu.Lock()
	for i := range 5 {
		ts.store.proposals = append(ts.store.proposals, store.Proposal{ID: int64(i + 1), Catalog: "example-functions", Proposer: "other.example.com",
			Group: "fn.other.example.com", Kind: "Big", Status: store.ProposalOpen, Definition: strings.Repeat("# padding\n", 25_000)})
	}
	ts.store.mu.Unlock()
	path := "/api/v1/catalogs/example-functions/proposals"
	var codes []int
	for range 10 {
		rec := ts.do(t, call{path: path})
		codes = append(codes, rec.Code)
		if rec.Code == http.StatusOK && (rec.Body.Len() > 8<<10 || strings.Contains(rec.Body.String(), "padding") || strings.Count(rec.Body.String(), `"id":`) != 5) {
			t.Fatalf("the list: %d bytes; want five proposals without their definitions", rec.Body.Len())
		}
	}
	if n := ts.store.readCount(); n != 1 {
		t.Errorf("%d reads of an unchanged list; want 1", n)
	}
	if codes[0] != http.StatusOK || codes[9] != http.StatusTooManyRequests {
		t.Errorf("statuses %v; want the burst of 8 answered, then 429", codes)
	}
	if rec := ts.do(t, call{path: path + "/1"}); !strings.Contains(rec.Body.String(), "padding") {
		t.Errorf("one proposal: %d, without its definition", rec.Code)
	}
}

// TestLargeDownloadsPaced: a client reading large answers spends its downloads budget by their
// size; small answers cost nothing, and another client has its own budget. Before, eight clients
// reading a generated definition of megabytes as fast as they could took every core.
func TestLargeDownloadsPaced(t *testing.T) {
	t.Parallel()
	ts := newTestServer(t, func(c *Config) {
		c.Limiters = NewLimiters(Limits{Downloads: httpx.Limit{Rate: 0.001, Burst: 8}})
	})
	big := []byte("apiVersion: config.kubernetes.io/v1alpha1\nkind: KRMFunctionDefinition\n# " + strings.Repeat("x", 1<<20-200) + "\n") // 4 units of 256 KiB
	ts.store.mu.Lock()
	ts.store.derived = map[string][]byte{"big.example.com/Big": big}
	ts.store.mu.Unlock()
	path := "/functions/big.example.com/Big/definition.yaml"
	var codes []int
	for range 3 {
		codes = append(codes, ts.do(t, call{path: path}).Code)
	}
	if codes[0] != http.StatusOK || codes[1] != http.StatusOK || codes[2] != http.StatusTooManyRequests {
		t.Errorf("three reads of 1 MiB with a budget of 2 MiB: %v; want 200, 200, 429", codes)
	}
	ts.publishExample(t)
	for range 20 {
		if rec := ts.do(t, call{path: "/catalogs/example-functions/catalog.yaml"}); rec.Code != http.StatusOK {
			t.Fatalf("a small catalog.yaml after the budget is spent: %d", rec.Code)
		}
	}
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.RemoteAddr = "198.51.100.9:1"
	rec := httptest.NewRecorder()
	ts.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Errorf("another client: %d", rec.Code)
	}
}
