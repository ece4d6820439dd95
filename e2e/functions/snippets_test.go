package functions

import (
	"bufio"
	"html"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/krm-catalog/krm-catalog/internal/testenv"
)

// serveEmbedded starts `krm-catalog serve` (the binary) on its embedded default, a PostgreSQL
// cluster of its own in a temporary directory, and returns its URL; it is stopped at cleanup.
func serveEmbedded(t *testing.T) (url, dataDir string) {
	t.Helper()
	if _, err := os.Stat("/usr/lib/postgresql/15/bin/initdb"); err != nil {
		if _, err := exec.LookPath("pg_ctl"); err != nil {
			testenv.Missing(t, "PostgreSQL", "install it (Debian: apt-get install postgresql)")
		}
	}
	dataDir = testenv.TraversableTempDir(t)
	cmd := exec.Command(bins.KrmCatalog, "serve", "--addr", "127.0.0.1:0", "--data-dir", dataDir)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	})
	serving := regexp.MustCompile(`msg=serving url=(http://127\.0\.0\.1:[0-9]+)`)
	var logs strings.Builder
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		logs.WriteString(sc.Text() + "\n")
		if m := serving.FindStringSubmatch(sc.Text()); m != nil {
			go func() { _, _ = io.Copy(io.Discard, stderr) }()
			return m[1], dataDir
		}
	}
	t.Fatalf("serve exited before serving:\n%s", logs.String())
	return "", ""
}

var copyRE = regexp.MustCompile(`(?s)<pre id="([a-z-]+)" tabindex="0"><code>(.*?)</code></pre>`)

// servedSnippets returns the copy-ready texts of a page of the service by their element ids.
func servedSnippets(t *testing.T, url string) map[string]string {
	t.Helper()
	resp, err := (&http.Client{Timeout: time.Minute}).Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	out := map[string]string{}
	for _, m := range copyRE.FindAllStringSubmatch(string(body), -1) {
		out[m[1]] = html.UnescapeString(m[2])
	}
	return out
}

// fillIn replaces the placeholders of a function config snippet that the schema does not allow
// empty: what a reader fills in before running it. Nothing else of the snippets is changed.
var fillIn = strings.NewReplacer("namespace: \"\"", "namespace: shop", "labels: {}", "labels: {team: shop}", "annotations: {}", "annotations: {team: shop}")

// TestServeSnippetsRun: the snippets of the pages of a published catalog and of its functions run
// as written against `krm-catalog serve` on its embedded default (plain http on 127.0.0.1): the
// curl commands and the krm-catalog command of the catalog page, and for every function the
// `fn run` command over its function config, and its Kustomization built by `krm-catalog build`
// as the snippet's introduction says. The Kptfile step is kpt's to run, which the tests do not.
func TestServeSnippetsRun(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("curl"); err != nil {
		testenv.Missing(t, "curl", "install it (Debian: apt-get install curl)")
	}
	p := publish(t, nil)
	url, dataDir := serveEmbedded(t)
	tok := run{}.krm(t, "token", "create", "--publisher", "example.com", "--data-dir", dataDir)
	if tok.code != 0 {
		t.Fatalf("token create: %s", tok)
	}
	lines := strings.Split(strings.TrimSpace(tok.stdout), "\n")
	if out := (run{}).krm(t, "publish", "--server", url, "--token", lines[len(lines)-1], "--version", "1.0.0", p.catalog); out.code != 0 {
		t.Fatalf("publish: %s", out)
	}
	env := append([]string{"PATH=" + filepath.Dir(bins.KrmCatalog) + ":" + os.Getenv("PATH"), "XDG_CACHE_HOME=" + t.TempDir()}, p.env...)
	shell := func(t *testing.T, dir, script string) output {
		t.Helper()
		return run{env: env, dir: dir}.exec(t, "bash", "-c", "set -eu\n"+script)
	}
	published := readFile(t, p.catalog)

	t.Run("catalog page", func(t *testing.T) {
		s := servedSnippets(t, url+"/catalogs/e2e")
		for _, id := range []string{"curl-latest", "curl-pinned"} {
			if s[id] == "" {
				t.Fatalf("no %s snippet: %v", id, s)
			}
			if out := shell(t, t.TempDir(), s[id]); out.code != 0 || out.stdout != published {
				t.Errorf("%s: %s\nwant the catalog as published", s[id], out)
			}
		}
		if !strings.Contains(s["resolve-cmd"], "--trusted-catalog "+url+"/catalogs/e2e/1.0.0/catalog.yaml") {
			t.Fatalf("no krm-catalog command trusting the catalog: %q", s["resolve-cmd"])
		}
		if out := shell(t, t.TempDir(), s["resolve-cmd"]); out.code != 0 {
			t.Errorf("%s: %s", s["resolve-cmd"], out)
		}
	})

	for _, kind := range []string{"SetNamespace", "SetLabels", "RequireResourceLimits", "SetAnnotations"} {
		t.Run(kind, func(t *testing.T) {
			s := servedSnippets(t, url+"/functions/fn.example.com/"+kind)
			for _, id := range []string{"snippet-fn-config", "snippet-fn-run", "snippet-kustomization"} {
				if s[id] == "" {
					t.Fatalf("no %s snippet: %v", id, s)
				}
			}
			catalogURL := url + "/catalogs/e2e/catalog.yaml"
			config := fillIn.Replace(s["snippet-fn-config"])

			dir := t.TempDir()
			writeFile(t, dir, "fn.yaml", config)
			writeFile(t, dir, "app/deployment.yaml", limitedDeployment)
			if out := shell(t, dir, s["snippet-fn-run"]); out.code != 0 {
				t.Errorf("%s\nwith fn.yaml:\n%s\n%s", s["snippet-fn-run"], config, out)
			}

			// the Kustomization's introduction: krm-catalog build DIR --trusted-catalog URL
			dir = t.TempDir()
			writeFile(t, dir, "fn.yaml", config)
			writeFile(t, dir, "resources.yaml", limitedDeployment)
			writeFile(t, dir, "kustomization.yaml", s["snippet-kustomization"])
			if !strings.Contains(s["snippet-kustomization"], catalogURL) {
				t.Fatalf("the Kustomization does not list %s:\n%s", catalogURL, s["snippet-kustomization"])
			}
			if out := shell(t, dir, "krm-catalog build . --trusted-catalog "+catalogURL); out.code != 0 || !strings.Contains(out.stdout, "kind: Deployment") {
				t.Errorf("build of the Kustomization snippet:\n%s\n%s", s["snippet-kustomization"], out)
			}
		})
	}
}

const limitedDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    spec:
      containers:
      - name: web
        image: nginx
        resources:
          limits: {cpu: 100m, memory: 64Mi}
`
