package resolver

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/internal/testenv"
)

// fnEntry is one function of a test catalog: group, kind, versions, and an image marker that says
// which catalog entry a resolution came from.
type fnEntry struct {
	group, kind, marker string
	versions            []string
}

func catalogYAML(name string, fns ...fnEntry) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: config.kubernetes.io/v1alpha1\nkind: KRMFunctionCatalog\nmetadata:\n  name: %s\nspec:\n  krmFunctions:\n", name)
	for _, f := range fns {
		fmt.Fprintf(&b, "  - group: %s\n    names:\n      kind: %s\n    description: test\n    publisher: example.com\n    versions:\n", f.group, f.kind)
		for _, v := range f.versions {
			sum := sha256.Sum256([]byte(f.marker + v))
			fmt.Fprintf(&b, "    - name: %s\n      runtime:\n        container:\n          image: registry.example.com/%s@sha256:%x\n", v, f.marker, sum)
		}
	}
	return b.String()
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func marker(res *Resolution) string {
	img := res.Version.Runtime.Container.Image
	img = strings.TrimPrefix(img, "registry.example.com/")
	m, _, _ := strings.Cut(img, "@")
	return m
}

func TestResolveOrderAndFirstMatch(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	first := writeFile(t, dir, "first.yaml", catalogYAML("first",
		fnEntry{"fn.example.com", "SetNamespace", "first-a", []string{"v1"}},
		fnEntry{"fn.example.com", "SetNamespace", "first-b", []string{"v1", "v2"}}, // same GVK again: the first entry wins
	))
	second := writeFile(t, dir, "second.yaml", catalogYAML("second",
		fnEntry{"fn.example.com", "SetNamespace", "second", []string{"v1", "v2"}},
		fnEntry{"fn.example.com", "SetLabels", "labels", []string{"v1"}},
	))
	r, err := New(Options{Catalogs: []string{first, second}, Trusted: []string{first, second}, CacheDir: "-"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ apiVersion, kind, want string }{
		{"fn.example.com/v1", "SetNamespace", "first-a"},
		{"fn.example.com/v2", "SetNamespace", "first-b"}, // within one catalog, the first entry that has the version
		{"fn.example.com/v1", "SetLabels", "labels"},
	}
	for _, tc := range tests {
		res, err := r.ResolveGVK(context.Background(), tc.apiVersion, tc.kind)
		if err != nil {
			t.Fatal(err)
		}
		if got := marker(res); got != tc.want {
			t.Errorf("%s %s came from %s, want %s", tc.apiVersion, tc.kind, got, tc.want)
		}
	}
}

func TestResolveNotFoundListsCatalogs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := writeFile(t, dir, "a.yaml", catalogYAML("a", fnEntry{"fn.example.com", "SetNamespace", "a", []string{"v1"}}))
	b := writeFile(t, dir, "b.yaml", catalogYAML("b", fnEntry{"other.example.com", "Thing", "b", []string{"v1"}}))
	builtin := writeFile(t, dir, "builtin.yaml", catalogYAML("builtin", fnEntry{"builtin.example.com", "X", "x", []string{"v1"}}))
	r, err := New(Options{Builtin: builtin, Catalogs: []string{a, b}, Trusted: []string{a, b}, CacheDir: "-"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.ResolveGVK(context.Background(), "fn.example.com/v9", "SetNamespace")
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("error = %v, want ErrNotFound", err)
	}
	for _, s := range []string{builtin + " (built-in)", a, b, "searched 3 catalog(s)", "versions v1"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not mention %q", err, s)
		}
	}
}

func TestResolveTrust(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	trusted := writeFile(t, dir, "trusted.yaml", catalogYAML("t", fnEntry{"fn.example.com", "A", "a", []string{"v1"}}))
	untrusted := writeFile(t, dir, "untrusted.yaml", catalogYAML("u", fnEntry{"fn.example.com", "B", "b", []string{"v1"}}))
	r, err := New(Options{Catalogs: []string{trusted, untrusted}, Trusted: []string{trusted}, CacheDir: "-"})
	if err != nil {
		t.Fatal(err)
	}
	// found in the trusted catalog before the search reaches the untrusted one: fine
	if _, err := r.ResolveGVK(context.Background(), "fn.example.com/v1", "A"); err != nil {
		t.Fatal(err)
	}
	_, err = r.ResolveGVK(context.Background(), "fn.example.com/v1", "B")
	if !errors.Is(err, ErrUntrustedCatalog) || !strings.Contains(err.Error(), "--trusted-catalog "+untrusted) {
		t.Fatalf("error = %v, want ErrUntrustedCatalog naming --trusted-catalog", err)
	}
}

// Trust is granted to a catalog, not to a spelling: every spelling of the same file is trusted,
// another file of the same name is not.
func TestTrustBySameFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	trusted := writeFile(t, dir, "catalog.yaml", catalogYAML("c", fnEntry{"fn.example.com", "A", "a", []string{"v1"}}))
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(wd, trusted)
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "linked.yaml")
	if err := os.Symlink(trusted, link); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		catalog, trust string
		ok             bool
	}{
		{trusted, trusted, true},
		{rel, trusted, true},
		{"./" + rel, rel, true},
		{trusted, "./" + rel, true},
		{filepath.Join(dir, ".", "sub", "..", "catalog.yaml"), trusted, true},
		{link, trusted, true},
		{"./catalog.yaml", trusted, false}, // the working directory's, another file
		{trusted, filepath.Join(t.TempDir(), "catalog.yaml"), false},
	}
	for _, tc := range tests {
		r, err := New(Options{Catalogs: []string{tc.catalog}, Trusted: []string{tc.trust}, CacheDir: "-"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = r.ResolveGVK(context.Background(), "fn.example.com/v1", "A")
		if got := !errors.Is(err, ErrUntrustedCatalog); got != tc.ok {
			t.Errorf("--catalog %s --trusted-catalog %s: %v, want trusted=%v", tc.catalog, tc.trust, err, tc.ok)
		}
	}
}

// TestTrustAsDeclared: a catalog a Kustomization lists is trusted by the value it declares, from
// any working directory, and the error names that value; another value is not.
func TestTrustAsDeclared(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cat := writeFile(t, dir, "catalog.yaml", catalogYAML("c", fnEntry{"fn.example.com", "A", "a", []string{"v1"}}))
	declared := map[string][]string{cat: {"../../catalog.yaml"}}
	tests := []struct {
		trust string
		ok    bool
	}{
		{"../../catalog.yaml", true},
		{"./../../catalog.yaml", true},
		{"catalog.yaml", false},
		{"../catalog.yaml", false},
	}
	for _, tc := range tests {
		r, err := New(Options{Catalogs: []string{cat}, Trusted: []string{tc.trust}, Declared: declared, CacheDir: "-"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = r.ResolveGVK(context.Background(), "fn.example.com/v1", "A")
		if got := !errors.Is(err, ErrUntrustedCatalog); got != tc.ok {
			t.Errorf("--trusted-catalog %s for a catalog declared as ../../catalog.yaml: %v, want trusted=%v", tc.trust, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "--trusted-catalog ../../catalog.yaml") {
			t.Errorf("the error does not name the declared value: %v", err)
		}
	}
}

func TestBuiltinIsFirstAndTrusted(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	builtin := writeFile(t, dir, "builtin.yaml", catalogYAML("builtin", fnEntry{"fn.example.com", "A", "builtin", []string{"v1"}}))
	user := writeFile(t, dir, "user.yaml", catalogYAML("user", fnEntry{"fn.example.com", "A", "user", []string{"v1"}}))
	r, err := New(Options{Builtin: builtin, Catalogs: []string{user}, Trusted: []string{user}, CacheDir: "-"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.ResolveGVK(context.Background(), "fn.example.com/v1", "A")
	if err != nil {
		t.Fatal(err)
	}
	if marker(res) != "builtin" || !res.Builtin {
		t.Errorf("resolved from %s (builtin %v), want the built-in catalog", marker(res), res.Builtin)
	}
}

func TestBuiltinFromEnvironment(t *testing.T) {
	t.Parallel()
	env := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	if got := Builtin(env(map[string]string{EnvBuiltin: " oci://r.example.com/c:v1 "})); got != "oci://r.example.com/c:v1" {
		t.Errorf("Builtin = %q", got)
	}
	if got := Builtin(env(map[string]string{EnvBuiltin: ""})); got != "" {
		t.Errorf("an empty %s must turn the built-in catalog off, got %q", EnvBuiltin, got)
	}
	if got := Builtin(env(nil)); got != builtinCatalog {
		t.Errorf("Builtin = %q, want the link-time value %q", got, builtinCatalog)
	}
}

// countingServer serves a catalog over TLS with an ETag and counts requests and 304s.
func countingServer(t *testing.T, body string) (*httptest.Server, *atomic.Int32, *atomic.Int32) {
	t.Helper()
	var hits, notModified atomic.Int32
	etag := fmt.Sprintf(`"%x"`, sha256.Sum256([]byte(body)))
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("ETag", etag)
		if r.Header.Get("If-None-Match") == etag {
			notModified.Add(1)
			w.WriteHeader(http.StatusNotModified)
			return
		}
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv, &hits, &notModified
}

func TestHTTPSCatalogRevalidatedWithETag(t *testing.T) {
	t.Parallel()
	srv, hits, notModified := countingServer(t, catalogYAML("remote", fnEntry{"fn.example.com", "A", "remote", []string{"v1"}}))
	ref := srv.URL + "/catalog.yaml"
	cache := t.TempDir()
	for i := range 3 {
		r, err := New(Options{Catalogs: []string{ref}, Trusted: []string{ref}, HTTPClient: srv.Client(), CacheDir: cache})
		if err != nil {
			t.Fatal(err)
		}
		res, err := r.ResolveGVK(context.Background(), "fn.example.com/v1", "A")
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		if marker(res) != "remote" {
			t.Fatalf("run %d resolved from %s", i, marker(res))
		}
	}
	if hits.Load() != 3 || notModified.Load() != 2 {
		t.Errorf("requests = %d, 304s = %d; want 3 requests of which 2 answered 304 from the cache", hits.Load(), notModified.Load())
	}
}

func TestCatalogNeverFetchedWhenNotNeeded(t *testing.T) {
	t.Parallel()
	srv, hits, _ := countingServer(t, catalogYAML("remote", fnEntry{"fn.example.com", "A", "remote", []string{"v1"}}))
	ref := srv.URL + "/catalog.yaml"
	dir := t.TempDir()
	local := writeFile(t, dir, "local.yaml", catalogYAML("local", fnEntry{"fn.example.com", "A", "local", []string{"v1"}}))
	// the remote catalog is not even trusted: it is never reached, so that is no error either
	r, err := New(Options{Catalogs: []string{local, ref}, Trusted: []string{local}, HTTPClient: srv.Client(), CacheDir: "-"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.ResolveGVK(context.Background(), "fn.example.com/v1", "A"); err != nil {
		t.Fatal(err)
	}
	cfg, _ := yaml.Parse("apiVersion: fn.example.com/v1\nkind: B\nmetadata:\n  annotations:\n    config.kubernetes.io/function: |\n      container:\n        image: example.com/b:v1\n")
	if res, err := r.Resolve(context.Background(), cfg); err != nil || res.Explicit == nil {
		t.Fatalf("explicit runtime: %v, %+v", err, res)
	}
	if hits.Load() != 0 {
		t.Errorf("the catalog no function needed was fetched %d times", hits.Load())
	}
	// an untrusted catalog is refused before it is fetched
	if _, err := r.ResolveGVK(context.Background(), "fn.example.com/v1", "Missing"); !errors.Is(err, ErrUntrustedCatalog) {
		t.Fatalf("error = %v, want ErrUntrustedCatalog", err)
	}
	if hits.Load() != 0 {
		t.Errorf("the untrusted catalog was fetched %d times", hits.Load())
	}
}

func TestHTTPSErrors(t *testing.T) {
	t.Parallel()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/bad.yaml" {
			_, _ = w.Write([]byte(catalogYAML("bad", fnEntry{"Not_A_Group", "A", "x", []string{"v1"}})))
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		path string
		want error
	}{{"/missing.yaml", ErrFetch}, {"/bad.yaml", ErrInvalidCatalog}} {
		ref := srv.URL + tc.path
		r, _ := New(Options{Catalogs: []string{ref}, Trusted: []string{ref}, HTTPClient: srv.Client(), CacheDir: "-"})
		if _, err := r.ResolveGVK(context.Background(), "fn.example.com/v1", "A"); !errors.Is(err, tc.want) {
			t.Errorf("%s: error = %v, want %v", tc.path, err, tc.want)
		}
	}
}

func TestGitCatalog(t *testing.T) {
	t.Parallel()
	git, err := exec.LookPath("git")
	if err != nil {
		testenv.Missing(t, "git", "apt-get install git")
	}
	dir := t.TempDir()
	work := filepath.Join(dir, "work")
	bare := filepath.Join(dir, "catalogs.git")
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(git, args...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	run("init", "-q", "-b", "main", work)
	if err := os.MkdirAll(filepath.Join(work, "platform"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, work, "platform/catalog.yaml", catalogYAML("v1", fnEntry{"fn.example.com", "A", "git-v1", []string{"v1"}}))
	run("-C", work, "add", ".")
	run("-C", work, "commit", "-q", "-m", "v1")
	run("-C", work, "tag", "v1.0.0")
	firstCommit := run("-C", work, "rev-parse", "HEAD")
	writeFile(t, work, "platform/catalog.yaml", catalogYAML("v2", fnEntry{"fn.example.com", "A", "git-v2", []string{"v1"}}))
	run("-C", work, "commit", "-q", "-am", "v2")
	run("clone", "-q", "--bare", work, bare)

	tests := []struct{ ref, want string }{
		{"git::file://" + bare + "//platform/catalog.yaml?ref=v1.0.0", "git-v1"},
		{"git::file://" + bare + "//platform/catalog.yaml?ref=main", "git-v2"},
		{"git::file://" + bare + "//platform/catalog.yaml", "git-v2"},
		{"git::file://" + bare + "//platform/catalog.yaml?ref=" + firstCommit, "git-v1"},
	}
	for _, tc := range tests {
		r, err := New(Options{Catalogs: []string{tc.ref}, Trusted: []string{tc.ref}, Git: git, CacheDir: "-"})
		if err != nil {
			t.Fatal(err)
		}
		res, err := r.ResolveGVK(context.Background(), "fn.example.com/v1", "A")
		if err != nil {
			t.Fatalf("%s: %v", tc.ref, err)
		}
		if got := marker(res); got != tc.want {
			t.Errorf("%s resolved from %s, want %s", tc.ref, got, tc.want)
		}
	}
	missing := "git::file://" + bare + "//nope.yaml?ref=main"
	r, _ := New(Options{Catalogs: []string{missing}, Trusted: []string{missing}, Git: git, CacheDir: "-"})
	if _, err := r.ResolveGVK(context.Background(), "fn.example.com/v1", "A"); !errors.Is(err, ErrFetch) {
		t.Errorf("missing file: error = %v, want ErrFetch", err)
	}
}

// fakePuller is a CatalogPuller for unit tests; the real one is exercised end to end.
type fakePuller map[string]string

func (f fakePuller) PullCatalog(_ context.Context, ref string) ([]byte, error) {
	if s, ok := f[ref]; ok {
		return []byte(s), nil
	}
	return nil, errors.New("not found")
}

func TestOCICatalogThroughPuller(t *testing.T) {
	t.Parallel()
	ref := "oci://registry.example.com/catalogs/platform:v1"
	puller := fakePuller{"registry.example.com/catalogs/platform:v1": catalogYAML("oci", fnEntry{"fn.example.com", "A", "oci", []string{"v1"}})}
	r, err := New(Options{Catalogs: []string{ref}, Trusted: []string{ref}, OCI: puller, CacheDir: "-"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.ResolveGVK(context.Background(), "fn.example.com/v1", "A")
	if err != nil {
		t.Fatal(err)
	}
	want := &Resolution{APIVersion: "fn.example.com/v1", Kind: "A", Catalog: ref, CatalogName: "oci"}
	got := &Resolution{APIVersion: res.APIVersion, Kind: res.Kind, Catalog: res.Catalog, CatalogName: res.CatalogName}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Error(diff)
	}
	r2, _ := New(Options{Catalogs: []string{ref}, Trusted: []string{ref}, CacheDir: "-"})
	if _, err := r2.ResolveGVK(context.Background(), "fn.example.com/v1", "A"); err == nil || !strings.Contains(err.Error(), "no OCI client") {
		t.Errorf("error = %v, want one saying there is no OCI client", err)
	}
}

func TestValidationIsRemembered(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cache := t.TempDir()
	good := writeFile(t, dir, "good.yaml", catalogYAML("good", fnEntry{"fn.example.com", "A", "good", []string{"v1"}}))
	bad := writeFile(t, dir, "bad.yaml", catalogYAML("bad", fnEntry{"Bad_Group", "A", "bad", []string{"v1"}}))
	for range 2 {
		r, err := New(Options{Catalogs: []string{good}, Trusted: []string{good}, CacheDir: cache})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.ResolveGVK(context.Background(), "fn.example.com/v1", "A"); err != nil {
			t.Fatal(err)
		}
		rb, _ := New(Options{Catalogs: []string{bad}, Trusted: []string{bad}, CacheDir: cache})
		if _, err := rb.ResolveGVK(context.Background(), "fn.example.com/v1", "A"); !errors.Is(err, ErrInvalidCatalog) {
			t.Fatalf("error = %v, want ErrInvalidCatalog every time", err)
		}
	}
	markers, err := os.ReadDir(filepath.Join(cache, "validated"))
	if err != nil {
		t.Fatal(err)
	}
	if len(markers) != 1 {
		t.Errorf("%d validation markers, want 1 (the valid catalog only)", len(markers))
	}
}
