package functions

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/krm-catalog/krm-catalog/fn/kpt"
)

// A kpt package whose Kptfile steps name their functions by kind only (configPath, no image):
// krm-catalog resolves them through the trusted catalog, fetches and verifies the executables, and
// renders the subpackage first.
func renderPackage(t *testing.T) string {
	t.Helper()
	pkg := t.TempDir()
	writeFile(t, pkg, "Kptfile", `apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: shop
  annotations:
    config.kubernetes.io/local-config: "true"
pipeline:
  mutators:
    - configPath: set-namespace.yaml
    - configPath: set-labels.yaml
  validators:
    - configPath: require-limits.yaml
`)
	writeFile(t, pkg, "set-namespace.yaml", "apiVersion: fn.example.com/v1\nkind: SetNamespace\nmetadata:\n  name: ns\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\nnamespace: shop\n")
	writeFile(t, pkg, "set-labels.yaml", "apiVersion: fn.example.com/v1\nkind: SetLabels\nmetadata:\n  name: team\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\nlabels:\n  team: blue\n")
	writeFile(t, pkg, "require-limits.yaml", "apiVersion: fn.example.com/v1\nkind: RequireResourceLimits\nmetadata:\n  name: limits\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\nrequire: [cpu, memory]\n")
	writeFile(t, pkg, "deployment.yaml", deployment)
	writeFile(t, pkg, "db/Kptfile", `apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: db
  annotations:
    config.kubernetes.io/local-config: "true"
pipeline:
  mutators:
    - configPath: tier.yaml
`)
	writeFile(t, pkg, "db/tier.yaml", "apiVersion: fn.example.com/v1\nkind: SetLabels\nmetadata:\n  name: tier\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\nlabels:\n  tier: db\n")
	writeFile(t, pkg, "db/service.yaml", service)
	return pkg
}

// snapshot reads every file of a directory tree.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		files[rel] = readFile(t, p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestRenderResolvesStepsByKindThroughTrustedCatalog(t *testing.T) {
	t.Parallel()
	pub := publish(t, nil)
	pkg := renderPackage(t)
	before := snapshot(t, pkg)
	results := t.TempDir()
	out := run{env: pub.env}.krm(t, append([]string{"fn", "render", pkg, "--results-dir", results}, flags(t, pub.catalog)...)...)
	if out.code != 0 {
		t.Fatal(out)
	}
	wantDeploy := strings.Replace(deployment, "    app: web\n", "    app: web\n    team: blue\n  namespace: shop\n", 1)
	if d := cmp.Diff(wantDeploy, readFile(t, filepath.Join(pkg, "deployment.yaml"))); d != "" {
		t.Errorf("deployment.yaml (-want +got):\n%s", d)
	}
	// the subpackage's own pipeline ran first (tier), then the parent's over it (team, namespace)
	wantService := "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n  labels:\n    tier: db\n    team: blue\n  namespace: shop\nspec:\n  ports:\n  - port: 80 # http\n"
	if d := cmp.Diff(wantService, readFile(t, filepath.Join(pkg, "db/service.yaml"))); d != "" {
		t.Errorf("db/service.yaml (-want +got):\n%s", d)
	}
	after := snapshot(t, pkg)
	// the root Kptfile records the render in its status, as kpt's does; nothing else of it changes
	kf, status, _ := strings.Cut(after["Kptfile"], "status:\n")
	if !strings.Contains(status, "reason: RenderSuccess") || !strings.Contains(status, "- name: set-namespace.yaml\n        exitCode: 0") {
		t.Errorf("Kptfile status does not record the render:\n%s", after["Kptfile"])
	}
	after["Kptfile"] = kf
	// the example functions leave local-config resources alone, as the catalog's do
	for _, f := range []string{"Kptfile", "set-namespace.yaml", "set-labels.yaml", "require-limits.yaml", "db/Kptfile", "db/tier.yaml"} {
		if before[f] != after[f] {
			t.Errorf("%s (local-config) changed:\n%s", f, after[f])
		}
	}
	res := readFile(t, filepath.Join(results, "results.yaml"))
	if n := strings.Count(res, "- function: "); n != 4 {
		t.Errorf("results.yaml lists %d steps, want 4:\n%s", n, res)
	}
	if n := pub.hits.Total(); n != 3 {
		t.Errorf("%d downloads, want 3 (set-namespace, set-labels, require-limits)", n)
	}
}

func TestRenderRefusesAnUntrustedCatalogAndWritesNothing(t *testing.T) {
	t.Parallel()
	pub := publish(t, nil)
	pkg := renderPackage(t)
	before := snapshot(t, pkg)
	out := run{env: pub.env}.krm(t, "fn", "render", pkg, "--catalog", pub.catalog, "--cache-dir", t.TempDir())
	if out.code != 2 {
		t.Fatalf("exit %d, want 2 for an untrusted catalog:\n%s", out.code, out)
	}
	for _, want := range []string{"untrusted catalog", "--trusted-catalog " + pub.catalog} {
		if !strings.Contains(out.stderr, want) {
			t.Errorf("stderr does not say %q:\n%s", want, out.stderr)
		}
	}
	if d := cmp.Diff(before, snapshot(t, pkg)); d != "" {
		t.Errorf("the package changed (-before +after):\n%s", d)
	}
	if n := pub.hits.Total(); n != 0 {
		t.Errorf("%d downloads, want none", n)
	}
}

// An image step whose image a trusted catalog lists with an exec runtime runs that executable,
// verified, when the user prefers exec; nothing is pulled and no container runs.
func TestRenderRunsAnImageStepAsTheCatalogsExecRuntime(t *testing.T) {
	t.Parallel()
	pub := publish(t, nil)
	data := readFile(t, pub.catalog)
	const image = "registry.example.com/fns/set-namespace:v1"
	withImage := strings.Replace(data, "          runtime:\n            exec:\n",
		"          runtime:\n            container:\n              image: "+image+"\n              sha256: "+strings.Repeat("ab", 32)+"\n            exec:\n", 1)
	if withImage == data {
		t.Fatal("the generated catalog has no runtime to add a container image to")
	}
	if err := os.WriteFile(pub.catalog, []byte(withImage), 0o644); err != nil {
		t.Fatal(err)
	}
	pkg := t.TempDir()
	writeFile(t, pkg, "Kptfile", "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\npipeline:\n  mutators:\n    - image: "+image+"\n      configMap:\n        namespace: shop\n")
	writeFile(t, pkg, "service.yaml", service)
	// an engine that is not there: a container would fail the run
	env := append([]string{"KRM_FN_RUNTIME=podman", "PATH=" + filepath.Dir(bins.KrmCatalog)}, pub.env...)
	out := run{env: env}.krm(t, append([]string{"fn", "render", pkg, "--runtime", "exec"}, flags(t, pub.catalog)...)...)
	if out.code != 0 {
		t.Fatal(out)
	}
	if got := readFile(t, filepath.Join(pkg, "service.yaml")); !strings.Contains(got, "namespace: shop") {
		t.Errorf("service.yaml:\n%s", got)
	}
	if n := pub.hits.Total(); n != 1 {
		t.Errorf("%d downloads, want 1 (set-namespace)", n)
	}
}

// memoPackage is a package whose three catalog steps (all idempotent, pinned executables)
// rewrite one field: the second namespace step undoes the first, so no step's input is ever its
// own last output and the per-step skip never fires. The subpackage has a step of its own.
func memoPackage(t *testing.T) string {
	t.Helper()
	pkg := renderPackage(t)
	writeFile(t, pkg, "Kptfile", `apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: shop
  annotations:
    config.kubernetes.io/local-config: "true"
pipeline:
  mutators:
    - configPath: staging.yaml
    - configPath: set-labels.yaml
    - configPath: set-namespace.yaml
  validators:
    - configPath: require-limits.yaml
`)
	writeFile(t, pkg, "staging.yaml", "apiVersion: fn.example.com/v1\nkind: SetNamespace\nmetadata:\n  name: staging\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\nnamespace: staging\n")
	return pkg
}

// A re-render of a package that is what the last render wrote runs nothing and says so; the
// package is then byte for byte what a forced re-render (--no-skip) writes. Anything a render's
// output depends on makes it render again.
func TestRenderUnchangedPackageIsANoOp(t *testing.T) {
	t.Parallel()
	pub := publish(t, nil)
	pkg := memoPackage(t)
	base := append([]string{"fn", "render", pkg}, flags(t, pub.catalog)...)
	render := func(env []string, extra ...string) (output, bool) {
		t.Helper()
		out := run{env: append(slices.Clone(pub.env), env...)}.krm(t, append(slices.Clone(base), extra...)...)
		if out.code != 0 {
			t.Fatal(out)
		}
		memo := strings.Contains(out.stderr, kpt.MemoMessage)
		if ran := !strings.Contains(out.stdout, "Successfully executed 0 function(s)"); ran == memo {
			t.Fatalf("a render that ran steps %v and said it ran nothing %v:\n%s", ran, memo, out)
		}
		return out, memo
	}
	if _, memo := render(nil); memo {
		t.Fatal("the first render ran nothing")
	}
	first := snapshot(t, pkg)
	out, memo := render(nil)
	if !memo {
		t.Fatalf("the re-render of the unchanged package ran:\n%s", out)
	}
	if !strings.Contains(out.stdout, "Successfully executed 0 function(s) in 2 package(s)") {
		t.Errorf("stdout: %s", out.stdout)
	}
	memoised := snapshot(t, pkg)
	if _, memo := render(nil, "--no-skip"); memo {
		t.Fatal("--no-skip ran nothing")
	}
	forced := snapshot(t, pkg)
	if d := cmp.Diff(forced, memoised); d != "" {
		t.Errorf("the memoised render left the package otherwise than a forced one writes it (-forced +memoised):\n%s", d)
	}
	if d := cmp.Diff(first, forced); d != "" {
		t.Errorf("the forced re-render changed the package (-first +forced):\n%s", d)
	}
	// the forced render is remembered too
	if _, memo := render(nil); !memo {
		t.Error("the render after --no-skip ran")
	}

	edit := func(name, old, new string) func() {
		return func() {
			p := filepath.Join(pkg, name)
			writeFile(t, pkg, name, strings.Replace(readFile(t, p), old, new, 1))
		}
	}
	for _, tc := range []struct {
		name  string
		edit  func()
		env   []string
		extra []string
		memo  bool
	}{
		{name: "nothing", memo: true},
		{name: "a resource's comment", edit: edit("deployment.yaml", "# Deployment of the web tier", "# the web tier")},
		{name: "a function config", edit: edit("set-labels.yaml", "team: blue", "team: green")},
		{name: "a subpackage's resource", edit: edit("db/service.yaml", "port: 80", "port: 81")},
		{name: "the pipeline", edit: edit("Kptfile", "    - configPath: staging.yaml\n", "")},
		{name: "a new resource file", edit: func() { writeFile(t, pkg, "extra.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: extra\n") }},
		{name: "the attribution variable", env: []string{kpt.DisableAttributionEnv + "=1"}},
		{name: "an environment variable for the functions", extra: []string{"--env", "EXTRA=1"}},
		{name: "the locale of exec functions", env: []string{"LC_MESSAGES=C"}},
		{name: "the wire", extra: []string{"--yaml-wire"}},
		{name: "a results file", extra: []string{"--results-dir", t.TempDir()}},
		{name: "the render", extra: []string{"--no-skip"}},
	} {
		render(nil) // whatever the case before changed is rendered and remembered
		if tc.edit != nil {
			tc.edit()
		}
		if _, memo := render(tc.env, tc.extra...); memo != tc.memo {
			t.Errorf("%s changed: the render ran nothing %v, want %v", tc.name, memo, tc.memo)
		}
	}
	// printing the result reads the package; it never skips
	render(nil)
	out = run{env: pub.env}.krm(t, append(slices.Clone(base), "--output", "stdout")...)
	if out.code != 0 || strings.Contains(out.stderr, kpt.MemoMessage) || !strings.Contains(out.stdout, "kind: ResourceList") {
		t.Errorf("--output stdout of an unchanged package:\n%s", out)
	}
}

// A step that does not promise idempotence (here an inline starlark script, which no catalog
// pins) keeps every render a real one.
func TestRenderWithAnUnpinnedStepIsNeverSkipped(t *testing.T) {
	t.Parallel()
	pub := publish(t, nil)
	pkg := memoPackage(t)
	writeFile(t, pkg, "Kptfile", strings.Replace(readFile(t, filepath.Join(pkg, "Kptfile")), "  validators:", "    - image: registry.example.com/kpt-fn/starlark:v0.5\n      configPath: script.yaml\n  validators:", 1))
	writeFile(t, pkg, "script.yaml", "apiVersion: fn.kpt.dev/v1alpha1\nkind: StarlarkRun\nmetadata:\n  name: s\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\nsource: |\n  pass\n")
	args := append([]string{"fn", "render", pkg}, flags(t, pub.catalog)...)
	for i := range 2 {
		out := run{env: pub.env}.krm(t, args...)
		if out.code != 0 || strings.Contains(out.stderr, kpt.MemoMessage) {
			t.Fatalf("render %d:\n%s", i+1, out)
		}
	}
}
