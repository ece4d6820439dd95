package faults

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/krm-catalog/krm-catalog/catalog/catalogtest"
)

// TestSoak runs serve for KRM_CATALOG_SOAK (a duration, such as 60s) at the benchmark's rate: 8
// keep-alive clients reading catalog.yaml as fast as it answers (BenchmarkCatalogYAMLThroughput's
// load), with searches at 20/s, a publish a second and a validation a second beside them, and
// requires 0 errors. Without the variable it is skipped, so that CI stays fast.
func TestSoak(t *testing.T) {
	spec := os.Getenv("KRM_CATALOG_SOAK")
	if spec == "" {
		t.Skip("set KRM_CATALOG_SOAK=60s to run the soak")
	}
	d, err := time.ParseDuration(spec)
	if err != nil || d <= 0 || d > 30*time.Minute {
		t.Fatalf("KRM_CATALOG_SOAK=%q: want a duration up to 30m", spec)
	}
	p, _, tok := embedded(t)
	ctx, stop := context.WithTimeout(context.Background(), d)
	defer stop()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	type class struct {
		name   string
		n      atomic.Int64
		failed atomic.Int64
		mu     sync.Mutex
		lat    []time.Duration
		first  string
	}
	classes := map[string]*class{}
	for _, n := range []string{"catalog.yaml", "search", "publish", "validate"} {
		classes[n] = &class{name: n}
	}
	record := func(c *class, r result, want int) {
		if ctx.Err() != nil && r.err != nil {
			return // the soak ended mid-request
		}
		c.n.Add(1)
		c.mu.Lock()
		c.lat = append(c.lat, r.took)
		c.mu.Unlock()
		if r.err != nil || r.status != want {
			if c.failed.Add(1) == 1 {
				c.mu.Lock()
				c.first = fmt.Sprintf("%d %v %s", r.status, r.err, r.body)
				c.mu.Unlock()
			}
		}
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for ctx.Err() == nil {
				record(classes["catalog.yaml"], request(ctx, client, http.MethodGet, p.url+"/catalogs/example-functions/catalog.yaml", "", nil), http.StatusOK)
			}
		})
	}
	every := func(interval time.Duration, f func(i int)) {
		wg.Go(func() {
			tick := time.NewTicker(interval)
			defer tick.Stop()
			for i := 0; ; i++ {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
					f(i)
				}
			}
		})
	}
	every(50*time.Millisecond, func(int) {
		record(classes["search"], request(ctx, client, http.MethodGet, p.url+"/api/v1/functions?q=namespace", "", nil), http.StatusOK)
	})
	small := catalogtest.Catalog(catalogtest.Options{Name: "soak", Functions: 20})
	every(time.Second, func(i int) {
		record(classes["publish"], request(ctx, client, http.MethodPut, fmt.Sprintf("%s/api/v1/catalogs/soak/versions/1.0.%d", p.url, i), tok, small), http.StatusCreated)
	})
	every(time.Second, func(int) {
		record(classes["validate"], request(ctx, client, http.MethodPost, p.url+"/api/v1/validate", "", small), http.StatusOK)
	})
	wg.Wait()
	rss := peakRSS(t, p.cmd.Process.Pid)
	var errors int64
	for _, n := range []string{"catalog.yaml", "search", "publish", "validate"} {
		c := classes[n]
		errors += c.failed.Load()
		t.Logf("%-12s %8d requests (%7.0f/s), p50 %8s, p99 %8s, %d errors %s", n, c.n.Load(), float64(c.n.Load())/d.Seconds(),
			percentile(c.lat, 0.5).Round(time.Microsecond), percentile(c.lat, 0.99).Round(time.Microsecond), c.failed.Load(), c.first)
	}
	t.Logf("serve peak RSS %d MiB over %s", rss>>20, d)
	if errors > 0 {
		t.Errorf("%d errors during the soak; want 0", errors)
	}
}
