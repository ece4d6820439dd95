//go:build linux

package cluster

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/krm-catalog/krm-catalog/catalog/catalogtest"
	"github.com/krm-catalog/krm-catalog/internal/testenv"
)

// deployment is the whole of it: PostgreSQL's primary (host 1) and standby (host 2), replicas on
// hosts 3 to 5, clients on host 6.
type deployment struct {
	pg               *pg
	primary, standby *host
	standbyDir       string
	replicas         []*replica
	client           *http.Client
	token            string
	primaryAdminURL  string
	replicaHosts     []*host
	databaseHosts    []*host
}

func setUp(t *testing.T) *deployment {
	t.Helper()
	requireNetns(t)
	pgs := requirePostgres(t)
	start := time.Now()
	nw := newNetwork(t)
	d := &deployment{pg: pgs, primary: nw.host(1), standby: nw.host(2)}
	d.databaseHosts = []*host{d.primary, d.standby}
	for n := 3; n <= 5; n++ {
		d.replicaHosts = append(d.replicaHosts, nw.host(n))
	}
	clients := nw.host(6)

	primaryDir := pgs.initPrimary(t)
	pgs.serve(t, d.primary, primaryDir)
	d.primaryAdminURL = socketURL(primaryDir, "postgres")
	testenv.ExecSQL(t, d.primaryAdminURL, "CREATE DATABASE krm_catalog")
	// the standby copies the primary over the network, from its own host
	d.standbyDir = pgs.dataDir(t, "standby")
	basebackup := d.standby.command(pgs.uid, pgs.gid, pgs.bin+"/pg_basebackup", "-D", d.standbyDir, "-R", "-X", "stream",
		"-c", "fast", "-h", d.primary.addr(), "-p", "5432", "-U", "postgres")
	basebackup.Dir = "/"
	if out, err := basebackup.CombinedOutput(); err != nil {
		t.Fatalf("pg_basebackup: %v\n%s", err, out)
	}
	pgs.serve(t, d.standby, d.standbyDir)
	testenv.WaitStreaming(t, d.primaryAdminURL)
	// synchronous replication, set after the copy so that the promoted standby does not wait for
	// a standby of its own
	testenv.ExecSQL(t, d.primaryAdminURL, "ALTER SYSTEM SET synchronous_standby_names = '*'", "SELECT pg_reload_conf()")

	databaseURL := fmt.Sprintf("postgres://postgres@%s:5432,%s:5432/krm_catalog?sslmode=disable&target_session_attrs=read-write&connect_timeout=2",
		d.primary.addr(), d.standby.addr())
	for _, h := range d.replicaHosts {
		r := startReplica(t, h, databaseURL, "--publish-timeout", "10s")
		d.replicas = append(d.replicas, r)
	}
	d.client = &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: clients.dialer(t, 8).DialContext, MaxIdleConnsPerHost: 16}}
	for _, r := range d.replicas {
		waitFor(t, r.h.name+" ready", 30*time.Second, func() bool { return r.ready(d.client) })
	}
	out, err := exec.Command(binary, "token", "create", "--publisher", "example.com", "--database-url", socketURL(primaryDir, "krm_catalog")).Output()
	if err != nil {
		t.Fatalf("token create: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	d.token = lines[len(lines)-1]
	t.Logf("set up 6 hosts, a primary, a streaming standby and 3 replicas in %s", time.Since(start).Round(10*time.Millisecond))
	return d
}

type answer struct {
	status int
	body   []byte
	err    error
}

func (d *deployment) do(method, url string, body []byte) answer {
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		return answer{err: err}
	}
	if body != nil {
		req.Header.Set("Authorization", "Bearer "+d.token)
	}
	resp, err := d.client.Do(req)
	if err != nil {
		return answer{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, body: b, err: err}
}

func (d *deployment) publish(r *replica, name, version string, doc []byte) answer {
	return d.do(http.MethodPut, r.url+"/api/v1/catalogs/"+name+"/versions/"+version, doc)
}

func (d *deployment) catalogYAML(r *replica, name, version string) answer {
	return d.do(http.MethodGet, r.url+"/catalogs/"+name+"/"+version+"/catalog.yaml", nil)
}

func (d *deployment) versions(t *testing.T, r *replica, name string) []string {
	t.Helper()
	a := d.do(http.MethodGet, r.url+"/api/v1/catalogs/"+name+"/versions", nil)
	if a.err != nil || a.status != http.StatusOK {
		t.Fatalf("versions of %s from %s: %d %v", name, r.h.name, a.status, a.err)
	}
	var list struct{ Versions []struct{ Version string } }
	if err := json.Unmarshal(a.body, &list); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, v := range list.Versions {
		out = append(out, v.Version)
	}
	slices.Sort(out)
	return out
}

// statuses counts answers by status ("error" for a failed request).
type statuses struct {
	mu sync.Mutex
	n  map[string]int
}

func (s *statuses) add(a answer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n == nil {
		s.n = map[string]int{}
	}
	k := fmt.Sprint(a.status)
	if a.err != nil {
		k = "error"
	}
	s.n[k]++
}

func (s *statuses) get(k string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n[k]
}

func (s *statuses) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprint(s.n)
}

// TestCluster runs the scenarios one after another on one deployment (setting it up is most of
// the time): a rolling restart under read load, a replica cut off from the database, a replica's
// host dying mid-publish, and last, the primary's host cut off.
func TestCluster(t *testing.T) {
	// its limits are wall-clock times: not beside another package's whole-binary build
	testenv.Exclusive(t)
	d := setUp(t)
	doc := catalogtest.Catalog(catalogtest.Options{Name: "steady", Functions: 5})
	if a := d.publish(d.replicas[0], "steady", "1.0.0", doc); a.status != http.StatusCreated {
		t.Fatalf("publish: %d %v %s", a.status, a.err, a.body)
	}
	t.Run("RollingRestartUnderReadLoad", func(t *testing.T) { rollingRestart(t, d, doc) })
	t.Run("ReplicaCutOffFromDatabase", func(t *testing.T) { replicaCutOff(t, d, doc) })
	t.Run("ReplicaHostDiesMidPublish", func(t *testing.T) { replicaDies(t, d) })
	t.Run("PrimaryHostCutOff", func(t *testing.T) { primaryCutOff(t, d) })
}

// rollingRestart restarts the replicas one by one as a Deployment's rollout does: SIGTERM while
// the replica is still in the load balancer's rotation; serve turns /readyz to 503 for its
// shutdown delay while it keeps serving, the balancer's readiness probe takes it out, then it
// stops, is started again and is back in once ready. Readers must not see one failure.
func rollingRestart(t *testing.T, d *deployment, doc []byte) {
	// a load balancer: requests go round the replicas in rotation; a probe every 100 ms puts a
	// replica in or out by its /readyz
	var mu sync.Mutex
	inRotation := []bool{true, true, true}
	var next atomic.Int64
	pick := func() *replica {
		mu.Lock()
		defer mu.Unlock()
		for {
			i := int(next.Add(1)) % len(d.replicas)
			if inRotation[i] {
				return d.replicas[i]
			}
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	probes := &http.Client{Timeout: time.Second, Transport: d.client.Transport}
	for i := range d.replicas {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(100 * time.Millisecond):
				}
				mu.Lock()
				r := d.replicas[i]
				mu.Unlock()
				ready := r.ready(probes)
				mu.Lock()
				inRotation[i] = ready
				mu.Unlock()
			}
		})
	}
	var counts statuses
	var failures []string
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				r := pick()
				var a answer
				if (w+i)%2 == 0 {
					a = d.catalogYAML(r, "steady", "1.0.0")
					if a.status == http.StatusOK && !bytes.Equal(a.body, doc) {
						a.status = -1
					}
				} else {
					a = d.do(http.MethodGet, r.url+"/api/v1/catalogs/steady/versions", nil)
				}
				counts.add(a)
				if a.err != nil || a.status != http.StatusOK {
					mu.Lock()
					failures = append(failures, fmt.Sprintf("%s %s: %d %v", time.Now().Format("15:04:05.000"), r.h.name, a.status, a.err))
					mu.Unlock()
				}
			}
		})
	}
	inRotationOf := func(i int) bool {
		mu.Lock()
		defer mu.Unlock()
		return inRotation[i]
	}
	start := time.Now()
	var perReplica []string
	for i, r := range d.replicas {
		t0 := time.Now()
		_ = r.p.cmd.Process.Signal(syscall.SIGTERM)
		out := waitFor(t, r.h.name+" out of rotation after SIGTERM", shutdownDelay, func() bool { return !inRotationOf(i) })
		r.p.wait(t, shutdownDelay+40*time.Second)
		r.start(t)
		waitFor(t, r.h.name+" back in rotation after its restart", 30*time.Second, func() bool { return inRotationOf(i) })
		perReplica = append(perReplica, fmt.Sprintf("%s (out after %s)", time.Since(t0).Round(10*time.Millisecond), out.Round(10*time.Millisecond)))
	}
	took := time.Since(start)
	close(stop)
	wg.Wait()
	if len(failures) > 0 {
		t.Errorf("%d failed reads during the rolling restart (of %s): %v", len(failures), counts.String(), failures[:min(len(failures), 5)])
	}
	if counts.get("200") == 0 {
		t.Error("no read answered")
	}
	t.Logf("rolling restart of 3 replicas in %s (each SIGTERM to ready again: %v); reads %s", took.Round(10*time.Millisecond), perReplica, counts.String())
}

// replicaCutOff partitions one replica from both database hosts: it keeps answering the cached
// catalog.yaml, reports not ready, and is ready and publishing again once healed.
func replicaCutOff(t *testing.T, d *deployment, doc []byte) {
	r := d.replicas[0]
	if a := d.catalogYAML(r, "steady", "1.0.0"); a.status != http.StatusOK {
		t.Fatalf("catalog.yaml before the cut: %d %v", a.status, a.err)
	}
	r.h.blackhole(d.databaseHosts...)
	healed := false
	defer func() {
		if !healed {
			r.h.unblackhole(d.databaseHosts...)
		}
	}()
	notReady := waitFor(t, "the cut-off replica reports not ready", 15*time.Second, func() bool { return !r.ready(d.client) })
	var cached []time.Duration
	for range 20 {
		t0 := time.Now()
		a := d.catalogYAML(r, "steady", "1.0.0")
		if a.status != http.StatusOK || !bytes.Equal(a.body, doc) {
			t.Fatalf("cached catalog.yaml while cut off: %d %v", a.status, a.err)
		}
		cached = append(cached, time.Since(t0))
	}
	// what needs the database is refused as unavailable, never 500
	if a := d.do(http.MethodGet, r.url+"/api/v1/catalogs/steady/versions", nil); a.status != http.StatusServiceUnavailable {
		t.Errorf("a database read while cut off: %d %v, want 503", a.status, a.err)
	}
	r.h.unblackhole(d.databaseHosts...)
	healed = true
	ready := waitFor(t, "the healed replica reports ready", 20*time.Second, func() bool { return r.ready(d.client) })
	var writes time.Duration
	writes = waitFor(t, "the healed replica publishes", 20*time.Second, func() bool {
		return d.publish(r, "steady", "1.0.1", doc).status/100 == 2
	})
	slices.Sort(cached)
	t.Logf("replica cut off from the database: not ready after %s; cached catalog.yaml answered 20 of 20 (slowest %s); healed: ready after %s, publishing %s later",
		notReady.Round(10*time.Millisecond), cached[len(cached)-1].Round(100*time.Microsecond), ready.Round(10*time.Millisecond), writes.Round(10*time.Millisecond))
}

// replicaDies kills a replica's host (link down, process killed) while a client publishes through
// it; the client retries the same bytes on another replica. Every version must be there once,
// with its bytes.
func replicaDies(t *testing.T, d *deployment) {
	dying := d.replicas[1]
	others := []*replica{d.replicas[2], d.replicas[0]}
	var (
		mu      sync.Mutex
		acked   = map[string][]byte{}
		retries []string
		target  = dying
	)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			v := fmt.Sprintf("1.0.%d", i)
			doc := catalogtest.Catalog(catalogtest.Options{Name: "retried", Functions: 1 + i%4})
			for attempt := 0; ; attempt++ {
				mu.Lock()
				r := target
				mu.Unlock()
				a := d.publish(r, "retried", v, doc)
				if a.err == nil && (a.status == http.StatusCreated || a.status == http.StatusOK) {
					mu.Lock()
					acked[v] = doc
					if attempt > 0 {
						retries = append(retries, fmt.Sprintf("%s answered %d on %s", v, a.status, r.h.name))
					}
					mu.Unlock()
					break
				}
				if a.err == nil && a.status != http.StatusServiceUnavailable {
					t.Errorf("publish %s on %s: %d %s", v, r.h.name, a.status, a.body)
					return
				}
				// the replica is gone: a load balancer takes it out; retry the same bytes elsewhere
				mu.Lock()
				if target == dying {
					target = others[0]
				}
				mu.Unlock()
			}
		}
	}()
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(acked)
	}
	waitFor(t, "5 publishes through the replica", 30*time.Second, func() bool { return count() >= 5 })
	dying.h.cut()
	dying.p.kill()
	before := count()
	back := waitFor(t, "3 more publishes after the replica's host died", 30*time.Second, func() bool { return count() >= before+3 })
	close(stop)
	<-done
	mu.Lock()
	want := make([]string, 0, len(acked))
	for v := range acked {
		want = append(want, v)
	}
	slices.Sort(want)
	mu.Unlock()
	if len(retries) == 0 {
		t.Error("no publish was retried after the replica died")
	}
	for _, r := range others {
		if diff := cmp.Diff(want, d.versions(t, r, "retried")); diff != "" {
			t.Errorf("versions on %s (-acknowledged +listed):\n%s", r.h.name, diff)
		}
		for v, doc := range acked {
			if a := d.catalogYAML(r, "retried", v); a.status != http.StatusOK || !bytes.Equal(a.body, doc) {
				t.Errorf("%s on %s: %d, its bytes: %v", v, r.h.name, a.status, bytes.Equal(a.body, doc))
			}
		}
	}
	t.Logf("replica host died mid-publish: the client published on another replica %s later; %d versions acknowledged, each listed once with its bytes; retries: %v",
		back.Round(10*time.Millisecond), len(want), retries)
	// back for the next scenario
	dying.h.reboot()
	dying.start(t)
	waitFor(t, dying.h.name+" ready again", 30*time.Second, func() bool { return dying.ready(d.client) })
}

// primaryCutOff takes the primary's host off the network while clients publish and read through
// the replicas, promotes the standby, and checks that every acknowledged publish is readable from
// every replica within 10 s of the promotion, with no 500 on the way.
func primaryCutOff(t *testing.T, d *deployment) {
	var (
		mu    sync.Mutex
		acked = map[string][]byte{}
		order []string
	)
	var counts statuses
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			v := fmt.Sprintf("2.0.%d", i)
			body := catalogtest.Catalog(catalogtest.Options{Name: "failover", Functions: 1 + i%4})
			for attempt := 0; ; attempt++ {
				select {
				case <-stop:
					return
				default:
				}
				a := d.publish(d.replicas[(i+attempt)%3], "failover", v, body)
				counts.add(a)
				if a.err == nil && a.status/100 == 2 {
					mu.Lock()
					acked[v] = body
					order = append(order, v)
					mu.Unlock()
					break
				}
				time.Sleep(100 * time.Millisecond) // the database is away: do not spin
			}
		}
	})
	for w := range 3 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				r := d.replicas[(w+i)%3]
				if i%2 == 0 {
					counts.add(d.catalogYAML(r, "steady", "1.0.0"))
				} else {
					counts.add(d.do(http.MethodGet, r.url+"/api/v1/catalogs/failover/versions", nil))
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(acked)
	}
	waitFor(t, "5 publishes before the cut", 30*time.Second, func() bool { return count() >= 5 })
	d.primary.cut()
	mu.Lock()
	beforeCut := slices.Clone(order)
	mu.Unlock()
	cut := time.Now()
	d.pg.run(t, "pg_ctl", "promote", "-D", d.standbyDir, "-w", "-t", "30")
	promoted := time.Now()
	t.Logf("primary cut at %s, standby promoted %s later", cut.Format("15:04:05.000"), promoted.Sub(cut).Round(time.Millisecond))
	// the last failed read of each replica, for the failure message
	lastFailed := make([]string, len(d.replicas))
	why := func() string {
		mu.Lock()
		defer mu.Unlock()
		return strings.Join(lastFailed, "; ")
	}
	allReadable := func(versions []string) func() bool {
		return func() bool {
			// the replicas at once: one answering 503 after its read deadline does not delay the others
			var ok atomic.Int64
			var wg sync.WaitGroup
			for i, r := range d.replicas {
				wg.Go(func() {
					for _, v := range versions {
						mu.Lock()
						want := acked[v]
						mu.Unlock()
						t0 := time.Now()
						if a := d.catalogYAML(r, "failover", v); a.status != http.StatusOK || !bytes.Equal(a.body, want) {
							mu.Lock()
							lastFailed[i] = fmt.Sprintf("%s %s at %s after %s: %d %v %.200s", r.h.name, v, t0.Format("15:04:05.000"),
								time.Since(t0).Round(time.Millisecond), a.status, a.err, a.body)
							mu.Unlock()
							return
						}
					}
					mu.Lock()
					lastFailed[i] = ""
					mu.Unlock()
					ok.Add(1)
				})
			}
			wg.Wait()
			return int(ok.Load()) == len(d.replicas)
		}
	}
	// what was acknowledged before the cut, from every replica, within 10 s of the promotion
	readable := waitForWhy(t, "every publish acknowledged before the cut readable from every replica", 10*time.Second, allReadable(beforeCut), why)
	writesBack := time.Since(promoted) + waitFor(t, "publishes acknowledged after the promotion", 20*time.Second, func() bool { return count() > len(beforeCut)+2 })
	close(stop)
	wg.Wait()
	mu.Lock()
	versions := slices.Clone(order)
	mu.Unlock()
	// and what was acknowledged since, within 10 s of the last
	readableAfter := waitForWhy(t, "every acknowledged publish readable from every replica", 10*time.Second, allReadable(versions), why)
	if n := counts.get("500"); n > 0 {
		t.Errorf("%d answers of 500 through the failover (%s)", n, counts.String())
	}
	t.Logf("primary host cut off, standby promoted: the %d publishes acknowledged before the cut readable from all 3 replicas %s after the promotion; publishing again %s after it; all %d acknowledged readable from all 3 %s after the last; answers %s",
		len(beforeCut), readable.Round(10*time.Millisecond), writesBack.Round(10*time.Millisecond), len(versions), readableAfter.Round(10*time.Millisecond), counts.String())
}
