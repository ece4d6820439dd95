package functions

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/krm-catalog/krm-catalog/examples/fnexamples"
)

const deployment = `# Deployment of the web tier
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web # the public face
  labels:
    app: web
spec:
  replicas: 3 # one per zone
  template:
    spec:
      containers:
      - name: web
        image: "nginx:1.25"
        args: ["--port=8080", 'verbose']
        resources:
          limits: {cpu: 500m, memory: 128Mi}
`

const service = `apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  ports:
  - port: 80 # http
`

func configs(t *testing.T, dir string) []string {
	t.Helper()
	return []string{
		"--fn-config", writeFile(t, dir, "ns.yaml", "apiVersion: fn.example.com/v1\nkind: SetNamespace\nmetadata:\n  name: ns\nnamespace: shop\n"),
		"--fn-config", writeFile(t, dir, "team.yaml", "apiVersion: fn.example.com/v1\nkind: SetLabels\nmetadata:\n  name: team\nlabels:\n  team: blue\n"),
		"--fn-config", writeFile(t, dir, "tier.yaml", "apiVersion: fn.example.com/v1\nkind: SetLabels\nmetadata:\n  name: tier\nlabels:\n  tier: frontend\n"),
		"--fn-config", writeFile(t, dir, "limits.yaml", "apiVersion: fn.example.com/v1\nkind: RequireResourceLimits\nmetadata:\n  name: limits\nrequire: [cpu, memory]\n"),
	}
}

// A pipeline of three functions (four steps: set-labels twice) fetched over https, run in server
// mode, over a package whose comments, field order and quoting must survive.
func TestPipelineOverHTTPSInServerMode(t *testing.T) {
	t.Parallel()
	pub := publish(t, nil)
	pkg := t.TempDir()
	writeFile(t, pkg, "app/deployment.yaml", deployment)
	writeFile(t, pkg, "app/service.yaml", service)
	args := append(append([]string{"fn", "run", pkg}, configs(t, t.TempDir())...), flags(t, pub.catalog)...)
	resultsDir := t.TempDir()
	args = append(args, "--results-dir", resultsDir)
	out := run{env: pub.env}.krm(t, args...)
	if out.code != 0 {
		t.Fatal(out)
	}
	wantDeploy := `# Deployment of the web tier
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web # the public face
  labels:
    app: web
    team: blue
    tier: frontend
  namespace: shop
spec:
  replicas: 3 # one per zone
  template:
    spec:
      containers:
      - name: web
        image: "nginx:1.25"
        args: ["--port=8080", 'verbose']
        resources:
          limits: {cpu: 500m, memory: 128Mi}
`
	if diff := cmp.Diff(wantDeploy, readFile(t, filepath.Join(pkg, "app/deployment.yaml"))); diff != "" {
		t.Errorf("deployment.yaml (-want +got):\n%s", diff)
	}
	if got := readFile(t, filepath.Join(pkg, "app/service.yaml")); !strings.Contains(got, "- port: 80 # http") || !strings.Contains(got, "namespace: shop") {
		t.Errorf("service.yaml:\n%s", got)
	}
	// each function was downloaded once; set-labels, which runs twice, was started once as a server
	// and served both steps; the others ran once, as plain processes
	if n := strings.Count(out.stderr, "serving KRM function (spec v2)"); n != 1 {
		t.Errorf("%d function servers started, want 1 (set-labels):\n%s", n, out.stderr)
	}
	if n := pub.hits.Total(); n != 3 {
		t.Errorf("%d downloads, want 3", n)
	}
	if got := readFile(t, filepath.Join(resultsDir, "results.yaml")); !strings.Contains(got, "kind: FunctionResultList") || strings.Count(got, "- function: ") != 4 {
		t.Errorf("results.yaml:\n%s", got)
	}
	// a second run uses the verified cache: no downloads (the cache is per --cache-dir)
}

func TestValidatorFailsTheRunAndNothingIsWritten(t *testing.T) {
	t.Parallel()
	pub := publish(t, nil)
	pkg := t.TempDir()
	noLimits := strings.Replace(deployment, "        resources:\n          limits: {cpu: 500m, memory: 128Mi}\n", "", 1)
	writeFile(t, pkg, "deployment.yaml", noLimits)
	args := append(append([]string{"fn", "run", pkg}, configs(t, t.TempDir())...), flags(t, pub.catalog)...)
	out := run{env: pub.env}.krm(t, args...)
	if out.code != 1 {
		t.Fatalf("exit %d, want 1 for an error result:\n%s", out.code, out)
	}
	for _, want := range []string{`container "web" has no cpu limit`, "spec.template.spec.containers[0].resources.limits.memory", "in deployment.yaml"} {
		if !strings.Contains(out.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, out.stderr)
		}
	}
	if got := readFile(t, filepath.Join(pkg, "deployment.yaml")); got != noLimits {
		t.Errorf("the package was written although the run failed:\n%s", got)
	}
}

func TestSchemaViolationIsAnErrorResultAndNothingRuns(t *testing.T) {
	t.Parallel()
	pub := publish(t, nil)
	cfg := writeFile(t, t.TempDir(), "ns.yaml", "apiVersion: fn.example.com/v1\nkind: SetNamespace\nmetadata:\n  name: ns\nnamespace: Not_A_Namespace\n")
	out := run{env: pub.env, stdin: service}.krm(t, append([]string{"fn", "run", "-", "--fn-config", cfg}, flags(t, pub.catalog)...)...)
	if out.code != 1 || !strings.Contains(out.stderr, "field namespace") {
		t.Fatalf("want exit 1 with an error result naming the field:\n%s", out)
	}
	if pub.hits.Total() != 0 {
		t.Errorf("%d downloads: nothing may be fetched or run for an invalid config", pub.hits.Total())
	}
}

func TestTamperedExecutableIsRefusedAndNeverRuns(t *testing.T) {
	t.Parallel()
	marker := filepath.Join(t.TempDir(), "the-tampered-binary-ran")
	evil := writeFile(t, t.TempDir(), "evil", "#!/bin/sh\ntouch "+marker+"\ncat\n")
	if err := os.Chmod(evil, 0o755); err != nil {
		t.Fatal(err)
	}
	// the catalog pins the real set-namespace; the server hands out the script instead
	pub := publish(t, map[string]string{"/set-namespace/" + goosArch() + "/set-namespace": evil})
	cache := t.TempDir()
	cfg := writeFile(t, t.TempDir(), "ns.yaml", "apiVersion: fn.example.com/v1\nkind: SetNamespace\nnamespace: x\n")
	out := run{env: pub.env, stdin: service}.krm(t, "fn", "run", "-", "--fn-config", cfg, "--catalog", pub.catalog, "--trusted-catalog", pub.catalog, "--cache-dir", cache)
	if out.code == 0 || !strings.Contains(out.stderr, "sha256 digest mismatch") {
		t.Fatalf("want a digest mismatch:\n%s", out)
	}
	if pub.hits.Total() != 1 {
		t.Fatalf("%d downloads: the test did not reach the tampered file", pub.hits.Total())
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the tampered executable ran (%s exists)", marker)
	}
	_ = filepath.WalkDir(cache, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, _ := d.Info(); info.Mode()&0o111 != 0 {
				t.Errorf("an executable was left in the cache: %s", p)
			}
		}
		return nil
	})
}

func TestUntrustedCatalogIsRefused(t *testing.T) {
	t.Parallel()
	pub := publish(t, nil)
	remote := pub.srv.URL + "/catalog.yaml" // never fetched: trust is checked first
	cfg := writeFile(t, t.TempDir(), "ns.yaml", "apiVersion: fn.example.com/v1\nkind: SetNamespace\nnamespace: x\n")
	for _, c := range []string{pub.catalog, remote} {
		out := run{env: pub.env, stdin: service}.krm(t, "fn", "run", "-", "--fn-config", cfg, "--catalog", c, "--trusted-catalog", c+".other")
		if out.code != 2 || !strings.Contains(out.stderr, "untrusted catalog") || !strings.Contains(out.stderr, "--trusted-catalog "+c) {
			t.Errorf("%s: want exit 2 naming --trusted-catalog:\n%s", c, out)
		}
	}
	if pub.hits.Total() != 0 {
		t.Errorf("%d requests reached the server of an untrusted catalog", pub.hits.Total())
	}
}

func TestStarlarkFromCatalogAndStarlarkRun(t *testing.T) {
	t.Parallel()
	pub := publish(t, nil)
	dir := t.TempDir()
	ann := writeFile(t, dir, "ann.yaml", "apiVersion: fn.example.com/v1\nkind: SetAnnotations\nmetadata:\n  name: a\nannotations:\n  owner: platform\n")
	kpt := writeFile(t, dir, "kpt.yaml", `apiVersion: fn.kpt.dev/v1alpha1
kind: StarlarkRun
metadata:
  name: replicas
source: |
  for r in ctx.resource_list["items"]:
      if r["kind"] == "Deployment":
          r["spec"]["replicas"] = ctx.resource_list["functionConfig"]["params"]["replicas"]
params:
  replicas: 5
`)
	out := run{env: pub.env, stdin: deployment + "---\n" + service}.krm(t, append([]string{"fn", "run", "-", "--fn-config", ann, "--fn-config", kpt}, flags(t, pub.catalog)...)...)
	if out.code != 0 {
		t.Fatal(out)
	}
	for _, want := range []string{"replicas: 5 # one per zone", "owner: platform", "# Deployment of the web tier", "- port: 80 # http"} {
		if !strings.Contains(out.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, out.stdout)
		}
	}
	// fail() in the catalog's script is an error result
	none := writeFile(t, dir, "none.yaml", "apiVersion: fn.example.com/v1\nkind: SetAnnotations\nmetadata:\n  name: a\nannotations: {}\n")
	out = run{env: pub.env, stdin: service}.krm(t, append([]string{"fn", "run", "-", "--fn-config", none}, flags(t, pub.catalog)...)...)
	if out.code != 1 || !strings.Contains(out.stderr, "functionConfig must set annotations") {
		t.Errorf("fail() must be an error result:\n%s", out)
	}
}

func TestResolveAndCatalogView(t *testing.T) {
	t.Parallel()
	pub := publish(t, nil)
	out := run{}.krm(t, "resolve", "--catalog", pub.catalog, "--trusted-catalog", pub.catalog, "fn.example.com/v1", "SetNamespace")
	if out.code != 0 {
		t.Fatal(out)
	}
	sum, _ := os.ReadFile(bins.Fn["set-namespace"])
	for _, want := range []string{"kind: SetNamespace", "catalogName: e2e", "conformWithSpecVersions:", "- v2", "platform:", "sha256: " + sha(sum), "uri: " + pub.srv.URL} {
		if !strings.Contains(out.stdout, want) {
			t.Errorf("resolve output lacks %q:\n%s", want, out.stdout)
		}
	}
	out = run{}.krm(t, "resolve", "--catalog", pub.catalog, "--trusted-catalog", pub.catalog, "fn.example.com/v1", "Nope")
	if out.code != 1 || !strings.Contains(out.stderr, "searched 1 catalog(s): "+pub.catalog) {
		t.Errorf("want not found listing the catalog:\n%s", out)
	}
	out = run{}.krm(t, "catalog", "view", pub.catalog)
	if out.code != 0 {
		t.Fatal(out)
	}
	for _, want := range []string{"Catalog:    e2e", "Publishers: example.com", "Signature:  not applicable", "fn.example.com/SetNamespace", "exec " + strings.Replace(goosArch(), "-", "/", 1) + " (v2)", "starlark", "sha256:" + sha(sum)} {
		if !strings.Contains(out.stdout, want) {
			t.Errorf("catalog view lacks %q:\n%s", want, out.stdout)
		}
	}
	if pub.hits.Total() != 0 {
		t.Errorf("resolve and view downloaded %d files; they run nothing", pub.hits.Total())
	}
}

// The built-in catalog: set at build time with -ldflags -X, or by KRM_CATALOG_BUILTIN; searched
// first and trusted without --trusted-catalog.
func TestBuiltinCatalog(t *testing.T) {
	t.Parallel()
	pub := publish(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	linked, err := fnexamples.BuildCommand(ctx, bins.Root, t.TempDir(), "-X github.com/krm-catalog/krm-catalog/resolver.builtinCatalog="+pub.catalog)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		bin  string
		env  []string
	}{
		{"ldflags", linked, nil},
		{"environment", bins.KrmCatalog, []string{"KRM_CATALOG_BUILTIN=" + pub.catalog}},
	} {
		out := run{env: tc.env}.exec(t, tc.bin, "resolve", "fn.example.com/v1", "SetLabels")
		if out.code != 0 || !strings.Contains(out.stdout, "builtin: true") || !strings.Contains(out.stdout, "catalog: "+pub.catalog) {
			t.Errorf("%s: want a resolution from the built-in catalog:\n%s", tc.name, out)
		}
		cfg := writeFile(t, t.TempDir(), "labels.yaml", "apiVersion: fn.example.com/v1\nkind: SetLabels\nlabels:\n  builtin: yes-it-is\n")
		out = run{env: append(tc.env, pub.env...), stdin: service}.exec(t, tc.bin, "fn", "run", "-", "--fn-config", cfg, "--cache-dir", t.TempDir())
		if out.code != 0 || !strings.Contains(out.stdout, "builtin: yes-it-is") {
			t.Errorf("%s: fn run with the built-in catalog:\n%s", tc.name, out)
		}
	}
	// an empty KRM_CATALOG_BUILTIN turns a linked-in catalog off
	out := run{env: []string{"KRM_CATALOG_BUILTIN="}}.exec(t, linked, "resolve", "fn.example.com/v1", "SetLabels")
	if out.code != 1 || !strings.Contains(out.stderr, "no built-in catalog") {
		t.Errorf("KRM_CATALOG_BUILTIN= must turn the built-in catalog off:\n%s", out)
	}
}
