package e2e

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/krm-catalog/krm-catalog/catalog/catalogtest"
	"github.com/krm-catalog/krm-catalog/internal/pgcluster"
	"github.com/krm-catalog/krm-catalog/oci/sign/signtest"
)

// TestBackupRestore backs up an embedded default while serve runs on it and restores it into
// another data directory: every row of every table comes back (catalogs byte for byte, tokens,
// grants, keys, audit, sequences), the old token still publishes, and a backup taken while a client
// publishes holds each version whole.
func TestBackupRestore(t *testing.T) {
	// not parallel: add-key reads the key's password from the environment
	requirePostgres(t)
	t.Setenv("COSIGN_PASSWORD", signtest.Password)
	dirA, dirB, dirC := traversableTempDir(t), traversableTempDir(t), traversableTempDir(t)
	dumps := t.TempDir()
	url, stopA := startServe(t, dirA)

	code, out, errOut := runCLI(t, "token", "create", "--publisher", "example.com", "--data-dir", dirA)
	if code != 0 {
		t.Fatalf("token create: %d %s", code, errOut)
	}
	tok := strings.TrimSpace(out[strings.LastIndex(strings.TrimSpace(out), "\n")+1:])
	mustCLI(t, "publisher", "grant", "--publisher", "example.com", "--reason", "shared", "fn.shared.io", "--data-dir", dirA)
	keys := signtest.KeyPair(t, "cosign.pub")
	priv := filepath.Join(dumps, "cosign.key")
	if err := os.WriteFile(priv, keys.PrivatePEM, 0o600); err != nil {
		t.Fatal(err)
	}
	mustCLI(t, "publisher", "add-key", "--server", url, "--token", tok, "--publisher", "example.com", "--key", priv)
	mustCLI(t, "publish", "--server", url, "--token", tok, "--version", "1.0.0", "../catalog/testdata/reference/catalog.yaml")
	shared := catalogtest.Catalog(catalogtest.Options{Name: "shared", Functions: 2, Group: "fn.shared.io"})
	if r := do(t, http.MethodPut, url+"/api/v1/catalogs/shared/versions/1.0.0", tok, shared); r.status != http.StatusCreated {
		t.Fatalf("publish shared: %d %s", r.status, r.body)
	}

	// a backup while a client publishes: each version in it is whole
	busy := publishInBackground(t, url, tok)
	before := busy.waitFor(3)
	busyDump := filepath.Join(dumps, "busy.dump")
	mustCLI(t, "backup", "--data-dir", dirA, busyDump)
	acked := busy.stop()

	// a backup while serve runs, idle: the restore must equal it row for row
	dump := filepath.Join(dumps, "krm-catalog.dump")
	mustCLI(t, "backup", "--data-dir", dirA, dump)
	if fi, err := os.Stat(dump); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the backup's mode: %v %v, want 0600 (it holds token hashes)", fi.Mode(), err)
	}
	want := databaseRows(t, dirA)
	catalogYAML := do(t, http.MethodGet, url+"/catalogs/example-functions/1.0.0/catalog.yaml", "", nil)

	mustCLI(t, "restore", "--data-dir", dirB, dump)
	if diff := cmp.Diff(want, databaseRows(t, dirB)); diff != "" {
		t.Errorf("the restored database (-backed up +restored):\n%s", diff)
	}
	// into a database that holds tables: refused, unless --clean
	if code, _, errOut := runCLI(t, "restore", "--data-dir", dirB, dump); code != 2 || !strings.Contains(errOut, "already holds tables") {
		t.Errorf("restore into a restored database: exit %d, %s", code, errOut)
	}
	mustCLI(t, "restore", "--clean", "--data-dir", dirB, dump)
	if diff := cmp.Diff(want, databaseRows(t, dirB)); diff != "" {
		t.Errorf("restored again with --clean (-backed up +restored):\n%s", diff)
	}
	// and never into a data directory a serve runs on
	if code, _, errOut := runCLI(t, "restore", "--clean", "--data-dir", dirA, dump); code != 2 || !strings.Contains(errOut, "stop it first") {
		t.Errorf("restore under a running serve: exit %d, %s", code, errOut)
	}
	if code := stopA(); code != 0 {
		t.Fatalf("serve exited with %d", code)
	}

	urlB, _ := startServe(t, dirB)
	r := do(t, http.MethodGet, urlB+"/catalogs/example-functions/1.0.0/catalog.yaml", "", nil)
	if r.status != http.StatusOK || catalogYAML.status != http.StatusOK || !bytes.Equal(r.body, catalogYAML.body) || !bytes.Equal(r.body, exampleCatalog(t)) {
		t.Errorf("catalog.yaml after the restore: %d, the same bytes: %v", r.status, bytes.Equal(r.body, catalogYAML.body))
	}
	mustCLI(t, "publish", "--server", urlB, "--token", tok, "--version", "2.0.0", "../catalog/testdata/reference/catalog.yaml")

	mustCLI(t, "restore", "--data-dir", dirC, busyDump)
	urlC, _ := startServe(t, dirC)
	var present int
	for v, doc := range acked {
		r := do(t, http.MethodGet, urlC+"/catalogs/busy/"+v+"/catalog.yaml", "", nil)
		switch {
		case r.status == http.StatusNotFound && before[v] == nil:
		case r.status == http.StatusOK && bytes.Equal(r.body, doc):
			present++
		default:
			t.Errorf("busy version %s from the backup taken while publishing: %d, whole: %v", v, r.status, bytes.Equal(r.body, doc))
		}
	}
	t.Logf("the backup taken while publishing holds %d of the %d versions acknowledged by the end of the backup", present, len(acked))
}

func mustCLI(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errOut := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("%s: exit %d\n%s%s", strings.Join(args[:2], " "), code, out, errOut)
	}
	return out
}

// databaseRows is every row of every table of the embedded default in dataDir, as text, and the
// values of its sequences.
func databaseRows(t *testing.T, dataDir string) map[string][]string {
	t.Helper()
	ctx := context.Background()
	// joins the cluster of a serve running on dataDir, or starts it
	cluster, err := pgcluster.Start(ctx, pgcluster.Options{DataDir: filepath.Join(dataDir, "postgres"), SocketOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Stop(ctx)
	conn, err := pgx.Connect(ctx, cluster.URL("krm_catalog"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	query := func(sql string) []string {
		rows, err := conn.Query(ctx, sql)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		out, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return out
	}
	got := map[string][]string{"sequences": query("SELECT sequencename || ' ' || coalesce(last_value, 0) FROM pg_sequences ORDER BY 1")}
	for _, table := range query("SELECT tablename::text FROM pg_tables WHERE schemaname = 'public' ORDER BY 1") {
		got[table] = query(fmt.Sprintf("SELECT t::text FROM %s t ORDER BY 1", pgx.Identifier{table}.Sanitize()))
	}
	if len(got["api_tokens"]) == 0 || len(got["publisher_keys"]) == 0 || len(got["group_grants"]) == 0 || len(got["audit_log"]) == 0 {
		t.Fatalf("the database lacks what the test made: %v", got)
	}
	return got
}

// backgroundPublisher publishes versions of the catalog "busy" one after another until stopped.
type backgroundPublisher struct {
	stopCh chan struct{}
	done   chan struct{}
	mu     sync.Mutex
	acked  map[string][]byte
}

func publishInBackground(t *testing.T, url, tok string) *backgroundPublisher {
	p := &backgroundPublisher{stopCh: make(chan struct{}), done: make(chan struct{}), acked: map[string][]byte{}}
	go func() {
		defer close(p.done)
		for i := 0; ; i++ {
			select {
			case <-p.stopCh:
				return
			default:
			}
			v := fmt.Sprintf("1.0.%d", i)
			doc := catalogtest.Catalog(catalogtest.Options{Name: "busy", Functions: 1 + i%4})
			req, err := http.NewRequest(http.MethodPut, url+"/api/v1/catalogs/busy/versions/"+v, bytes.NewReader(doc))
			if err != nil {
				t.Error(err)
				return
			}
			req.Header.Set("Authorization", "Bearer "+tok)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Errorf("publish busy %s: %v", v, err)
				return
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated {
				t.Errorf("publish busy %s: %d", v, resp.StatusCode)
				return
			}
			p.mu.Lock()
			p.acked[v] = doc
			p.mu.Unlock()
		}
	}()
	return p
}

// waitFor waits until n versions are acknowledged and returns them.
func (p *backgroundPublisher) waitFor(n int) map[string][]byte {
	for {
		p.mu.Lock()
		if len(p.acked) >= n {
			acked := maps.Clone(p.acked)
			p.mu.Unlock()
			return acked
		}
		p.mu.Unlock()
		select {
		case <-p.done:
			return nil
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func (p *backgroundPublisher) stop() map[string][]byte {
	close(p.stopCh)
	<-p.done
	return p.acked
}
