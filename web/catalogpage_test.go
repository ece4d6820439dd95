package web

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/krm-catalog/krm-catalog/catalog/catalogtest"
	"github.com/krm-catalog/krm-catalog/internal/httpx"
	"github.com/krm-catalog/krm-catalog/store"
)

// bigStore is the fake store with a catalog of n functions in place of the example.
func bigStore(t *testing.T, n int) *fakeStore {
	f := newFakeStore(t)
	data := catalogtest.Catalog(catalogtest.Options{Name: f.catalog.Name, Functions: n})
	f.content.Bytes, f.content.Digest = data, store.Digest(data)
	f.catalog.Latest.Digest, f.catalog.Latest.Size, f.catalog.Latest.Functions = f.content.Digest, len(data), n
	return f
}

// TestCatalogPagePaged: a large catalog's page lists a page of its functions, with links to the
// others, and decodes the catalog once for any number of requests.
func TestCatalogPagePaged(t *testing.T) {
	t.Parallel()
	f := bigStore(t, 250)
	h := newSite(t, Config{Store: f})
	tests := []struct {
		path   string
		status int
		want   []string
		absent []string
	}{
		{"/catalogs/example-functions", 200,
			[]string{"with 250 functions", "Functions 1 to 100 of 250.", catalogtest.Kind(0) + "<", catalogtest.Kind(99) + "<", `href="/catalogs/example-functions?page=2"`},
			[]string{catalogtest.Kind(100) + "<", `rel="prev"`}},
		{"/catalogs/example-functions?page=3", 200,
			[]string{"Functions 201 to 250 of 250.", catalogtest.Kind(249) + "<", `href="/catalogs/example-functions?page=2"`},
			[]string{catalogtest.Kind(199) + "<", `rel="next"`}},
		{"/catalogs/example-functions?version=1.0.0&page=2", 200,
			[]string{`href="/catalogs/example-functions?page=3&amp;version=1.0.0"`, `href="/catalogs/example-functions?version=1.0.0"`}, nil},
		{"/catalogs/example-functions?page=4", 404, []string{"there is no page 4"}, nil},
		{"/catalogs/example-functions?page=0", 400, []string{"page number"}, nil},
	}
	for _, tc := range tests {
		r := get(t, h, tc.path)
		if r.status != tc.status {
			t.Errorf("GET %s: %d, want %d", tc.path, r.status, tc.status)
		}
		checkBody(t, "GET "+tc.path, r.body, tc.want, tc.absent)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { get(t, h, "/catalogs/example-functions?page=2") })
	}
	wg.Wait()
	if n := f.contentReads.Load(); n != 1 {
		t.Errorf("the catalog's content was read %d times for %d pages, want once", n, len(tests)+8)
	}
}

// TestCatalogCacheBounded: the cache keeps what fits and drops the least recently used.
func TestCatalogCacheBounded(t *testing.T) {
	t.Parallel()
	fns := func(n int) []catalogFunction {
		out := make([]catalogFunction, n)
		for i := range out {
			out[i] = catalogFunction{Kind: fmt.Sprintf("K%d", i)}
		}
		return out
	}
	one := sizeOf(fns(10))
	c := newCatalogCache(2*one + one/2)
	loads := 0
	get := func(key string) {
		if _, err := c.functions(t.Context(), key, func(context.Context) ([]catalogFunction, error) { loads++; return fns(10), nil }); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []string{"a", "b", "a", "c", "a", "b"} {
		get(k)
	}
	// a, b, (a hit), c evicts b, (a hit), b evicts c
	if loads != 4 {
		t.Errorf("%d loads, want 4", loads)
	}
	if c.size > c.max {
		t.Errorf("the cache holds %d bytes over its bound of %d", c.size, c.max)
	}
}

// TestPagesLimited: the website answers 429 with Retry-After past a client's budget.
func TestPagesLimited(t *testing.T) {
	t.Parallel()
	h := newSite(t, Config{Store: newFakeStore(t), Pages: httpx.NewLimiter("page", httpx.Limit{Rate: 0.001, Burst: 2}),
		Search: httpx.NewLimiter("search", httpx.Limit{Rate: 0.001, Burst: 1})})
	var codes []int
	for _, p := range []string{"/catalogs", "/catalogs/example-functions", "/publishers/example.com", "/", "/?q=labels"} {
		codes = append(codes, get(t, h, p).status)
	}
	if diff := cmp.Diff([]int{200, 200, 429, 200, 429}, codes); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}
	r := get(t, h, "/catalogs")
	if r.header.Get("Retry-After") == "" || !strings.Contains(r.body, "Too many requests") {
		t.Errorf("a refused page: Retry-After %q, body %.200s", r.header.Get("Retry-After"), r.body)
	}
}

// checkBody reports each of want that body lacks, and each of absent that it has.
func checkBody(t *testing.T, what, body string, want, absent []string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(body, w) {
			t.Errorf("%s: page lacks %q", what, w)
		}
	}
	for _, a := range absent {
		if strings.Contains(body, a) {
			t.Errorf("%s: page has %q", what, a)
		}
	}
}
