package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestYAMLErrorPosition: every command that reads YAML names the line and column of the offending
// token of a syntax error (here the colon after an unclosed flow sequence, line 6 column 12), not the
// line before it.
func TestYAMLErrorPosition(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const bad = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  labels: [x, y\n  namespace: b\n"
	cat := filepath.Join("..", "..", "..", "examples", "functions", "catalog.yaml")
	cfg := writeTestFile(t, dir, "cfg.yaml", strings.Replace(bad, "kind: ConfigMap", "kind: SetNamespace", 1), 0o644)
	good := writeTestFile(t, dir, "good.yaml", "apiVersion: fn.example.com/v1\nkind: SetNamespace\nmetadata: {name: ns}\nnamespace: x\n", 0o644)
	pkg := filepath.Join(dir, "pkg")
	kust := filepath.Join(dir, "kust")
	multi := filepath.Join(dir, "multi")
	for _, d := range []string{pkg, kust, multi} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeTestFile(t, pkg, "cm.yaml", bad, 0o644)
	writeTestFile(t, kust, "kustomization.yaml", "resources:\n- cm.yaml\n", 0o644)
	writeTestFile(t, kust, "cm.yaml", bad, 0o644)
	// the bad document second in its file: the line counts from the file's start (5 lines more)
	writeTestFile(t, multi, "kustomization.yaml", "resources:\n- cm.yaml\n", 0o644)
	writeTestFile(t, multi, "cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: first\n---\n"+bad, 0o644)
	doc := writeTestFile(t, dir, "doc.yaml", bad, 0o644)
	tests := []struct {
		name  string
		stdin string
		args  []string
		want  string
	}{
		{"validate", "", []string{"validate", doc}, "doc.yaml:6:12: error: invalid YAML"},
		{"fn run --fn-config", "", []string{"fn", "run", pkg, "--fn-config", cfg, "--catalog", cat, "--trusted-catalog", cat}, "line 6, column 12"},
		{"fn run DIR", "", []string{"fn", "run", pkg, "--fn-config", good, "--catalog", cat, "--trusted-catalog", cat}, "line 6, column 12"},
		{"fn run -", bad, []string{"fn", "run", "-", "--fn-config", good, "--catalog", cat, "--trusted-catalog", cat}, "line 6, column 12"},
		{"build", "", []string{"build", kust}, "line 6, column 12"},
		{"build, second document", "", []string{"build", multi}, "line 11, column 12"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args := append(tc.args, "--cache-dir", filepath.Join(t.TempDir(), "c"))
			if tc.name == "validate" {
				args = tc.args
			}
			code, stdout, stderr := run(t, tc.stdin, args...)
			if code == 0 || !strings.Contains(stdout+stderr, tc.want) {
				t.Errorf("exit %d, output:\n%s%s\nwant it to contain %q", code, stdout, stderr, tc.want)
			}
		})
	}
}

// A catalog that cannot be read is unreadable input (exit 2) on every command that reads one, as
// it is for catalog diff.
func TestUnreadableCatalogExit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.yaml")
	cfg := writeTestFile(t, dir, "ns.yaml", "apiVersion: fn.example.com/v1\nkind: SetNamespace\nmetadata: {name: ns}\nnamespace: x\n", 0o644)
	other := writeTestFile(t, dir, "other.yaml", "apiVersion: config.kubernetes.io/v1alpha1\nkind: KRMFunctionCatalog\nmetadata: {name: o}\nspec: {krmFunctions: []}\n", 0o644)
	flags := []string{"--catalog", missing, "--trusted-catalog", missing, "--cache-dir", filepath.Join(dir, "c")}
	for _, args := range [][]string{
		append([]string{"resolve", "fn.example.com/v1", "SetNamespace"}, flags...),
		append([]string{"fn", "run", "-", "--fn-config", cfg}, flags...),
		{"catalog", "diff", missing, other},
	} {
		if code, _, stderr := run(t, "", args...); code != ExitUsage {
			t.Errorf("%v: exit %d, want %d\n%s", args, code, ExitUsage, stderr)
		}
	}
}
