package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unicode"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/krm-catalog/krm-catalog/catalog/catalogtest"
	"github.com/krm-catalog/krm-catalog/server"
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
// handler that writes the same body from memory (x-bare; target: at least 0.95×), and with one that
// writes the service's nine headers too (x-bare-same-headers: what is left is routing, middleware
// and the cache).
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
	// The same response as the service's, headers and all (but Date, which net/http writes):
	// against it the ratio is the cost of routing, middleware and the cache alone.
	resp, err := http.Get(s.url + "/catalogs/example-functions/catalog.yaml")
	if err != nil {
		b.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || string(body) != string(data) {
		b.Fatalf("catalog.yaml: %d, %v", resp.StatusCode, err)
	}
	header := resp.Header.Clone()
	header.Del("Date")
	same := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		for k, v := range header {
			h[k] = v
		}
		_, _ = w.Write(data)
	}))
	defer same.Close()
	const clients = 8
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}}
	load(b, client, s.url+"/catalogs/example-functions/catalog.yaml", clients, 300*time.Millisecond) // warm up
	var served, bare, sameHeaders []float64
	for b.Loop() {
		// alternate, so that drift in the machine's load hits all sides alike
		for range 3 {
			served = append(served, load(b, client, s.url+"/catalogs/example-functions/catalog.yaml", clients, time.Second))
			bare = append(bare, load(b, client, plain.URL, clients, time.Second))
			sameHeaders = append(sameHeaders, load(b, client, same.URL, clients, time.Second))
		}
	}
	ms, mb, mh := median(served), median(bare), median(sameHeaders)
	b.ReportMetric(ms, "req/s-service")
	b.ReportMetric(mb, "req/s-bare")
	b.ReportMetric(mh, "req/s-bare-same-headers")
	b.ReportMetric(ms/mb, "x-bare")
	b.ReportMetric(ms/mh, "x-bare-same-headers")
}

// searchShapes are the searches BenchmarkSearchLatency makes: words, prefixes, tags, runtime,
// publisher, and the empty browse. Over the generated catalogs, "namespace", "validator", "image",
// "generate" and "network" each match a quarter to a third of all functions.
var searchShapes = []string{
	"q=namespace", "q=set+lab", "q=validator", "q=image&runtime=exec", "q=polic", "q=ensure+secrets",
	"tag=security", "q=network&tag=networking", "publisher=example.com&q=generate", "q=replicas&limit=50", "", "q=remove",
}

// searchSizes are the catalog sizes BenchmarkSearchLatency measures, in function versions:
// KRM_CATALOG_BENCH_SEARCH_SIZES, a comma-separated list of multiples of 200 ("10000,100000"), or
// 10,000 alone, which keeps .ci/run fast. Up to maxPublishedSize, seeding goes through the store
// as a publish does (0.3-0.5 s per 200 functions here); above, the functions published are copied
// in SQL (cloneFunctions).
func searchSizes(b *testing.B) []int {
	env := os.Getenv("KRM_CATALOG_BENCH_SEARCH_SIZES")
	if env == "" {
		return []int{10_000}
	}
	var sizes []int
	for _, f := range strings.Split(env, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 || n%200 != 0 {
			b.Fatalf("KRM_CATALOG_BENCH_SEARCH_SIZES: %q is not a positive multiple of 200", f)
		}
		sizes = append(sizes, n)
	}
	return sizes
}

// maxPublishedSize is the largest size seeded by publishing.
const maxPublishedSize = 100_000

// BenchmarkSearchLatency searches catalogs of each size (catalogs of 200 functions, one version
// each) through the API: 600 searches over 12 query shapes, each followed by GET /healthz over the
// same connections. Then, on the same database, it runs the previous search algorithm (rank and
// count every match, straight on the database) over the same shapes (previousBudget bounds how
// long), as the baseline. It reports the p50, p95 and p99 of the searches, their p95 against the
// health check's and the previous algorithm's, and logs the percentiles per shape.
// KRM_CATALOG_BENCH_SEARCH_PREVIOUS=off leaves the baseline out. Target: p95 < 20 ms at 1,000,000
// function versions.
func BenchmarkSearchLatency(b *testing.B) {
	for _, size := range searchSizes(b) {
		b.Run(fmt.Sprintf("versions=%d", size), func(b *testing.B) {
			dbURL := storetest.NewDatabase(b)
			s := startService(b, dbURL)
			db := openPool(b, dbURL) // the benchmark's own SQL: the store keeps its pool to itself
			benchToken(b, s)
			if size <= maxPublishedSize {
				seedCatalogs(b, s.store, 0, size/200)
			} else {
				if size%maxPublishedSize != 0 {
					b.Fatalf("a size above %d must be a multiple of it", maxPublishedSize)
				}
				seedCatalogs(b, s.store, 0, maxPublishedSize/200)
				cloneFunctions(b, db, size/maxPublishedSize-1)
			}
			// The seed's writes (its rows, their indexes, the vacuum's hint bits: 1.5 GB at a
			// million) go to disk before the first search, so that what is measured is searching,
			// not the writeback of the seed.
			for _, sql := range []string{"VACUUM ANALYZE functions, function_facets", "CHECKPOINT"} {
				if _, err := db.Exec(context.Background(), sql); err != nil {
					b.Fatal(err)
				}
			}
			syscall.Sync()
			measureSearch(b, s, db)
		})
	}
}

// previousBudget bounds how long the previous algorithm is measured per size, once each shape has
// run: at 1,000,000 functions one of its searches takes seconds.
const previousBudget = time.Minute

// previousRuns is how many searches of the previous algorithm are measured at most.
const previousRuns = 120

// measureSearch runs the searches of BenchmarkSearchLatency against s, then the previous algorithm
// on db, and reports their figures. The two do not overlap: the previous algorithm's searches read
// every match (seconds each at a million functions), and run among the measured ones they took a
// core from them and pushed their pages out of PostgreSQL's buffers, which made the searches they
// are compared with slower. Both start with one unmeasured search of each shape.
func measureSearch(b *testing.B, s *service, db *pgxpool.Pool) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	for _, q := range searchShapes { // warm up: connections, the first plans
		timed(b, client, s.url+"/api/v1/functions?"+q)
	}
	var search, health []time.Duration
	perShape := map[string][]time.Duration{}
	for b.Loop() {
		for i := range 600 {
			q := searchShapes[i%len(searchShapes)]
			d := timed(b, client, s.url+"/api/v1/functions?"+q)
			perShape[q] = append(perShape[q], d)
			search = append(search, d)
			health = append(health, timed(b, client, s.url+"/healthz"))
		}
	}
	var previous []time.Duration
	previousPerShape := map[string][]time.Duration{}
	if os.Getenv("KRM_CATALOG_BENCH_SEARCH_PREVIOUS") != "off" {
		for _, q := range searchShapes { // warm up, as above
			previousSearch(b, db, q)
		}
		start := time.Now()
		for i := range previousRuns {
			if i >= len(searchShapes) && time.Since(start) > previousBudget {
				break
			}
			q := searchShapes[i%len(searchShapes)]
			d := previousSearch(b, db, q)
			previousPerShape[q] = append(previousPerShape[q], d)
			previous = append(previous, d)
		}
		b.Logf("previous algorithm: %d searches in %.1f s", len(previous), time.Since(start).Seconds())
	}
	for _, q := range searchShapes {
		d := perShape[q]
		line := fmt.Sprintf("%-36q p50 %6.2f  p95 %6.2f  p99 %6.2f ms", q, quantileMS(d, 0.5), quantileMS(d, 0.95), quantileMS(d, 0.99))
		if p := previousPerShape[q]; len(p) > 0 {
			line += fmt.Sprintf("   previous p50 %8.1f ms (%d)", quantileMS(p, 0.5), len(p))
		}
		b.Log(line)
	}
	b.Logf("%-36s p50 %6.2f  p95 %6.2f  p99 %6.2f ms", "all shapes", quantileMS(search, 0.5), quantileMS(search, 0.95), quantileMS(search, 0.99))
	b.ReportMetric(quantileMS(search, 0.5), "ms-p50")
	b.ReportMetric(quantileMS(search, 0.95), "ms-p95")
	b.ReportMetric(quantileMS(search, 0.99), "ms-p99")
	b.ReportMetric(quantileMS(search, 0.95)/quantileMS(health, 0.95), "x-healthz-p95")
	if len(previous) > 0 {
		b.Logf("%-36s p50 %6.2f  p95 %6.2f  p99 %6.2f ms", "previous algorithm", quantileMS(previous, 0.5), quantileMS(previous, 0.95), quantileMS(previous, 0.99))
		b.ReportMetric(quantileMS(previous, 0.95), "ms-previous-p95")
		b.ReportMetric(quantileMS(search, 0.95)/quantileMS(previous, 0.95), "x-previous-p95")
	}
}

// quantileMS returns the q-quantile of d in milliseconds; it sorts d.
func quantileMS(d []time.Duration, q float64) float64 {
	slices.Sort(d)
	return float64(d[int(q*float64(len(d)-1))].Microseconds()) / 1000
}

// openPool opens a pool of its own on databaseURL, closed when tb ends.
func openPool(tb testing.TB, databaseURL string) *pgxpool.Pool {
	tb.Helper()
	db, err := pgxpool.New(context.Background(), databaseURL)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(db.Close)
	return db
}

// previousSearch runs the search as the store did before tiers and capped counts, straight on the database, and
// returns how long it took: the page ranked with ts_rank over every match, and at the same time,
// on a second connection, the facets counted over every match (the total is the publisher
// facet's sum). It is the baseline that shows what the tiers and the capped counts change.
func previousSearch(b *testing.B, pool *pgxpool.Pool, rawQuery string) time.Duration {
	v, err := url.ParseQuery(rawQuery)
	if err != nil {
		b.Fatal(err)
	}
	var words []string
	for _, w := range strings.FieldsFunc(strings.ToLower(v.Get("q")), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		words = append(words, w+":*")
	}
	tsq := strings.Join(words, " & ")
	limit := 20
	if l := v.Get("limit"); l != "" {
		limit, _ = strconv.Atoi(l)
	}
	tags := append([]string{}, v["tag"]...)
	args := []any{pgx.QueryExecModeCacheDescribe, tsq, tags, v.Get("publisher"), v.Get("runtime"), limit}
	// filters on alias a, leaving out the facet skip
	filters := func(a, skip string) string {
		c := ""
		if len(tags) > 0 && skip != "tag" {
			c += " AND " + a + ".tags @> $2::text[]"
		}
		if v.Get("publisher") != "" && skip != "publisher" {
			c += " AND " + a + ".publisher = $3"
		}
		if v.Get("runtime") != "" && skip != "runtime" {
			c += " AND " + a + ".runtimes @> ARRAY[$4::text]"
		}
		return c
	}
	rank, match := "0::real", ""
	if tsq != "" {
		rank, match = "ts_rank(f.search, to_tsquery('english', $1))", " AND f.search @@ to_tsquery('english', $1)"
	}
	// every statement receives every argument, so each must name the type of each
	typed := " AND num_nulls($1::text, $2::text[], $3::text, $4::text, $5::int) >= 0"
	page := "SELECT f.fn_group, f.kind, f.description, " + rank + " AS rank FROM functions f WHERE cardinality(f.versions) > 0" +
		match + filters("f", "") + typed + " ORDER BY rank DESC, f.fn_group, f.kind LIMIT $5"
	var facets []string
	prefix, src, alias := "", "functions f", "f"
	if tsq != "" {
		prefix = "WITH m AS MATERIALIZED (SELECT f.publisher, f.tags, f.runtimes FROM functions f WHERE cardinality(f.versions) > 0" + match + ") "
		src, alias = "m", "m"
	}
	for i, f := range []struct{ name, value, from string }{
		{"publisher", alias + ".publisher", src},
		{"tag", "t", src + ", unnest(" + alias + ".tags) AS t"},
		{"runtime", "r", src + ", unnest(" + alias + ".runtimes) AS r"},
	} {
		others := filters(alias, f.name)
		if tsq == "" && others == "" {
			facets = append(facets, fmt.Sprintf("SELECT %d, value, count FROM facet_totals WHERE facet = '%s' AND count > 0", i, f.name))
			continue
		}
		where := " WHERE true" + others
		if tsq == "" {
			where = " WHERE cardinality(f.versions) > 0" + others
		}
		facets = append(facets, fmt.Sprintf("SELECT %d, %s, count(*) FROM %s%s GROUP BY 2", i, f.value, f.from, where))
	}
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, sql := range []string{page, prefix + "SELECT * FROM (" + strings.Join(facets, " UNION ALL ") + ") c WHERE true" + typed} {
		wg.Go(func() {
			rows, err := pool.Query(context.Background(), sql, args...)
			if err == nil {
				for rows.Next() {
				}
				rows.Close()
				err = rows.Err()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		b.Fatalf("previous search %q: %v", rawQuery, err)
	}
	return time.Since(start)
}

// BenchmarkPublish100 publishes 100-function catalogs (each a new version) and reports the median
// and p95 latency, against POST /api/v1/validate of the same bytes (everything but the database)
// as the baseline. Target: under 100 ms. The publishes and validations follow each other as fast
// as they can, far above the per-client rates the service allows (2 publishes a second after a
// burst of 20): the limits are raised here, so that what is measured is a publish, not the wait
// for a turn (the limiters have their own tests).
func BenchmarkPublish100(b *testing.B) {
	s := startServiceWith(b, storetest.NewDatabase(b), func(c *server.Config) {
		l := server.DefaultLimits(runtime.GOMAXPROCS(0))
		l.Publish.Rate, l.Publish.Burst = 1e6, 1e6
		l.Validate.Rate, l.Validate.Burst = 1e6, 1e6
		c.Limiters = server.NewLimiters(l)
	})
	tok := benchToken(b, s)
	data := catalogtest.Catalog(catalogtest.Options{Name: "hundred", Functions: 100})
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
	data, err := readFile("../catalog/testdata/reference/catalog.yaml")
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
