package functions

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
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
