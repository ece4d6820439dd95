package faults

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestDocumentAttacks reruns, against serve on its embedded PostgreSQL, the attacks of documents
// that cost by their shape rather than their bytes, in three phases of phaseTime each, and
// prints, for each, serve's largest resident memory (sampled every 50 ms), the /healthz
// latencies of a client asking every 20 ms, and the answers of the attackers and of twelve other
// clients validating their own catalogs meanwhile (each from its own address):
//
//   - dense: a 4 MB catalog whose one function's schema default is 1,000,000 [0] (two million
//     values), validated from one address by three loops at 1.8 requests a second in all, and
//     published in a loop by a publisher;
//   - at the limit: the same attack with the densest catalog the limits let through, 500,000
//     values (1 MB), validated whole;
//   - reads: the densest function that can be published (its generated definition.yaml just under
//     the 4 MiB bound), read by 8 clients, each from its own address, as definition.yaml and as
//     /api/v1/functions/GROUP/KIND, as fast as they are answered (200, or 429 once a client has
//     read its budget of large answers).
//
// It requires serve under 300 MiB resident and /healthz p95 under 50 ms in every phase, every
// other client's validation answered 200, the dense documents refused with 413 naming the limit,
// and no 5xx. It runs only with KRM_CATALOG_ATTACKS set (it takes about a minute and a half, and
// its figures want a machine that is not busy with anything else):
//
//	KRM_CATALOG_ATTACKS=1 go test ./e2e/faults -run TestDocumentAttacks -v
func TestDocumentAttacks(t *testing.T) {
	if os.Getenv("KRM_CATALOG_ATTACKS") == "" {
		t.Skip("set KRM_CATALOG_ATTACKS=1 to run the document attacks (about 90 s)")
	}
	dense := denseCatalog(1_000_000, "dense-functions")
	atLimit := denseCatalog(250_000, "dense-functions")
	normal := exampleCatalog(t)

	// each phase on a serve of its own, so that one's memory is not read as another's
	t.Run("dense", func(t *testing.T) {
		p, _, tok := embedded(t)
		r := attack(t, p, attackLoad{
			validate: dense, validateLoops: 3, validateRate: 1.8,
			publish: dense, publishToken: tok, normal: normal,
		})
		r.check(t, http.StatusRequestEntityTooLarge, "more than 524,288 values")
	})
	t.Run("at the limit", func(t *testing.T) {
		p, _, tok := embedded(t)
		r := attack(t, p, attackLoad{
			validate: atLimit, validateLoops: 3, validateRate: 1.8,
			publish: atLimit, publishToken: tok, normal: normal,
		})
		// validated whole (200); published, its generated definition.yaml is too large (413)
		r.check(t, http.StatusOK, "")
	})
	t.Run("reads", func(t *testing.T) {
		p, _, tok := embedded(t)
		// the densest function whose generated definition.yaml stays under the bound
		fn := denseCatalog(130_000, "readable-functions")
		put := request(context.Background(), http.DefaultClient, http.MethodPut, p.url+"/api/v1/catalogs/readable-functions/versions/1.0.0", tok, fn)
		if put.status != http.StatusCreated {
			t.Fatalf("publish of the readable dense function: %d %s", put.status, put.body)
		}
		def := request(context.Background(), http.DefaultClient, http.MethodGet, p.url+"/functions/dense.example.com/Dense/definition.yaml", "", nil)
		t.Logf("the published dense function: %d bytes; its generated definition.yaml %d bytes", len(fn), len(def.body))
		r := attack(t, p, attackLoad{
			reads: []string{
				p.url + "/functions/dense.example.com/Dense/definition.yaml",
				p.url + "/api/v1/functions/dense.example.com/Dense",
			},
			readers: 8, normal: normal,
		})
		r.check(t, http.StatusOK, "")
	})
}

// phaseTime is how long each phase of TestDocumentAttacks lasts.
const phaseTime = 25 * time.Second

// denseCatalog is catalogtest.Dense under another catalog name.
func denseCatalog(n int, name string) []byte {
	var b strings.Builder
	b.Grow(4*n + 1024)
	fmt.Fprintf(&b, "apiVersion: config.kubernetes.io/v1alpha1\nkind: KRMFunctionCatalog\nmetadata:\n  name: %s\nspec:\n  krmFunctions:\n", name)
	b.WriteString("    - group: dense.example.com\n      names: {kind: Dense}\n      description: A function whose schema has a dense default.\n      publisher: example.com\n")
	b.WriteString("      versions:\n        - name: v1\n          schema:\n            openAPIV3Schema:\n              type: object\n              default: [")
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("[0]")
	}
	b.WriteString("]\n          runtime: {container: {image: \"registry.example.com/dense@sha256:" + strings.Repeat("d", 64) + "\"}}\n")
	return []byte(b.String())
}

// attackLoad is one phase's load.
type attackLoad struct {
	validate      []byte  // posted to /api/v1/validate by validateLoops loops from one address
	validateLoops int     // ... at validateRate requests a second in all
	validateRate  float64 //
	publish       []byte  // put as new versions of its catalog in a loop, with publishToken
	publishToken  string
	reads         []string // read by readers clients in turn
	readers       int
	normal        []byte // validated by 12 other clients, each from its own address, every 2 s
}

// attackResult is what a phase measured.
type attackResult struct {
	name                          string
	maxRSS                        int64
	health                        []time.Duration
	healthFailed                  int
	attacker, publisher, others   statusCounter
	readers                       statusCounter
	attackerBodies, publishBodies []string
}

func attack(t *testing.T, p *serveProc, load attackLoad) *attackResult {
	t.Helper()
	pid := p.cmd.Process.Pid
	res := &attackResult{name: t.Name()}
	ctx, stop := context.WithTimeout(context.Background(), phaseTime)
	defer stop()
	var wg sync.WaitGroup
	from := func(last byte) *http.Client {
		local := &net.TCPAddr{IP: net.IPv4(127, 0, 0, last)}
		return &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{DialContext: (&net.Dialer{LocalAddr: local}).DialContext}}
	}
	var mu sync.Mutex
	note := func(bodies *[]string, r result) {
		if r.status >= 400 {
			mu.Lock()
			if len(*bodies) < 3 {
				*bodies = append(*bodies, fmt.Sprintf("%d %.200s", r.status, r.body))
			}
			mu.Unlock()
		}
	}
	// serve's resident memory
	wg.Go(func() {
		for ctx.Err() == nil {
			res.maxRSS = max(res.maxRSS, residentBytes(pid))
			time.Sleep(50 * time.Millisecond)
		}
	})
	// /healthz, every 20 ms
	wg.Go(func() {
		client := &http.Client{Timeout: 10 * time.Second}
		for ctx.Err() == nil {
			r := request(context.Background(), client, http.MethodGet, p.url+"/healthz", "", nil)
			if r.err != nil || r.status != http.StatusOK {
				res.healthFailed++
			} else {
				res.health = append(res.health, r.took)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	if load.validate != nil {
		attacker := from(2) // one address for every loop
		every := time.Duration(float64(load.validateLoops) / load.validateRate * float64(time.Second))
		for i := range load.validateLoops {
			wg.Go(func() {
				next := time.Now().Add(time.Duration(i) * every / time.Duration(load.validateLoops))
				for n := 0; ctx.Err() == nil && n < 1000; n++ {
					time.Sleep(time.Until(next))
					next = next.Add(every)
					r := request(ctx, attacker, http.MethodPost, p.url+"/api/v1/validate", "", load.validate)
					if ctx.Err() != nil {
						return
					}
					res.attacker.add(r)
					note(&res.attackerBodies, r)
				}
			})
		}
	}
	if load.publish != nil {
		wg.Go(func() {
			client := from(3)
			for n := 0; ctx.Err() == nil && n < 1000; n++ {
				r := request(ctx, client, http.MethodPut, p.url+"/api/v1/catalogs/dense-functions/versions/1.0."+strconv.Itoa(n), load.publishToken, load.publish)
				if ctx.Err() != nil {
					return
				}
				res.publisher.add(r)
				note(&res.publishBodies, r)
				time.Sleep(500 * time.Millisecond)
			}
		})
	}
	for i := range load.readers {
		wg.Go(func() {
			client := from(byte(40 + i))
			for n := 0; ctx.Err() == nil && n < 100_000; n++ {
				r := request(ctx, client, http.MethodGet, load.reads[n%len(load.reads)], "", nil)
				if ctx.Err() != nil {
					return
				}
				res.readers.add(r)
			}
		})
	}
	for i := range 12 {
		wg.Go(func() {
			client := from(byte(10 + i))
			time.Sleep(time.Duration(i) * 150 * time.Millisecond)
			for n := 0; ctx.Err() == nil && n < 1000; n++ {
				r := request(ctx, client, http.MethodPost, p.url+"/api/v1/validate", "", load.normal)
				if ctx.Err() != nil {
					return
				}
				res.others.add(r)
				time.Sleep(2 * time.Second)
			}
		})
	}
	wg.Wait()
	return res
}

// check logs the phase's figures and holds them to the bounds: attackers answered want (naming
// the limit), every other client's validation answered 200, serve under 300 MiB, /healthz p95
// under 50 ms, no 5xx.
func (r *attackResult) check(t *testing.T, want int, limit string) {
	t.Helper()
	p50, p95 := percentile(slices.Clone(r.health), 0.5), percentile(slices.Clone(r.health), 0.95)
	hmax := percentile(slices.Clone(r.health), 1)
	t.Logf("%s: serve max RSS %d MiB; /healthz p50 %s p95 %s max %s over %d (%d failed); attacker %v; publisher %v; readers %v; other clients' validations %v",
		r.name, r.maxRSS>>20, p50.Round(time.Microsecond), p95.Round(time.Microsecond), hmax.Round(time.Microsecond), len(r.health), r.healthFailed,
		r.attacker.byStatus, r.publisher.byStatus, r.readers.byStatus, r.others.byStatus)
	for _, b := range append(r.attackerBodies, r.publishBodies...) {
		t.Logf("  a refusal: %s", b)
	}
	if r.maxRSS >= 300<<20 {
		t.Errorf("serve reached %d MiB resident; want under 300 MiB", r.maxRSS>>20)
	}
	if p95 >= 50*time.Millisecond || r.healthFailed > 0 {
		t.Errorf("/healthz p95 %s, %d failed; want under 50 ms, none failed", p95, r.healthFailed)
	}
	if n := r.others.byStatus[http.StatusOK]; n == 0 || n != total(&r.others) {
		t.Errorf("other clients' validations: %v; want every one answered 200", r.others.byStatus)
	}
	if n := r.attacker.byStatus[want]; total(&r.attacker) > 0 && n == 0 {
		t.Errorf("the attacker's requests: %v; want %d", r.attacker.byStatus, want)
	}
	if limit != "" && len(r.attackerBodies) > 0 && !strings.Contains(strings.Join(r.attackerBodies, "\n"), limit) {
		t.Errorf("the attacker's refusals do not name the limit %q: %v", limit, r.attackerBodies)
	}
	for _, c := range []*statusCounter{&r.attacker, &r.publisher, &r.readers, &r.others} {
		for status, n := range c.byStatus {
			if status >= 500 {
				t.Errorf("%d answers of status %d", n, status)
			}
		}
		if len(c.errors) > 0 {
			t.Errorf("%d requests failed: %v", len(c.errors), c.errors[0])
		}
	}
}

func total(c *statusCounter) int {
	n := 0
	for _, v := range c.byStatus {
		n += v
	}
	return n + len(c.errors)
}

// residentBytes is a process's resident memory now (VmRSS), 0 when it cannot be read.
func residentBytes(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}
