package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/krm-catalog/krm-catalog/cmd/krm-catalog/cmd"
	"github.com/krm-catalog/krm-catalog/internal/testenv"
)

type syncBuffer = testenv.SyncBuffer

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut syncBuffer
	code := cmd.Main(context.Background(), args, cmd.IO{In: strings.NewReader(""), Out: &out, Err: &errOut})
	return code, out.String(), errOut.String()
}

// servingURL finds the address serve logs once it listens.
var servingURL = regexp.MustCompile(`msg=serving url=(http://127\.0\.0\.1:[0-9]+)`)

// startServe runs `krm-catalog serve` in-process on the embedded default and returns its URL and a
// stop function that delivers what SIGTERM would (context cancellation) and waits for the exit code.
func startServe(t *testing.T, dataDir string) (string, func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var logs syncBuffer
	exited := make(chan int, 1)
	// port 0: serve binds a free port itself and logs its URL, so no other process can take the
	// port between a test choosing it and serve binding it
	go func() {
		exited <- cmd.Main(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--data-dir", dataDir}, cmd.IO{In: strings.NewReader(""), Out: &logs, Err: &logs})
	}()
	url := ""
	deadline := time.Now().Add(60 * time.Second)
	for {
		if url == "" {
			if m := servingURL.FindStringSubmatch(logs.String()); m != nil {
				url = m[1]
				// a newcomer is told what to do next
				if want := "open " + url + "/ in a browser; Ctrl-C stops the service"; !strings.Contains(logs.String(), want) {
					t.Errorf("serve's log does not say %q:\n%s", want, logs.String())
				}
			}
		}
		resp, err := http.Get(url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case code := <-exited:
			t.Fatalf("serve exited with %d:\n%s", code, logs.String())
		default:
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("serve did not become ready:\n%s", logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	stopped := false
	stop := func() int {
		if stopped {
			return 0
		}
		stopped = true
		cancel()
		select {
		case code := <-exited:
			return code
		case <-time.After(60 * time.Second):
			t.Fatalf("serve did not stop:\n%s", logs.String())
			return -1
		}
	}
	t.Cleanup(func() { stop() })
	return url, stop
}

func requirePostgres(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("/usr/lib/postgresql/15/bin/initdb"); err == nil {
		return
	}
	if _, err := exec.LookPath("pg_ctl"); err == nil {
		return
	}
	testenv.Missing(t, "PostgreSQL", "install it (Debian: apt-get install postgresql)")
}

func TestEmbeddedDefaultKeepsDataAcrossRestarts(t *testing.T) {
	t.Parallel()
	requirePostgres(t)
	dataDir := traversableTempDir(t)
	url, stop := startServe(t, dataDir)

	// token create works while serve runs on the same data dir, and prints the token alone last
	code, out, errOut := runCLI(t, "token", "create", "--publisher", "example.com", "--data-dir", dataDir)
	if code != 0 {
		t.Fatalf("token create: %d %s", code, errOut)
	}
	if errOut != "" {
		t.Errorf("token create said more than the token (the embedded cluster's log?):\n%s", errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	tok := lines[len(lines)-1]
	if !strings.HasPrefix(tok, "krmc_") || strings.Contains(tok, " ") {
		t.Fatalf("last line %q is not a token", tok)
	}
	// and, for scripts, as JSON
	code, out, errOut = runCLI(t, "token", "create", "--publisher", "example.com", "--data-dir", dataDir, "--format", "json")
	var created struct {
		ID        int64
		Publisher string
		Token     string
	}
	if err := json.Unmarshal([]byte(out), &created); code != 0 || err != nil || created.Publisher != "example.com" || !strings.HasPrefix(created.Token, "krmc_") || created.ID == 0 {
		t.Fatalf("token create --format json: exit %d, %v\n%s%s", code, err, out, errOut)
	}
	if code, out, errOut := runCLI(t, "publish", "--server", url, "--token", tok, "--version", "1.0.0", "../catalog/testdata/reference/catalog.yaml"); code != 0 {
		t.Fatalf("publish: %d %s %s", code, out, errOut)
	}
	if code, _, errOut := runCLI(t, "publish", "--server", url, "--token", "krmc_wrong", "--version", "2.0.0", "../catalog/testdata/reference/catalog.yaml"); code != 1 || !strings.Contains(errOut, "HTTP 401") {
		t.Errorf("publish with a wrong token: exit %d, %s", code, errOut)
	}
	// a new version that drops functions says so, as catalog diff does; --fail-on breaking keeps it out
	const runnable = "../examples/functions/catalog.yaml"
	code, _, errOut = runCLI(t, "publish", "--server", url, "--token", tok, "--version", "2.0.0", "--fail-on", "breaking", runnable)
	if code != 1 || !strings.Contains(errOut, "BREAKING  function-removed  fn.example.com/") || !strings.Contains(errOut, "not published") {
		t.Errorf("publish --fail-on breaking of a version that drops functions: exit %d\n%s", code, errOut)
	}
	if r := do(t, http.MethodGet, url+"/catalogs/example-functions/2.0.0/catalog.yaml", "", nil); r.status != http.StatusNotFound {
		t.Errorf("the version refused by --fail-on breaking was published: %d", r.status)
	}
	code, out, errOut = runCLI(t, "publish", "--server", url, "--token", tok, "--version", "2.0.0", runnable)
	if code != 0 || !strings.Contains(errOut, "function-removed") || !strings.Contains(out, "version 2.0.0 published") {
		t.Errorf("publish of a version that drops functions: exit %d\n%s%s", code, out, errOut)
	}
	if code := stop(); code != 0 {
		t.Fatalf("serve exited with %d after the stop signal", code)
	}

	url, _ = startServe(t, dataDir)
	r := do(t, http.MethodGet, url+"/catalogs/example-functions/1.0.0/catalog.yaml", "", nil)
	if r.status != http.StatusOK || !bytes.Equal(r.body, exampleCatalog(t)) {
		t.Fatalf("after a restart: %d, the published bytes kept: %v", r.status, bytes.Equal(r.body, exampleCatalog(t)))
	}
	if code, out, _ := runCLI(t, "migrate", "version", "--data-dir", dataDir); code != 0 || !regexp.MustCompile(`^schema version (\d+) of (\d+)\n$`).MatchString(out) || strings.Fields(out)[2] != strings.Fields(out)[4] {
		t.Errorf("migrate version: %d %q", code, out)
	}
}

// traversableTempDir is a temporary directory that the postgres user can reach when the tests run
// as root (the cluster then runs as postgres).
func traversableTempDir(t *testing.T) string { return testenv.TraversableTempDir(t) }
