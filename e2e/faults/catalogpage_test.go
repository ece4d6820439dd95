package faults

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/krm-catalog/krm-catalog/catalog"
	"github.com/krm-catalog/krm-catalog/catalog/catalogtest"
	"github.com/krm-catalog/krm-catalog/internal/pgcluster"
	"github.com/krm-catalog/krm-catalog/internal/testenv"
	"github.com/krm-catalog/krm-catalog/migrations"
	"github.com/krm-catalog/krm-catalog/store"
)

// TestCatalogPageFlood has 8 anonymous clients, each from its own loopback address, read the
// website page of a 9,000-function catalog for 12 s, while a ninth asks /healthz. It prints serve's
// peak memory and the median /healthz latency; the page must stay under 400 MiB and /healthz under
// 100 ms. The page of a large catalog comes from a cache keyed by the stored version, a page of it
// at a time, so neither memory nor CPU per request follows the catalog's size.
//
// It does not run in parallel with the other fault tests, whose load would be measured with it.
func TestCatalogPageFlood(t *testing.T) {
	requirePostgres(t)
	url := seedLargeCatalog(t, leanCatalog(9000))
	p := startServe(t, nil, "--database-url", url)
	page := p.url + "/catalogs/big-functions"

	ctx, stop := context.WithTimeout(context.Background(), 12*time.Second)
	defer stop()
	var counts statusCounter
	var wg sync.WaitGroup
	for i := range 8 {
		// one address per client: each has its own budget, as distinct visitors would
		local := &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(2+i))}
		client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DialContext: (&net.Dialer{LocalAddr: local}).DialContext}}
		wg.Go(func() {
			for n := 0; ctx.Err() == nil && n < 100_000; n++ {
				r := request(ctx, client, http.MethodGet, page, "", nil)
				if ctx.Err() != nil {
					return
				}
				counts.add(r)
			}
		})
	}
	var health []time.Duration
	wg.Go(func() {
		client := &http.Client{Timeout: 10 * time.Second}
		for n := 0; ctx.Err() == nil && n < 10_000; n++ {
			r := request(context.Background(), client, http.MethodGet, p.url+"/healthz", "", nil)
			if r.err != nil || r.status != http.StatusOK {
				t.Errorf("/healthz: %d %v", r.status, r.err)
				return
			}
			health = append(health, r.took)
			time.Sleep(20 * time.Millisecond)
		}
	})
	wg.Wait()
	rss := peakRSS(t, p.cmd.Process.Pid)
	med := percentile(health, 0.5)
	t.Logf("the page of a %d-byte, 9,000-function catalog from 8 clients for 12 s: statuses %v, errors %d; serve peak RSS %d MiB; /healthz median %s p95 %s over %d",
		catalogBytes, counts.byStatus, len(counts.errors), rss>>20, med.Round(time.Microsecond), percentile(health, 0.95).Round(time.Microsecond), len(health))
	if rss >= 400<<20 {
		t.Errorf("serve peaked at %d MiB resident; want under 400 MiB", rss>>20)
	}
	if med >= 100*time.Millisecond {
		t.Errorf("/healthz median %s under the load; want under 100 ms", med)
	}
	if counts.byStatus[http.StatusOK] == 0 {
		t.Error("no page was served")
	}
	for status, n := range counts.byStatus {
		if status != http.StatusOK && status != http.StatusTooManyRequests {
			t.Errorf("%d answers of status %d", n, status)
		}
	}
}

// catalogBytes is the size of the catalog TestCatalogPageFlood reads, for its report.
var catalogBytes = len(leanCatalog(9000))

// seedLargeCatalog publishes data as version 1.0.0 of catalog big-functions of example.com through
// the store, into a cluster of the test's own, and returns the database's URL. Through the API, a
// publish of 9,000 functions comes close to the service's 60 s write deadline on a loaded machine;
// the store has no such bound, and serve's memory then measures the page alone.
func seedLargeCatalog(t *testing.T, data []byte) string {
	t.Helper()
	ctx := context.Background()
	cluster, err := pgcluster.Start(ctx, pgcluster.Options{DataDir: filepath.Join(dataDir(t), "pg")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.Stop(context.Background()) })
	testenv.ExecSQL(t, cluster.URL("postgres"), "CREATE DATABASE krm_catalog")
	url := cluster.URL("krm_catalog")
	if err := migrations.Up(ctx, url); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, _, err := st.CreateToken(ctx, "example.com", "seed"); err != nil {
		t.Fatal(err)
	}
	docs, findings := catalog.Decode("big.yaml", data)
	if findings.HasErrors() || len(docs) != 1 {
		t.Fatalf("the generated catalog does not decode: %v", findings)
	}
	cat, err := catalog.DecodeCatalog(docs[0])
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, _, err := st.PublishCatalog(ctx, store.PublishCatalogParams{Name: "big-functions", Version: "1.0.0", Publisher: "example.com",
		Content: data, Document: docs[0], Catalog: cat}); err != nil {
		t.Fatal(err)
	}
	t.Logf("published the %d-byte catalog through the store in %s", len(data), time.Since(start).Round(time.Millisecond))
	return url
}

// leanCatalog is a catalog of n functions of about 400 bytes each, the shape of a large real one
// (testcatalog's functions carry full schemas, 1.9 KB each, and 9,000 of them pass the body limit).
func leanCatalog(n int) []byte {
	var b strings.Builder
	b.WriteString("apiVersion: config.kubernetes.io/v1alpha1\nkind: KRMFunctionCatalog\nmetadata:\n  name: big-functions\nspec:\n  krmFunctions:\n")
	for i := range n {
		kind := catalogtest.Kind(i)
		fmt.Fprintf(&b, `    - group: big.example.com
      names: {kind: %s}
      description: Function %d of a large catalog, listed on its page a hundred at a time.
      publisher: example.com
      tags: [generated, large]
      versions:
        - name: v1
          schema: {openAPIV3Schema: {type: object}}
          runtime: {container: {image: "registry.example.com/big/%s@sha256:%x"}}
`, kind, i, strings.ToLower(kind), sha256.Sum256([]byte(kind)))
	}
	return []byte(b.String())
}
