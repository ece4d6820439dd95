// Package fntest holds what the function-runtime tests share: the example functions built once per
// test binary, the real parts they need (Docker, a registry on 127.0.0.1, kustomize), each found or
// started by the test, and skipped with a how-to outside CI or failed under CI=true.
package fntest

import (
	"context"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/krm-catalog/krm-catalog/examples/fnexamples"
	"github.com/krm-catalog/krm-catalog/internal/testenv"
)

// Missing skips the test outside CI and fails it with CI=true, saying how to get the part.
func Missing(t testing.TB, what, howTo string) {
	t.Helper()
	testenv.Missing(t, what, howTo)
}

// Bins are the example functions built for this machine, and krm-catalog itself.
type Bins struct {
	Dir string
	// Fn are the example functions by name (set-namespace, set-labels, require-limits).
	Fn         map[string]string
	KrmCatalog string
	Root       string
}

// Build builds the example functions (and, with withCLI, krm-catalog) into dir. It is meant for
// TestMain, once per test binary.
func Build(dir string, withCLI bool) (Bins, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	root, err := fnexamples.ModuleRoot()
	if err != nil {
		return Bins{}, err
	}
	fns, err := fnexamples.Build(ctx, root, dir, fnexamples.Current())
	if err != nil {
		return Bins{}, err
	}
	b := Bins{Dir: dir, Fn: fns, Root: root}
	if prebuilt := os.Getenv("KRM_CATALOG_E2E_BIN"); withCLI && prebuilt != "" {
		// a binary built elsewhere (a release build, or one with -ldflags -X for the built-in catalog)
		b.KrmCatalog = prebuilt
		return b, nil
	}
	if withCLI {
		if b.KrmCatalog, err = fnexamples.BuildCommand(ctx, root, dir, "-s -w"); err != nil {
			return Bins{}, err
		}
	}
	return b, nil
}

// Main runs a test binary's tests with the binaries built into a temporary directory.
func Main(m *testing.M, withCLI bool, bins *Bins) int {
	dir, err := os.MkdirTemp("", "krm-catalog-fntest-*")
	if err != nil {
		log.Print(err)
		return 1
	}
	defer os.RemoveAll(dir)
	b, err := Build(dir, withCLI)
	if err != nil {
		log.Print(err)
		return 1
	}
	*bins = b
	return m.Run()
}

// Docker returns the container engine after checking that its daemon answers.
func Docker(t testing.TB) string {
	t.Helper()
	engine := "docker"
	if v := os.Getenv("KRM_FN_RUNTIME"); v != "" {
		engine = v
	}
	p, err := exec.LookPath(engine)
	if err != nil {
		Missing(t, engine, "install the Docker engine (Debian ships it as a package) and start its daemon")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, p, "info", "--format", "{{.ServerVersion}}").CombinedOutput(); err != nil {
		Missing(t, engine+" daemon", fmt.Sprintf("start it (%s info: %v: %s)", engine, err, strings.TrimSpace(string(out))))
	}
	return p
}

// Registry starts an OCI registry (go-containerregistry's, in-process) on 127.0.0.1 and returns
// its host:port. Docker pushes to it without TLS: loopback registries are insecure-allowed.
func Registry(t testing.TB) string {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0)), registry.WithReferrersSupport(true)))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// passwd lets --user nobody resolve in a FROM scratch image.
const passwd = "root:x:0:0:root:/:/sbin/nologin\nnobody:x:65534:65534:nobody:/:/sbin/nologin\n"

// Image builds a FROM scratch image holding the static executable bin as its entrypoint, pushes it
// to the registry at host, and returns the reference pinned by digest (host/name@sha256:...).
func Image(t testing.TB, engine, bin, host, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := t.TempDir()
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	for n, c := range map[string]string{
		"function":   string(data),
		"passwd":     passwd,
		"Dockerfile": "FROM scratch\nCOPY passwd /etc/passwd\nCOPY function /function\nUSER nobody\nENTRYPOINT [\"/function\"]\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(c), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tag := host + "/" + name + ":test"
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, engine, args...)
		cmd.Env = append(os.Environ(), "DOCKER_BUILDKIT=0")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", engine, strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	run("build", "-q", "-t", tag, dir)
	t.Cleanup(func() { _ = exec.Command(engine, "rmi", "-f", tag).Run() })
	run("push", "-q", tag)
	digests := run("inspect", "--format", "{{range .RepoDigests}}{{println .}}{{end}}", tag)
	for _, d := range strings.Fields(digests) {
		if strings.HasPrefix(d, host+"/"+name+"@sha256:") {
			return d
		}
	}
	t.Fatalf("no digest for %s after the push (RepoDigests: %q)", tag, digests)
	return ""
}

// Kustomize is kustomize v5.8.2, built into the tools cache when missing (testenv.Tool).
func Kustomize(t testing.TB) string {
	t.Helper()
	return testenv.Tool(t, "kustomize")
}

// TLSFiles serves files (URL path to file path) over TLS on 127.0.0.1 and counts requests.
func TLSFiles(t testing.TB, files map[string]string) (*httptest.Server, *Counter) {
	t.Helper()
	c := &Counter{}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.add(r.URL.Path)
		f, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		http.ServeFile(w, r, f)
	}))
	t.Cleanup(srv.Close)
	return srv, c
}

// CAFile writes the certificate of a TLS test server to a PEM file, for SSL_CERT_FILE.
func CAFile(t testing.TB, srv *httptest.Server) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "ca.pem")
	pemData := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(p, pemData, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Counter counts requests by URL path.
type Counter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *Counter) add(p string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[p]++
}

// Get returns how often path was requested.
func (c *Counter) Get(path string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[path]
}

// Total returns how many requests there were.
func (c *Counter) Total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.n {
		n += v
	}
	return n
}

// Tree writes files (slash paths relative to a new temporary directory) and returns the directory.
func Tree(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// GoBuild builds a main package of the module (a path such as ./e2e/functions/testdata/probe)
// statically into the test's temporary directory and returns the executable.
func GoBuild(t testing.TB, root, pkg string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-trimpath", "-o", out, pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, msg)
	}
	return out
}

// Deployments returns a ResourceList of n Deployments (about 1.1 KB each, with comments and a flow
// sequence, as people write them) whose functionConfig sets the namespace to ns.
func Deployments(n int, ns string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nfunctionConfig:\n  apiVersion: fn.example.com/v1\n  kind: SetNamespace\n  metadata:\n    name: ns\n  namespace: %s\nitems:\n", ns)
	for i := range n {
		fmt.Fprintf(&b, `- apiVersion: apps/v1
  kind: Deployment
  metadata:
    name: app-%[1]d
    labels:
      app: app-%[1]d
      tier: backend # the tier
    annotations:
      example.com/owner: team-%[2]d
  spec:
    replicas: 3
    selector:
      matchLabels:
        app: app-%[1]d
    template:
      metadata:
        labels:
          app: app-%[1]d
      spec:
        containers:
        - name: main
          image: registry.example.com/app-%[1]d:v1.2.3
          args: ["--port=8080", "--verbose"]
          ports:
          - containerPort: 8080
            protocol: TCP
          env:
          - name: MODE
            value: "production"
          - name: LEVEL
            value: "3"
          resources:
            limits:
              cpu: 500m
              memory: 256Mi
            requests:
              cpu: 100m
              memory: 128Mi
          readinessProbe:
            httpGet:
              path: /healthz
              port: 8080
        - name: sidecar
          image: registry.example.com/sidecar:v0.1.0
          resources:
            limits:
              cpu: 100m
              memory: 64Mi
`, i, i%7)
	}
	return []byte(b.String())
}
