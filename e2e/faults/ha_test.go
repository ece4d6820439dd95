package faults

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/krm-catalog/krm-catalog/catalog/catalogtest"
	"github.com/krm-catalog/krm-catalog/internal/pgcluster"
	"github.com/krm-catalog/krm-catalog/internal/testenv"
)

// TestFailover runs serve against a primary and a streaming standby (pg_basebackup -R, synchronous
// replication) through a multi-host DATABASE_URL with target_session_attrs=read-write, kills the
// primary with SIGKILL while a client publishes, promotes the standby, and checks that the service
// answers again within 10 s of the promotion and that no acknowledged publish was lost.
func TestFailover(t *testing.T) {
	t.Parallel()
	requirePostgres(t)
	ctx := context.Background()
	dir := dataDir(t)
	primary, err := pgcluster.Start(ctx, pgcluster.Options{DataDir: filepath.Join(dir, "primary")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = primary.Stop(context.Background()) }) // fails once killed; nothing to stop then
	testenv.ExecSQL(t, primary.URL("postgres"), "CREATE DATABASE krm_catalog")
	standby, err := primary.StartStandby(ctx, pgcluster.Options{DataDir: filepath.Join(dir, "standby")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = standby.Stop(context.Background()) })
	testenv.WaitStreaming(t, primary.URL("postgres"))
	// Synchronous replication: a commit is acknowledged once the standby has it, so a failover
	// loses no acknowledged publish.
	testenv.ExecSQL(t, primary.URL("postgres"), "ALTER SYSTEM SET synchronous_standby_names = '*'")
	testenv.ExecSQL(t, primary.URL("postgres"), "SELECT pg_reload_conf()")

	url := fmt.Sprintf("postgres://%s@127.0.0.1:%d,127.0.0.1:%d/krm_catalog?sslmode=disable&target_session_attrs=read-write&connect_timeout=2",
		pgcluster.Superuser, primary.Port(), standby.Port())
	p := startServe(t, nil, "--database-url", url)
	tok := token(t, "example.com", "--database-url", url)
	client := &http.Client{Timeout: 15 * time.Second}

	var mu sync.Mutex
	acked := map[string][]byte{}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 100000; i++ {
			select {
			case <-stop:
				return
			default:
			}
			v := fmt.Sprintf("1.0.%d", i)
			doc := catalogtest.Catalog(catalogtest.Options{Name: "replicated", Functions: 3 + i%5})
			r := request(ctx, client, http.MethodPut, p.url+"/api/v1/catalogs/replicated/versions/"+v, tok, doc)
			if r.status == http.StatusCreated {
				mu.Lock()
				acked[v] = doc
				mu.Unlock()
			} else {
				time.Sleep(50 * time.Millisecond) // the database is away: do not spin
			}
		}
	}()
	// a reader through the failover: 503s while there is no primary, never 500
	var counts statusCounter
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		for {
			select {
			case <-stop:
				return
			default:
			}
			counts.add(request(ctx, client, http.MethodGet, p.url+"/api/v1/catalogs/replicated/versions", "", nil))
			time.Sleep(10 * time.Millisecond)
		}
	}()
	for n := 0; n < 5; {
		time.Sleep(20 * time.Millisecond)
		mu.Lock()
		n = len(acked)
		mu.Unlock()
	}
	pid := postmasterPID(t, primary.DataDir())
	for _, p := range processTree(pid) {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
	mu.Lock()
	beforeKill := len(acked)
	mu.Unlock()
	if err := standby.Promote(ctx); err != nil {
		t.Fatal(err)
	}
	promoted := time.Now()
	took := p.waitStatus(t, "/readyz", http.StatusOK, 10*time.Second)
	// a publish after the failover is acknowledged too
	for {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n > beforeKill+2 {
			break
		}
		if time.Since(promoted) > 10*time.Second {
			t.Fatalf("no publish acknowledged within 10 s of the promotion (%d before the kill, %d now)", beforeKill, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	writesBack := time.Since(promoted)
	close(stop)
	<-done
	<-readerDone
	if counts.byStatus[http.StatusInternalServerError] > 0 || counts.bad503 > 0 {
		t.Errorf("reads through the failover: %v (%d 503s without Retry-After or the database message); want no 500", counts.byStatus, counts.bad503)
	}
	for v, doc := range acked {
		r := request(ctx, client, http.MethodGet, p.url+"/catalogs/replicated/"+v+"/catalog.yaml", "", nil)
		if r.status != http.StatusOK || !bytes.Equal(r.body, doc) {
			t.Errorf("acknowledged version %s after the failover: %d", v, r.status)
		}
	}
	t.Logf("failover: ready %s and publishing %s after the promotion; %d publishes acknowledged (%d before the kill), none lost; reads %v",
		took.Round(time.Millisecond), writesBack.Round(time.Millisecond), len(acked), beforeKill, counts.byStatus)
}
