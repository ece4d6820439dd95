package e2e

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/krm-catalog/krm-catalog/catalog/catalogtest"
	"github.com/krm-catalog/krm-catalog/store"
	"github.com/krm-catalog/krm-catalog/store/storetest"
)

// BenchmarkFunctionPage renders function pages with 10,000 functions in the database and reports
// the p95, against GET /api/v1/functions/{group}/{kind} for the same function (the same store
// reads, as JSON, without the page) as the baseline. Target: p95 under 10 ms. Run it with
//
//	go test ./e2e -run '^$' -bench FunctionPage -benchtime 1x
func BenchmarkFunctionPage(b *testing.B) {
	s := startService(b, storetest.NewDatabase(b))
	if _, _, err := s.store.CreateToken(context.Background(), "example.com", "bench"); err != nil {
		b.Fatal(err)
	}
	// 50 catalogs of 200 functions, straight through the store: 10,000 functions
	seedCatalogs(b, s.store, 0, 50)
	if res, err := s.store.SearchFunctions(context.Background(), store.SearchQuery{Limit: 1}); err != nil || res.Total != 10_000 {
		b.Fatalf("seeded %d functions (%v), want 10,000", res.Total, err)
	}
	// functions across the groups, of each runtime (the generator cycles container, exec, starlark)
	var paths []string
	for i := range 30 {
		paths = append(paths, fmt.Sprintf("/functions/team%04d.example.com/%s", (i*7)%50, catalogtest.Kind((i*37)%200)))
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	for _, p := range paths { // warm up: connections, plans, page buffers
		timed(b, client, s.url+p)
		timed(b, client, s.url+"/api/v1"+p)
	}
	var page, api []time.Duration
	for b.Loop() {
		for i := range 600 {
			p := paths[i%len(paths)]
			// alternate, so that drift in the machine's load hits both sides alike
			page = append(page, timed(b, client, s.url+p))
			api = append(api, timed(b, client, s.url+"/api/v1"+p))
		}
	}
	q := func(d []time.Duration, f float64) float64 {
		slices.Sort(d)
		return float64(d[int(f*float64(len(d)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(q(page, 0.5), "ms-p50")
	b.ReportMetric(q(page, 0.95), "ms-p95")
	b.ReportMetric(q(page, 0.99), "ms-p99")
	b.ReportMetric(q(api, 0.95), "ms-api-p95")
	b.ReportMetric(q(page, 0.95)/q(api, 0.95), "x-api-p95")
}
