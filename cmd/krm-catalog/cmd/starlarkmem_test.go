package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A StarlarkRun that allocates without bound, run by fn run, by fn render of a package that
// carries it (no catalog needed), or by build of a Composition that names it, stops at --starlark-max-memory with an error naming it; a script
// that stays under the bound runs.
func TestStarlarkMemoryBound(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache"))
	starlarkRun := func(script string) string {
		return "apiVersion: fn.kpt.dev/v1alpha1\nkind: StarlarkRun\nmetadata:\n  name: s\nsource: |\n  " + strings.ReplaceAll(script, "\n", "\n  ") + "\n"
	}
	for _, tc := range []struct {
		name, script string
		wantCode     int
		want         string
	}{
		{"doubling", "s = \"a\"\nfor i in range(40):\n  s = s + s", ExitFailure, "memory bound of 128 MiB (raise it with --starlark-max-memory)"},
		{"repetition", "x = [0] * (1 << 28)", ExitFailure, "memory bound of 128 MiB (raise it with --starlark-max-memory)"},
		{"under the bound", "x = [0] * (1 << 20)\nprint(\"made\", len(x))\nctx.resource_list[\"items\"].append({\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\", \"metadata\": {\"name\": \"made\"}})", ExitOK, "made 1048576"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pkg := filepath.Join(t.TempDir(), "pkg")
			if err := os.Mkdir(pkg, 0o755); err != nil {
				t.Fatal(err)
			}
			cfg := writeTestFile(t, pkg, "star.yaml", starlarkRun(tc.script)+"  # config.kubernetes.io/local-config: \"true\"\n", 0o644)
			writeTestFile(t, pkg, "Kptfile", "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: pkg\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\npipeline:\n  mutators:\n  - configPath: star.yaml\n", 0o644)
			writeTestFile(t, pkg, "cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n", 0o644)
			// build of a KEP-2299 Composition whose transformer is the StarlarkRun
			comp := filepath.Join(t.TempDir(), "comp")
			if err := os.Mkdir(comp, 0o755); err != nil {
				t.Fatal(err)
			}
			writeTestFile(t, comp, "composition.yaml", "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Composition\nmetadata:\n  name: comp\ntransformers:\n- "+
				strings.ReplaceAll(strings.TrimSuffix(starlarkRun(tc.script), "\n"), "\n", "\n  ")+"\n", 0o644)
			for _, args := range [][]string{
				{"fn", "run", pkg, "--dry-run", "--fn-config", cfg, "--starlark-max-memory", "128MiB"},
				{"fn", "render", pkg, "--dry-run", "--starlark-max-memory", "128MiB"},
				{"build", comp, "--starlark-max-memory", "128MiB"},
			} {
				code, stdout, stderr := run(t, "", args...)
				if code != tc.wantCode || !strings.Contains(stderr, tc.want) {
					t.Errorf("%s: exit %d, want %d and %q\nstdout: %s\nstderr: %s", strings.Join(args[:2], " "), code, tc.wantCode, tc.want, stdout, stderr)
				}
			}
		})
	}
}
