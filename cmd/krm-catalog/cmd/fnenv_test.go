package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExecFunctionEnvironment runs an exec function with fn run, fn render, fn proxy and build: a secret of the
// caller's environment does not reach it; what --env passes, by value or by name, does.
func TestExecFunctionEnvironment(t *testing.T) {
	// not parallel: it sets variables of the test process
	dir := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache"))
	t.Setenv("AWS_SECRET_ACCESS_KEY", "leaked-secret")
	t.Setenv("PASSED_BY_NAME", "from-caller")
	fnPath := writeTestFile(t, dir, "fn.sh", "#!/bin/sh\nenv | sed 's/^/env: /' >&2\ncat\n", 0o755)
	cfg := writeTestFile(t, dir, "cfg.yaml", `apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
  annotations:
    config.kubernetes.io/function: |
      exec:
        path: `+fnPath+"\n", 0o644)
	pkg := filepath.Join(dir, "pkg")
	if err := os.Mkdir(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, pkg, "Kptfile", "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: pkg\npipeline:\n  mutators:\n  - exec: "+fnPath+"\n", 0o644)
	writeTestFile(t, pkg, "cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n", 0o644)
	envFlags := []string{"--allow-exec", "--env", "PASSED_BY_VALUE=given", "--env", "PASSED_BY_NAME", "--env", "UNSET_NAME"}
	// build: a Composition whose first transformer makes a resource, and whose second is the function
	comp := filepath.Join(dir, "comp")
	if err := os.Mkdir(comp, 0o755); err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, comp, "composition.yaml", `apiVersion: kustomize.config.k8s.io/v1alpha1
kind: Composition
metadata:
  name: comp
transformers:
- apiVersion: fn.kpt.dev/v1alpha1
  kind: StarlarkRun
  metadata:
    name: make
  source: |
    ctx.resource_list["items"].append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "made"}})
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: cfg
  runtime:
    exec:
      path: `+fnPath+"\n", 0o644)
	proxyIn := "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\nfunctionConfig:\n  apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: cfg\n  runtime:\n    exec:\n      path: " + fnPath + "\n"
	for _, tc := range []struct {
		name, stdin string
		args        []string
	}{
		{"fn run", "", append([]string{"fn", "run", pkg, "--dry-run", "--fn-config", cfg}, envFlags...)},
		{"fn render", "", append([]string{"fn", "render", pkg, "--dry-run"}, envFlags...)},
		{"fn proxy", proxyIn, append([]string{"fn", "proxy"}, envFlags...)},
		{"build", "", append([]string{"build", comp}, envFlags...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := run(t, tc.stdin, tc.args...)
			if code != ExitOK {
				t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
			}
			for _, want := range []string{"env: PASSED_BY_VALUE=given", "env: PASSED_BY_NAME=from-caller", "env: HOME="} {
				if !strings.Contains(stderr, want) {
					t.Errorf("the function did not see %q:\n%s", want, stderr)
				}
			}
			for _, leaked := range []string{"AWS_SECRET_ACCESS_KEY", "leaked-secret", "UNSET_NAME", "XDG_CACHE_HOME"} {
				if strings.Contains(stderr, leaked) {
					t.Errorf("the function saw %s:\n%s", leaked, stderr)
				}
			}
		})
	}
	if code, _, stderr := run(t, "", "fn", "run", pkg, "--dry-run", "--fn-config", cfg, "--allow-exec", "--env", "NOT-A-NAME=1"); code != ExitUsage || !strings.Contains(stderr, `--env "NOT-A-NAME=1"`) {
		t.Errorf("a malformed --env: exit %d, stderr %s; want a usage error naming it", code, stderr)
	}
}
