package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInvalidConfigPrintedOnce: a functionConfig that violates its function's schema stops the run
// before anything is fetched, and each violation is said once on standard error (as a result
// line), not again in the command's error.
func TestInvalidConfigPrintedOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cat := writeTestFile(t, dir, "catalog.yaml", `apiVersion: config.kubernetes.io/v1alpha1
kind: KRMFunctionCatalog
metadata:
  name: schema
spec:
  krmFunctions:
  - group: fn.example.com
    names: {kind: SetNamespace}
    description: d
    publisher: example.com
    versions:
    - name: v1
      schema:
        openAPIV3Schema:
          type: object
          required: [namespace]
          properties:
            namespace: {type: string}
      runtime:
        starlark: {uri: 'https://functions.example.com/set-namespace.star', sha256: '`+strings.Repeat("ab", 32)+`'}
`, 0o644)
	cfg := writeTestFile(t, dir, "ns.yaml", "apiVersion: fn.example.com/v1\nkind: SetNamespace\nmetadata: {name: ns}\nnamspace: typo\n", 0o644)
	pkg := filepath.Join(dir, "pkg")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, pkg, "cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata: {x: '1'}\n", 0o644)
	kpt := filepath.Join(dir, "kpt")
	if err := os.MkdirAll(kpt, 0o755); err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, kpt, "Kptfile", "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: kpt\npipeline:\n  mutators:\n  - configPath: ns.yaml\n", 0o644)
	writeTestFile(t, kpt, "ns.yaml", "apiVersion: fn.example.com/v1\nkind: SetNamespace\nmetadata: {name: ns}\nnamspace: typo\n", 0o644)
	comp := filepath.Join(dir, "comp")
	if err := os.MkdirAll(comp, 0o755); err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, comp, "composition.yaml", "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Composition\nmetadata:\n  name: comp\ntransformers:\n- apiVersion: fn.example.com/v1\n  kind: SetNamespace\n  metadata: {name: ns}\n  namspace: typo\n", 0o644)
	for _, args := range [][]string{
		{"fn", "run", pkg, "--fn-config", cfg},
		{"fn", "run", "--dry-run", pkg, "--fn-config", cfg},
		{"fn", "render", kpt},
		{"build", comp},
	} {
		args = append(args, "--catalog", cat, "--trusted-catalog", cat, "--cache-dir", filepath.Join(dir, "c"))
		code, _, stderr := run(t, "", args...)
		if code == ExitOK {
			t.Fatalf("%v: exit 0; stderr:\n%s", args, stderr)
		}
		if n := strings.Count(stderr, "namespace"); n != 1 {
			t.Errorf("%v: standard error names the missing field %d times, want once:\n%s", args, n, stderr)
		}
	}
}
