package e2e

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/krm-catalog/krm-catalog/catalog/catalogtest"
	"github.com/krm-catalog/krm-catalog/internal/testenv"
	"github.com/krm-catalog/krm-catalog/oci/sign/signtest"
)

// previousRelease is the commit the upgrade test starts from: the last main the project landed
// before its newest migrations. The project has no tagged releases; when it has, this is the
// latest tag's commit.
const previousRelease = "9ef2677814a2aba6cf14e75320e4c2e0c5405a0a"

// TestUpgradeKeepsEverything runs the previous release's binary on a new data dir (its migrations,
// its publishes, tokens, grants, keys and audit), stops it, then serves the same data dir with this
// build, which migrates it: every row of every table the old release had is still there, each
// catalog.yaml has its bytes, and the old token still publishes.
func TestUpgradeKeepsEverything(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the previous release: not in -short")
	}
	t.Parallel()
	requirePostgres(t)
	old := buildPreviousRelease(t)
	dir := traversableTempDir(t)

	tok := lastLine(runOld(t, old, "token", "create", "--publisher", "example.com", "--data-dir", dir))
	runOld(t, old, "publisher", "grant", "--publisher", "example.com", "--reason", "shared", "fn.shared.io", "--data-dir", dir)
	url, stopOld := serveOld(t, old, dir)
	keys := signtest.KeyPair(t, "cosign.pub")
	priv := filepath.Join(t.TempDir(), "cosign.key")
	if err := os.WriteFile(priv, keys.PrivatePEM, 0o600); err != nil {
		t.Fatal(err)
	}
	runOld(t, old, "publisher", "add-key", "--server", url, "--token", tok, "--publisher", "example.com", "--key", priv)
	runOld(t, old, "publish", "--server", url, "--token", tok, "--version", "1.0.0", "../catalog/testdata/reference/catalog.yaml")
	shared := catalogtest.Catalog(catalogtest.Options{Name: "shared", Functions: 3, Group: "fn.shared.io"})
	if r := do(t, http.MethodPut, url+"/api/v1/catalogs/shared/versions/1.0.0", tok, shared); r.status != http.StatusCreated {
		t.Fatalf("publish shared on the previous release: %d %s", r.status, r.body)
	}
	pages := map[string][]byte{}
	for _, p := range []string{"/catalogs/example-functions/1.0.0/catalog.yaml", "/catalogs/shared/1.0.0/catalog.yaml"} {
		r := do(t, http.MethodGet, url+p, "", nil)
		if r.status != http.StatusOK {
			t.Fatalf("GET %s on the previous release: %d", p, r.status)
		}
		pages[p] = r.body
	}
	stopOld()
	before := databaseRows(t, dir)

	url, _ = startServe(t, dir)
	after := databaseRows(t, dir)
	for table, rows := range before {
		if table == "sequences" || table == "schema_migrations" {
			continue
		}
		if len(after[table]) < len(rows) {
			t.Errorf("table %s: %d rows before the upgrade, %d after", table, len(rows), len(after[table]))
		}
	}
	for p, want := range pages {
		if r := do(t, http.MethodGet, url+p, "", nil); r.status != http.StatusOK || !bytes.Equal(r.body, want) {
			t.Errorf("GET %s after the upgrade: %d, the same bytes: %v", p, r.status, bytes.Equal(r.body, want))
		}
	}
	if r := do(t, http.MethodPut, url+"/api/v1/catalogs/shared/versions/1.1.0", tok, shared); r.status != http.StatusCreated {
		t.Errorf("the previous release's token, after the upgrade: %d %s", r.status, r.body)
	}
	if r := do(t, http.MethodGet, url+"/api/v1/functions?q=shared", "", nil); r.status != http.StatusOK || !strings.Contains(string(r.body), "fn.shared.io") {
		t.Errorf("search after the upgrade: %d %s", r.status, r.body)
	}
}

// buildPreviousRelease builds krm-catalog at previousRelease from this clone's history.
func buildPreviousRelease(t *testing.T) string {
	t.Helper()
	root, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		testenv.Missing(t, "a git checkout of krm-catalog", "run the tests from a clone")
		return ""
	}
	repo := strings.TrimSpace(string(root))
	if err := exec.Command("git", "-C", repo, "cat-file", "-e", previousRelease+"^{commit}").Run(); err != nil {
		testenv.Missing(t, "the previous release's commit "+previousRelease[:12], "fetch the full history (git fetch --unshallow)")
		return ""
	}
	src := t.TempDir()
	archive := exec.Command("git", "-C", repo, "archive", previousRelease)
	extract := exec.Command("tar", "-x", "-C", src)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	extract.Stdin = pipe
	if err := extract.Start(); err != nil {
		t.Fatal(err)
	}
	var archiveErr bytes.Buffer
	archive.Stderr = &archiveErr
	if err := archive.Run(); err != nil {
		t.Fatalf("git archive: %v %s", err, archiveErr.String())
	}
	if err := extract.Wait(); err != nil {
		t.Fatalf("tar: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "krm-catalog-previous")
	// a whole build: not beside the timing-bound tests of other packages
	testenv.Exclusive(t)
	build := exec.Command("go", "build", "-o", bin, "./cmd/krm-catalog")
	build.Dir = src
	build.Env = append(os.Environ(), "GOFLAGS=-mod=readonly", "GOTOOLCHAIN=local")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the previous release: %v\n%s", err, out)
	}
	return bin
}

func runOld(t *testing.T, bin string, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	c := exec.Command(bin, args...)
	c.Env = append(os.Environ(), "COSIGN_PASSWORD="+signtest.Password)
	c.Stdout, c.Stderr = &out, &errOut
	if err := c.Run(); err != nil {
		t.Fatalf("previous release %s: %v\n%s%s", strings.Join(args[:2], " "), err, out.String(), errOut.String())
	}
	return out.String()
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	return s[strings.LastIndex(s, "\n")+1:]
}

// serveOld starts the previous release's serve on dir and returns its URL and a stop that sends
// SIGTERM and waits for the exit.
func serveOld(t *testing.T, bin, dir string) (string, func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	c := exec.CommandContext(ctx, bin, "serve", "--addr", "127.0.0.1:0", "--data-dir", dir)
	stderr, err := c.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		_ = c.Process.Signal(syscall.SIGTERM)
		if err := c.Wait(); err != nil {
			t.Errorf("the previous release's serve: %v", err)
		}
		cancel()
	}
	t.Cleanup(stop)
	found := make(chan string, 1)
	var logs testenv.SyncBuffer
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			logs.Write(append(sc.Bytes(), '\n'))
			if m := servingURL.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case url := <-found:
		if !waitReady(ctx, url) {
			t.Fatalf("the previous release's serve did not become ready:\n%s", logs.String())
		}
		return url, stop
	case <-ctx.Done():
		t.Fatalf("the previous release's serve said no URL:\n%s", logs.String())
		return "", stop
	}
}

// waitReady polls url's /readyz until it answers 200 or ctx ends.
func waitReady(ctx context.Context, url string) bool {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/readyz", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return true
			}
		}
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
}
