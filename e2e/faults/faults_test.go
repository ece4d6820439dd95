package faults

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/krm-catalog/krm-catalog/catalog/catalogtest"
	"github.com/krm-catalog/krm-catalog/oci/registrytest"
)

func exampleCatalog(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("../../catalog/testdata/reference/catalog.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// embedded starts serve on its embedded database in a fresh data directory, with a token for
// example.com and the example catalog published as 1.0.0.
func embedded(t *testing.T, args ...string) (p *serveProc, dir, tok string) {
	t.Helper()
	requirePostgres(t)
	dir = dataDir(t)
	p = startServe(t, nil, append([]string{"--data-dir", dir}, args...)...)
	tok = token(t, "example.com", "--data-dir", dir)
	r := request(context.Background(), http.DefaultClient, http.MethodPut, p.url+"/api/v1/catalogs/example-functions/versions/1.0.0", tok, exampleCatalog(t))
	if r.err != nil || r.status != http.StatusCreated {
		t.Fatalf("publish: %d %v %s", r.status, r.err, r.body)
	}
	return p, dir, tok
}

// statusCounter counts the answers of a load.
type statusCounter struct {
	mu       sync.Mutex
	byStatus map[int]int
	errors   []string
	bad503   int // 503s without Retry-After or without saying the database is unavailable
}

func (c *statusCounter) add(r result) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byStatus == nil {
		c.byStatus = map[int]int{}
	}
	if r.err != nil {
		c.errors = append(c.errors, r.err.Error())
		return
	}
	c.byStatus[r.status]++
	if r.status == http.StatusServiceUnavailable && (r.header.Get("Retry-After") == "" || !bytes.Contains(r.body, []byte("database is unavailable"))) {
		c.bad503++
	}
}

// TestPostmasterKilledUnderLoad kills the embedded PostgreSQL's postmaster with SIGKILL while 8
// clients read, and checks that serve answers 503 (never 500) while it is down, starts a new
// postmaster within 30 s and takes a publish again, logging the death once. Before it was handled, every
// database-backed endpoint answered 500 and never recovered.
func TestPostmasterKilledUnderLoad(t *testing.T) {
	t.Parallel()
	p, dir, tok := embedded(t)
	var counts statusCounter
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	client := &http.Client{Timeout: 20 * time.Second}
	paths := []string{"/api/v1/catalogs", "/api/v1/catalogs/example-functions/versions", "/catalogs/example-functions/catalog.yaml"}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for n := 0; ctx.Err() == nil && n < 200000; n++ {
				r := request(ctx, client, http.MethodGet, p.url+paths[(i+n)%len(paths)], "", nil)
				if ctx.Err() != nil {
					return
				}
				counts.add(r)
			}
		})
	}
	time.Sleep(time.Second) // load before the kill
	pid := postmasterPID(t, filepath.Join(dir, "postgres"))
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	// a new postmaster, then answers from it: a publish is a write the dead server cannot take
	pgData := filepath.Join(dir, "postgres")
	for {
		if b, err := os.ReadFile(filepath.Join(pgData, "postmaster.pid")); err == nil && !strings.HasPrefix(string(b), fmt.Sprintf("%d\n", pid)) && strings.Contains(string(b), "ready") {
			break
		}
		if time.Since(killed) > 30*time.Second {
			t.Fatalf("no new postmaster within 30 s of the kill")
		}
		time.Sleep(50 * time.Millisecond)
	}
	restarted := time.Since(killed)
	for {
		r := request(context.Background(), client, http.MethodPut, p.url+"/api/v1/catalogs/example-functions/versions/1.0.1", tok, exampleCatalog(t))
		if r.status == http.StatusCreated {
			break
		}
		if time.Since(killed) > 40*time.Second {
			t.Fatalf("no publish accepted within 40 s of the kill: last %d %v %s", r.status, r.err, r.body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	took := time.Since(killed)
	p.waitStatus(t, "/readyz", http.StatusOK, 10*time.Second)
	time.Sleep(500 * time.Millisecond) // load after the recovery
	stop()
	wg.Wait()
	t.Logf("postmaster killed: restarted after %s, publishing again after %s; statuses %v; client errors %d",
		restarted.Round(time.Millisecond), took.Round(time.Millisecond), counts.byStatus, len(counts.errors))
	if counts.byStatus[http.StatusInternalServerError] > 0 {
		t.Errorf("%d answers were 500 during the outage; want 503", counts.byStatus[http.StatusInternalServerError])
	}
	if counts.bad503 > 0 {
		t.Errorf("%d 503s lacked Retry-After or the database message", counts.bad503)
	}
	if len(counts.errors) > 0 {
		t.Errorf("%d requests failed outright, e.g. %s", len(counts.errors), counts.errors[0])
	}
	logs := p.logs.String()
	t.Log(grepLines([]byte(logs), "postgres"))
	if n := strings.Count(logs, "server died"); n != 1 {
		t.Errorf("%d 'server died' lines for one death", n)
	}
	if n := strings.Count(logs, "answering 503"); n > 1 {
		t.Errorf("the outage took %d log lines to announce; want one", n)
	}
}

// TestDatabaseStalled stops PostgreSQL with SIGSTOP and checks that database-backed requests answer
// 503 within a few seconds, readiness fails within 2 s, cached catalog.yaml keeps answering, and
// all is well after SIGCONT. Before it was handled, search and the latest catalog.yaml hung for
// as long as the database was stopped.
func TestDatabaseStalled(t *testing.T) {
	t.Parallel()
	p, dir, _ := embedded(t)
	client := &http.Client{Timeout: 20 * time.Second}
	ctx := context.Background()
	pinned := p.url + "/catalogs/example-functions/1.0.0/catalog.yaml"
	if r := request(ctx, client, http.MethodGet, pinned, "", nil); r.status != http.StatusOK {
		t.Fatalf("pinned catalog.yaml: %d", r.status)
	}
	tree := processTree(postmasterPID(t, filepath.Join(dir, "postgres")))
	for _, pid := range tree {
		_ = syscall.Kill(pid, syscall.SIGSTOP)
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			for _, pid := range tree {
				_ = syscall.Kill(pid, syscall.SIGCONT)
			}
		}
	}
	defer resume()
	var wg sync.WaitGroup
	results := make([]result, 4)
	urls := []string{"/api/v1/catalogs", "/api/v1/functions?q=namespace", "/api/v1/catalogs/example-functions/versions", "/readyz"}
	for i, u := range urls {
		wg.Go(func() { results[i] = request(ctx, client, http.MethodGet, p.url+u, "", nil) })
	}
	cached := request(ctx, client, http.MethodGet, pinned, "", nil)
	wg.Wait()
	for i, r := range results {
		limit := 8 * time.Second
		if urls[i] == "/readyz" {
			limit = 3 * time.Second
		}
		if r.err != nil || r.status != http.StatusServiceUnavailable || r.took > limit {
			t.Errorf("%s with the database stopped: %d %v after %s; want 503 within %s", urls[i], r.status, r.err, r.took.Round(time.Millisecond), limit)
		} else {
			t.Logf("%s with the database stopped: 503 after %s", urls[i], r.took.Round(time.Millisecond))
		}
	}
	if cached.status != http.StatusOK || cached.took > time.Second {
		t.Errorf("cached catalog.yaml with the database stopped: %d after %s", cached.status, cached.took)
	}
	resume()
	took := p.waitStatus(t, "/api/v1/catalogs", http.StatusOK, 20*time.Second)
	t.Logf("answering again %s after SIGCONT", took.Round(time.Millisecond))
}

// TestRegistryDownDuringPublish publishes with serve --registry pointing at a registry that accepts
// connections and never answers, then at one that refuses them: the publish answers 502 within its
// deadline, publishes nothing, and holds no database connection while it waits. Before it was
// handled, the push ran inside the publish transaction with no deadline and hung.
func TestRegistryDownDuringPublish(t *testing.T) {
	t.Parallel()
	requirePostgres(t)
	ln := registrytest.SilentListener(t)
	dir := dataDir(t)
	p := startServe(t, nil, "--data-dir", dir, "--registry", ln.Addr().String()+"/krm", "--publish-timeout", "5s")
	tok := token(t, "example.com", "--data-dir", dir)
	client := &http.Client{Timeout: 30 * time.Second}
	ctx := context.Background()
	publishURL := p.url + "/api/v1/catalogs/example-functions/versions/1.0.0"
	done := make(chan result, 1)
	go func() { done <- request(ctx, client, http.MethodPut, publishURL, tok, exampleCatalog(t)) }()
	// while the push waits on the registry: no pooled connection held, reads answer
	time.Sleep(time.Second)
	metrics := request(ctx, client, http.MethodGet, p.url+"/metrics", "", nil)
	if !bytes.Contains(metrics.body, []byte("krm_catalog_db_pool_acquired_connections 0")) {
		t.Errorf("a database connection is held during the push:\n%s", grepLines(metrics.body, "krm_catalog_db_pool_acquired"))
	}
	if r := request(ctx, client, http.MethodGet, p.url+"/api/v1/catalogs", "", nil); r.status != http.StatusOK || r.took > time.Second {
		t.Errorf("a read during the push: %d after %s", r.status, r.took)
	}
	r := <-done
	if r.err != nil || r.status != http.StatusBadGateway || r.took > 10*time.Second {
		t.Fatalf("publish to a stalled registry: %d %v after %s; want 502 within 10 s: %s", r.status, r.err, r.took, r.body)
	}
	t.Logf("publish to a stalled registry: 502 after %s", r.took.Round(time.Millisecond))
	if v := request(ctx, client, http.MethodGet, p.url+"/api/v1/catalogs/example-functions/versions", "", nil); v.status != http.StatusNotFound {
		t.Errorf("a failed push published something: %d %s", v.status, v.body)
	}
	ln.Close() // now the registry refuses connections
	r = request(ctx, client, http.MethodPut, publishURL, tok, exampleCatalog(t))
	if r.status != http.StatusBadGateway || r.took > 10*time.Second {
		t.Errorf("publish to a registry that is down: %d after %s, want 502", r.status, r.took)
	}
}

func grepLines(b []byte, substr string) string {
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, substr) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// floodDocument is a valid catalog of nearly 4 MiB, the largest body serve accepts by default.
func floodDocument(t *testing.T) []byte {
	t.Helper()
	n := 3000
	for {
		doc := catalogtest.Catalog(catalogtest.Options{Name: "flood", Functions: n})
		if len(doc) <= 4<<20 {
			if len(doc) < 3<<20 {
				n += n / 4
				continue
			}
			return doc
		}
		n -= n / 10
	}
}

// TestValidateFlood has 16 clients post 4 MB documents to POST /api/v1/validate for 15 s while one
// reads a cached catalog.yaml, and checks that serve stays under 1 GiB resident, answers the flood
// with 200s and 429s only, and keeps answering catalog.yaml within tens of milliseconds of its
// latency without the flood, measured just before on the same machine. Before it was handled,
// 24 such clients grew serve to 3.0 GB and cut catalog.yaml throughput thirtyfold.
//
// It does not run in parallel with the other fault tests, whose load would be measured with it.
func TestValidateFlood(t *testing.T) {
	p, _, _ := embedded(t)
	doc := floodDocument(t)
	client := &http.Client{Timeout: 60 * time.Second}
	pinned := p.url + "/catalogs/example-functions/1.0.0/catalog.yaml"
	readFor := func(ctx context.Context) []time.Duration {
		var lat []time.Duration
		for ctx.Err() == nil {
			r := request(context.Background(), client, http.MethodGet, pinned, "", nil)
			if r.status != http.StatusOK {
				t.Errorf("catalog.yaml: %d %v", r.status, r.err)
				return lat
			}
			lat = append(lat, r.took)
			time.Sleep(5 * time.Millisecond)
		}
		return lat
	}
	quiet, stopQuiet := context.WithTimeout(context.Background(), 2*time.Second)
	baseline := percentile(readFor(quiet), 0.95)
	stopQuiet()

	ctx, stop := context.WithTimeout(context.Background(), 15*time.Second)
	defer stop()
	var counts statusCounter
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for n := 0; ctx.Err() == nil && n < 10000; n++ {
				r := request(ctx, client, http.MethodPost, p.url+"/api/v1/validate", "", doc)
				if ctx.Err() != nil {
					return
				}
				counts.add(r)
			}
		})
	}
	var lat []time.Duration
	wg.Go(func() { lat = readFor(ctx) })
	wg.Wait()
	rss := peakRSS(t, p.cmd.Process.Pid)
	p95, p99 := percentile(lat, 0.95), percentile(lat, 0.99)
	t.Logf("%d-byte documents from 16 clients for 15 s: statuses %v; serve peak RSS %d MiB; catalog.yaml p95 %s (%s without the flood) p99 %s over %d reads",
		len(doc), counts.byStatus, rss>>20, p95.Round(time.Microsecond), baseline.Round(time.Microsecond), p99.Round(time.Microsecond), len(lat))
	if rss > 1<<30 {
		t.Errorf("serve peaked at %d MiB resident; want under 1 GiB", rss>>20)
	}
	if counts.byStatus[http.StatusOK] == 0 {
		t.Error("no validation succeeded")
	}
	for status, n := range counts.byStatus {
		if status != http.StatusOK && status != http.StatusTooManyRequests {
			t.Errorf("%d answers of status %d", n, status)
		}
	}
	if p95 > baseline+90*time.Millisecond {
		t.Errorf("catalog.yaml p95 %s during the flood, %s without; want within tens of milliseconds of it", p95, baseline)
	}
}

// TestServeKilledMidPublish kills serve with SIGKILL while a client publishes one version after
// another, starts it again on the same data directory, and checks that every acknowledged publish
// is there with its bytes, and that every listed version is whole. (This held on main too; it is
// kept as a guard.)
func TestServeKilledMidPublish(t *testing.T) {
	t.Parallel()
	p, dir, tok := embedded(t)
	client := &http.Client{Timeout: 10 * time.Second}
	acked := map[string][]byte{}
	var mu sync.Mutex
	ctx := context.Background()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 10000; i++ {
			version := fmt.Sprintf("2.0.%d", i)
			doc := catalogtest.Catalog(catalogtest.Options{Name: "killed", Functions: 5 + i%7})
			r := request(ctx, client, http.MethodPut, p.url+"/api/v1/catalogs/killed/versions/"+version, tok, doc)
			if r.err != nil {
				return // serve is gone
			}
			if r.status == http.StatusCreated {
				mu.Lock()
				acked[version] = doc
				mu.Unlock()
			}
		}
	}()
	for {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= 5 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.kill()
	<-done
	p2 := startServe(t, nil, "--data-dir", dir)
	for v, doc := range acked {
		r := request(ctx, client, http.MethodGet, p2.url+"/catalogs/killed/"+v+"/catalog.yaml", "", nil)
		if r.status != http.StatusOK || !bytes.Equal(r.body, doc) {
			t.Errorf("acknowledged version %s after the kill: %d, bytes equal %v", v, r.status, bytes.Equal(r.body, doc))
		}
	}
	t.Logf("%d acknowledged publishes before SIGKILL, all kept", len(acked))
}
