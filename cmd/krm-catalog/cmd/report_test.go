package cmd

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestFnRunSaysWhichStepsRan: fn run says on standard error, one line per step, which functions ran
// and how each ended, as fn render does.
func TestFnRunSaysWhichStepsRan(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pkg := filepath.Join(dir, "pkg")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, pkg, "cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata: {x: '1'}\n", 0o644)
	label := func(name string) string {
		return "apiVersion: fn.kpt.dev/v1alpha1\nkind: StarlarkRun\nmetadata:\n  name: " + name + "\nsource: |\n  for r in ctx.resource_list[\"items\"]:\n    r[\"metadata\"][\"labels\"] = {\"" + name + "\": \"yes\"}\n"
	}
	cfg := writeTestFile(t, dir, "fns.yaml", label("first")+"---\n"+label("second"), 0o644)
	code, _, stderr := run(t, "", "fn", "run", pkg, "--fn-config", cfg, "--cache-dir", filepath.Join(dir, "c"))
	if code != ExitOK {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	got := regexp.MustCompile(`(?m)^krm-catalog: step .*$`).FindAllString(stderr, -1)
	want := []string{
		"krm-catalog: step fn.kpt.dev/v1alpha1 StarlarkRun (starlark, StarlarkRun): exit code 0",
		"krm-catalog: step fn.kpt.dev/v1alpha1 StarlarkRun (starlark, StarlarkRun): exit code 0",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("step lines (-want +got):\n%s\nstderr:\n%s", diff, stderr)
	}
}

// TestValidatorFailurePrintedOnce: a validator that reports an error result, prints it on its
// standard error as well (as function SDKs do) and exits 1 has its message said once on standard
// error by every command that runs functions: as its result; its standard error stays in the
// results file, and the closing line names the step without repeating the message.
func TestValidatorFailurePrintedOnce(t *testing.T) {
	t.Parallel()
	const message = `container "app" has no cpu limit`
	dir := t.TempDir()
	validator := writeTestFile(t, dir, "validate.sh", `#!/bin/sh
cat >/dev/null
echo '[error] Deployment/web: `+message+`' >&2
printf 'apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\nresults:\n- message: %s\n  severity: error\n' '`+message+`'
exit 1
`, 0o755)
	deploy := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n      - name: app\n        image: nginx\n"
	config := "apiVersion: fn.example.com/v1\nkind: RequireLimits\nmetadata:\n  name: limits\n  annotations:\n    config.kubernetes.io/function: |\n      exec:\n        path: " + validator + "\n"
	tests := []struct {
		name  string
		files map[string]string
		args  []string // DIR is replaced by the directory holding files
	}{
		{"fn run", map[string]string{"fn-config.yaml": config, "pkg/deploy.yaml": deploy},
			[]string{"fn", "run", "DIR/pkg", "--fn-config", "DIR/fn-config.yaml"}},
		{"fn render", map[string]string{
			"pkg/Kptfile":     "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: pkg\npipeline:\n  validators:\n  - exec: " + validator + "\n",
			"pkg/deploy.yaml": deploy},
			[]string{"fn", "render", "DIR/pkg"}},
		{"build", map[string]string{
			"pkg/composition.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Composition\nmetadata:\n  name: pkg\ntransformers:\n- " +
				strings.ReplaceAll(strings.TrimSuffix(config, "\n"), "\n", "\n  ") + "\n"},
			[]string{"build", "DIR/pkg"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			for name, content := range tc.files {
				if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
					t.Fatal(err)
				}
				writeTestFile(t, dir, name, content, 0o644)
			}
			var args []string
			for _, a := range tc.args {
				args = append(args, strings.ReplaceAll(a, "DIR", dir))
			}
			results := filepath.Join(dir, "results")
			args = append(args, "--allow-exec", "--results-dir", results, "--cache-dir", filepath.Join(dir, "c"))
			code, _, stderr := run(t, "", args...)
			if code != ExitFailure {
				t.Errorf("exit status %d, want %d; stderr:\n%s", code, ExitFailure, stderr)
			}
			if n := strings.Count(stderr, message); n != 1 {
				t.Errorf("standard error says %q %d times, want once:\n%s", message, n, stderr)
			}
			if !strings.Contains(stderr, "function failed (exit code 1): its error results above say why") {
				t.Errorf("the closing line does not say where the account is:\n%s", stderr)
			}
			data, err := os.ReadFile(filepath.Join(results, "results.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			// the results file keeps both the result and the standard error
			if n := strings.Count(string(data), message); n != 2 {
				t.Errorf("results.yaml holds %q %d times, want twice (the result, the standard error):\n%s", message, n, data)
			}
		})
	}
}
