package server

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

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
