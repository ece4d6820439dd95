package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/krm-catalog/krm-catalog/catalog"
	"github.com/krm-catalog/krm-catalog/internal/testcatalog"
	"github.com/krm-catalog/krm-catalog/store"
	"github.com/krm-catalog/krm-catalog/store/storetest"
)

// The service benchmarks. Run them with
//
//	go test ./e2e -run '^$' -bench . -benchtime 1x
//
// Each prints its figure and a ratio against a baseline measured in the same run.

// load fetches url from `clients` keep-alive connections for d and returns requests per second.
func load(b *testing.B, client *http.Client, url string, clients int, d time.Duration) float64 {
	b.Helper()
	var n atomic.Int64
	var failed atomic.Value
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				resp, err := client.Get(url)
				if err != nil {
					failed.Store(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					failed.Store(fmt.Errorf("status %d", resp.StatusCode))
					return
				}
				n.Add(1)
			}
		})
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	return float64(n.Load()) / d.Seconds()
}

// BenchmarkCatalogYAMLThroughput compares GET /catalogs/{name}/catalog.yaml with a bare net/http
// handler that writes the same bytes from memory. Target: at least 0.8×.
func BenchmarkCatalogYAMLThroughput(b *testing.B) {
	s := startService(b, storetest.NewDatabase(b))
	tok := benchToken(b, s)
	data := exampleCatalogB(b)
	if r := doB(b, http.MethodPut, s.url+"/api/v1/catalogs/example-functions/versions/1.0.0", tok, data); r != http.StatusCreated {
		b.Fatalf("publish: %d", r)
	}
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/yaml")
		_, _ = w.Write(data)
	}))
	defer plain.Close()
	const clients = 8
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}}
	load(b, client, s.url+"/catalogs/example-functions/catalog.yaml", clients, 300*time.Millisecond) // warm up
	var served, bare []float64
	for b.Loop() {
		// alternate, so that drift in the machine's load hits both sides alike
		for range 3 {
			served = append(served, load(b, client, s.url+"/catalogs/example-functions/catalog.yaml", clients, time.Second))
			bare = append(bare, load(b, client, plain.URL, clients, time.Second))
		}
	}
	ms, mb := median(served), median(bare)
	b.ReportMetric(ms, "req/s-service")
	b.ReportMetric(mb, "req/s-bare")
	b.ReportMetric(ms/mb, "x-bare")
}

// BenchmarkSearchLatency searches 10,000 indexed function versions through the API and reports the
// p95, with the p95 of GET /healthz over the same connections as the baseline. Target: p95 < 20 ms.
func BenchmarkSearchLatency(b *testing.B) {
	db := storetest.NewDatabase(b)
	s := startService(b, db)
	benchToken(b, s)
	// 50 catalogs of 200 functions, one version each: 10,000 function versions
	for c := range 50 {
		name := fmt.Sprintf("catalog-%02d", c)
		data := testcatalog.Catalog(testcatalog.Options{Name: name, Functions: 200, Group: fmt.Sprintf("team%02d.example.com", c)})
		docs, _ := catalog.Decode("c.yaml", data)
		cat, _ := catalog.DecodeCatalog(docs[0])
		if _, _, err := s.store.PublishCatalog(context.Background(), store.PublishCatalogParams{
			Name: name, Version: "1.0.0", Publisher: "example.com", Content: data, Document: docs[0], Catalog: cat,
		}); err != nil {
			b.Fatal(err)
		}
	}
	queries := []string{
		"q=namespace", "q=set+lab", "q=validator", "q=image&runtime=exec", "q=polic", "q=ensure+secrets",
		"tag=security", "q=network&tag=networking", "publisher=example.com&q=generate", "q=replicas&limit=50", "", "q=remove",
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	var search, baseline []time.Duration
	perQuery := map[string][]time.Duration{}
	for b.Loop() {
		for i := range 600 {
			q := queries[i%len(queries)]
			d := timed(b, client, s.url+"/api/v1/functions?"+q)
			perQuery[q] = append(perQuery[q], d)
			search = append(search, d)
			baseline = append(baseline, timed(b, client, s.url+"/healthz"))
		}
	}
	for _, q := range queries { // with -v: which queries make the tail
		d := perQuery[q]
		slices.Sort(d)
		b.Logf("%-40q p50 %6.2f ms  p95 %6.2f ms", q, float64(d[len(d)/2].Microseconds())/1000, float64(d[len(d)*95/100].Microseconds())/1000)
	}
	p := func(d []time.Duration, q float64) float64 {
		slices.Sort(d)
		return float64(d[int(q*float64(len(d)-1))].Microseconds()) / 1000
	}
	b.ReportMetric(p(search, 0.5), "ms-p50")
	b.ReportMetric(p(search, 0.95), "ms-p95")
	b.ReportMetric(p(search, 0.99), "ms-p99")
	b.ReportMetric(p(search, 0.95)/p(baseline, 0.95), "x-healthz-p95")
}

// BenchmarkPublish100 publishes 100-function catalogs (each a new version) and reports the median
// and p95 latency, against POST /api/v1/validate of the same bytes (everything but the database)
// as the baseline. Target: under 100 ms.
func BenchmarkPublish100(b *testing.B) {
	s := startService(b, storetest.NewDatabase(b))
	tok := benchToken(b, s)
	data := testcatalog.Catalog(testcatalog.Options{Name: "hundred", Functions: 100})
	var publish, validate []time.Duration
	v := 0
	for b.Loop() {
		for range 30 {
			v++
			start := time.Now()
			if r := doB(b, http.MethodPut, fmt.Sprintf("%s/api/v1/catalogs/hundred/versions/1.0.%d", s.url, v), tok, data); r != http.StatusCreated {
				b.Fatalf("publish: %d", r)
			}
			publish = append(publish, time.Since(start))
			start = time.Now()
			if r := doB(b, http.MethodPost, s.url+"/api/v1/validate", "", data); r != http.StatusOK {
				b.Fatalf("validate: %d", r)
			}
			validate = append(validate, time.Since(start))
		}
	}
	slices.Sort(publish)
	slices.Sort(validate)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(publish[len(publish)/2]), "ms-median")
	b.ReportMetric(ms(publish[len(publish)*95/100]), "ms-p95")
	b.ReportMetric(ms(publish[len(publish)/2])/ms(validate[len(validate)/2]), "x-validate-only")
}

func timed(b *testing.B, client *http.Client, url string) time.Duration {
	start := time.Now()
	resp, err := client.Get(url)
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b.Fatalf("%s: %d", url, resp.StatusCode)
	}
	return time.Since(start)
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

func benchToken(b *testing.B, s *service) string {
	tok, _, err := s.store.CreateToken(context.Background(), "example.com", "bench")
	if err != nil {
		b.Fatal(err)
	}
	return tok
}

func exampleCatalogB(b *testing.B) []byte {
	data, err := readFile("../examples/catalog.yaml")
	if err != nil {
		b.Fatal(err)
	}
	return data
}

func doB(b *testing.B, method, url, token string, body []byte) int {
	req, err := http.NewRequest(method, url, bytesReader(body))
	if err != nil {
		b.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}
