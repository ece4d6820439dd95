package functions

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/krm-catalog/krm-catalog/examples/fnexamples"
)

// Functions written on the SDKs the catalog's real functions use (kyaml's fn/framework, old and
// new, and kptdev/krm-functions-sdk), built from testdata/realfns as modules of their own, listed
// by image in a trusted catalog with an exec runtime, and run through fn render and fn run with
// --runtime exec as kpt runs them. Each case's want/ is the package as kpt leaves it.
type realFns struct {
	catalog, cache string
}

var realFnImages = map[string]string{
	"example.com/fns/sdk-labels:v1": "sdk-labels",
	"example.com/fns/yaml-only:v1":  "yaml-only",
	"example.com/fns/setters:v1":    "setters",
	// kpt's starlark image, here the catalog's executable rather than the built-in interpreter
	"example.com/fns/starlark:v1": "sdk-labels",
}

func buildRealFns(t *testing.T) realFns {
	t.Helper()
	bin := t.TempDir()
	for _, mod := range []string{"fns", "fns-kyaml010"} {
		cmd := exec.Command("go", "build", "-trimpath", "-o", bin+string(filepath.Separator), "./...")
		cmd.Dir = filepath.Join("testdata", "realfns", mod)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=readonly", "GOWORK=off") // a module of its own, outside the tree's go.work
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build %s (its modules come from the Go module proxy): %v\n%s", mod, err, out)
		}
	}
	fns := realFns{cache: t.TempDir()}
	var cat strings.Builder
	cat.WriteString("apiVersion: config.kubernetes.io/v1alpha1\nkind: KRMFunctionCatalog\nmetadata: {name: real-functions}\nspec:\n  krmFunctions:\n")
	i := 0
	for image, name := range realFnImages {
		data, err := os.ReadFile(filepath.Join(bin, name))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha(data)
		// the executable is in the cache under its digest: nothing is fetched
		dir := filepath.Join(fns.cache, "exec", sum)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o755); err != nil {
			t.Fatal(err)
		}
		i++
		cat.WriteString("    - group: fn.example.com\n      names: {kind: Real" + string(rune('A'+i)) + "}\n      description: " + name + "\n      publisher: example.com\n")
		cat.WriteString("      versions:\n        - name: v1\n          runtime:\n            container: {image: \"" + image + "\"}\n")
		p := fnexamples.Current()
		cat.WriteString("            exec:\n              platforms:\n                - {bin: " + name + ", os: " + p.OS + ", arch: " + p.Arch + ", uri: \"https://unused.example.com/" + name + "\", sha256: " + sum + "}\n")
	}
	fns.catalog = writeFile(t, t.TempDir(), "catalog.yaml", cat.String())
	return fns
}

func (f realFns) flags() []string {
	return []string{"--runtime", "exec", "--catalog", f.catalog, "--trusted-catalog", f.catalog, "--cache-dir", f.cache}
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	for rel, data := range snapshot(t, from) {
		writeFile(t, to, rel, data)
	}
}

func TestRealFunctionsAsKptRunsThem(t *testing.T) {
	t.Parallel()
	fns := buildRealFns(t)
	tests := []struct {
		name, pkg string
		fnRun     string // a config to run with fn run (kpt fn eval) instead of fn render
		// what it holds to kpt's behaviour
		why string
	}{
		{name: "labels", pkg: "labels", why: "YAML on the wire: files keep their layout and comments, an unchanged Kptfile its bytes; " +
			"the licence header sits on the resource as kyaml's runner leaves it; results without severity are not errors; " +
			"the Kptfile and a local-config package context are function input"},
		{name: "labels through fn run", pkg: "labels", fnRun: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: function-input\nruntime:\n  container:\n    image: example.com/fns/sdk-labels:v1\ndata:\n  tier: web\n",
			why: "fn run gives functions the Kptfile and local config as kpt fn eval does, and runs an image a trusted catalog lists with --runtime exec"},
		{name: "setters", pkg: "setters", why: "kpt-set comments reach the function; results in kyaml v0.10's shape (results: {name, items}) are read"},
		{name: "yaml-only", pkg: "yaml-only", why: "a function that reads only YAML text is sent YAML"},
		{name: "generate", pkg: "generate", why: "a new resource lands at kyaml's default path, <namespace>/<kind>_<name>.yaml, the name's case kept"},
		{name: "starlark", pkg: "starlark", why: "--runtime exec runs the trusted catalog's executable for kpt's starlark image"},
		{name: "attribution", pkg: "attribution", why: "render marks Config Connector resources (local config too) with kpt's usage annotation, " +
			"adding its fn group to a value already there"},
		{name: "attribution through fn run", pkg: "attribution", fnRun: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: function-input\nruntime:\n  container:\n    image: example.com/fns/sdk-labels:v1\ndata:\n  tier: web\n",
			why: "fn run, as kpt fn eval, adds no usage annotation"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			base := filepath.Join("testdata", "realfns", "cases", tc.pkg)
			pkg := filepath.Join(t.TempDir(), tc.pkg)
			copyDir(t, filepath.Join(base, "pkg"), pkg)
			args := append([]string{"fn", "render", pkg}, fns.flags()...)
			if tc.fnRun != "" {
				cfg := writeFile(t, t.TempDir(), "config.yaml", tc.fnRun)
				args = append([]string{"fn", "run", pkg, "--fn-config", cfg}, fns.flags()...)
			}
			out := run{}.krm(t, args...)
			if out.code != 0 {
				t.Fatalf("%s\n(%s)", out, tc.why)
			}
			want := "want"
			if tc.fnRun != "" {
				want = "want-fn-run" // no render status in the Kptfile
			}
			if d := cmp.Diff(snapshot(t, filepath.Join(base, want)), snapshot(t, pkg)); d != "" {
				t.Errorf("package after the run (-kpt +krm-catalog); %s:\n%s", tc.why, d)
			}
		})
	}
}
