// Package functions tests resolving and running KRM functions end to end, with the real parts: the
// krm-catalog binary, the example functions built statically, an https server, an OCI registry and
// Docker started by the tests, git, and kustomize v5.8.2.
package functions

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/krm-catalog/krm-catalog/examples/fnexamples"
	"github.com/krm-catalog/krm-catalog/fn/fntest"
)

var bins fntest.Bins

func TestMain(m *testing.M) { os.Exit(fntest.Main(m, true, &bins)) }

// run is one krm-catalog (or other) command.
type run struct {
	env   []string
	stdin string
	dir   string
}

type output struct {
	stdout, stderr string
	code           int
}

func (o output) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", o.code, o.stdout, o.stderr)
}

func (r run) exec(t testing.TB, bin string, args ...string) output {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), r.env...)
	cmd.Dir = r.dir
	cmd.Stdin = strings.NewReader(r.stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("%s %v: %v", bin, args, err)
		}
		code = ee.ExitCode()
	}
	return output{stdout.String(), stderr.String(), code}
}

func (r run) krm(t testing.TB, args ...string) output {
	t.Helper()
	return r.exec(t, bins.KrmCatalog, args...)
}

// published is the example catalog served over https by a server of the test.
type published struct {
	catalog string // path of the catalog file
	srv     *httptest.Server
	hits    *fntest.Counter
	env     []string // SSL_CERT_FILE for krm-catalog to trust the server
}

// publish serves the example functions (built for this machine) and the starlark example over
// https, and writes a catalog naming them. override replaces what is served at a URL path.
func publish(t testing.TB, override map[string]string) published {
	t.Helper()
	return publishImages(t, override, nil)
}

// publishImages is publish with container images listed for some functions (by name), so that
// they can be found by image.
func publishImages(t testing.TB, override, images map[string]string) published {
	t.Helper()
	files := map[string]string{"/" + fnexamples.StarlarkScript: filepath.Join(bins.Root, "examples", "functions", fnexamples.StarlarkScript)}
	p := fnexamples.Current()
	for name, path := range bins.Fn {
		files[fmt.Sprintf("/%s/%s-%s/%s", name, p.OS, p.Arch, name)] = path
	}
	served := maps.Clone(files)
	maps.Copy(served, override)
	srv, hits := fntest.TLSFiles(t, served)
	in := fnexamples.CatalogInput{Name: "e2e", Exec: map[string][]fnexamples.Exec{}, Images: images}
	for _, f := range fnexamples.Functions() {
		urlPath := fmt.Sprintf("/%s/%s-%s/%s", f.Name, p.OS, p.Arch, f.Name)
		sum, err := fnexamples.FileSHA256(files[urlPath])
		if err != nil {
			t.Fatal(err)
		}
		in.Exec[f.Name] = []fnexamples.Exec{{Platform: p, URI: srv.URL + urlPath, SHA256: sum}}
	}
	sum, err := fnexamples.FileSHA256(files["/"+fnexamples.StarlarkScript])
	if err != nil {
		t.Fatal(err)
	}
	in.StarlarkURI, in.StarlarkSHA256 = srv.URL+"/"+fnexamples.StarlarkScript, sum
	data, err := fnexamples.Catalog(in)
	if err != nil {
		t.Fatal(err)
	}
	cat := filepath.Join(t.TempDir(), "catalog.yaml")
	if err := os.WriteFile(cat, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return published{catalog: cat, srv: srv, hits: hits, env: []string{"SSL_CERT_FILE=" + fntest.CAFile(t, srv)}}
}

// flags are the catalog flags for a catalog, with a private cache.
func flags(t *testing.T, catalog string) []string {
	return []string{"--catalog", catalog, "--trusted-catalog", catalog, "--cache-dir", t.TempDir()}
}

func writeFile(t testing.TB, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func readFile(t testing.TB, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func goosArch() string {
	p := fnexamples.Current()
	return p.OS + "-" + p.Arch
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
