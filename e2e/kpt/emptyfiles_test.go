package kpt_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/krm-catalog/krm-catalog/cmd/krm-catalog/cmd"
)

// fn render and fn run read a package's files of no YAML document (empty, a newline, comments, a
// separator alone) alike, as kyaml's package reader (kpt's, for kpt fn render and kpt fn eval)
// reads them: no resources, nothing said, the files left as they are. The package is the
// kpt-main case empty-files; its render is TestKptMainCases', and the run's want is what kpt main
// (23c57d7) left after `kpt fn eval PKG --exec STARLARK --fn-config count.yaml`, STARLARK being
// krm-functions-catalog's starlark function built from source.
func TestRunAndRenderReadFilesOfNoDocumentAlike(t *testing.T) {
	t.Parallel()
	src := filepath.Join(kptTestdata, "kpt-main", "empty-files")
	cfg, err := os.ReadFile(filepath.Join(src, "count.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(t.TempDir(), "count.yaml")
	if err := os.WriteFile(config, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		args   func(pkg string) []string
		wantCM string
	}{
		{"fn render", func(pkg string) []string { return []string{"fn", "render", pkg} }, renderedCM},
		{"fn run", func(pkg string) []string { return []string{"fn", "run", pkg, "--fn-config", config} }, evalCM},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pkg := filepath.Join(t.TempDir(), "empty-files")
			copyCase(t, src, pkg)
			before := readTree(t, pkg)
			var stdout, stderr bytes.Buffer
			args := append(tc.args(pkg), "--cache-dir", filepath.Join(t.TempDir(), "cache"))
			code := cmd.Main(context.Background(), args, cmd.IO{In: strings.NewReader(""), Out: &stdout, Err: &stderr})
			if code != 0 {
				t.Fatalf("%s: exit %d\n%s", tc.name, code, stderr.String())
			}
			if strings.Contains(stderr.String(), "skipped") {
				t.Errorf("%s reports skipping files:\n%s", tc.name, stderr.String())
			}
			after := readTree(t, pkg)
			if d := cmp.Diff(tc.wantCM, after["cm.yaml"]); d != "" {
				t.Errorf("cm.yaml after %s (-kpt main +krm-catalog):\n%s", tc.name, d)
			}
			for _, f := range []string{"empty.yaml", "newline.yaml", "comment.yaml", "comments.yml", "separator.yaml", "sub/empty.yaml", "db/resources.yaml"} {
				if after[f] != before[f] {
					t.Errorf("%s changed %s: %q, was %q", tc.name, f, after[f], before[f])
				}
			}
		})
	}
}

// The ConfigMap as kpt main's render and eval leave it: both give the function the two Kptfiles,
// the ConfigMap and the config in the package (local config) and nothing of the other files; the
// render names the subpackage's Kptfile relative to the subpackage, eval relative to the root.
const (
	renderedCM = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  annotations:\n" +
		"    example.com/files: Kptfile,Kptfile,cm.yaml,count.yaml\n    example.com/items: \"4\"\ndata:\n  tier: web\n"
	evalCM = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  annotations:\n" +
		"    example.com/files: Kptfile,cm.yaml,count.yaml,db/Kptfile\n    example.com/items: \"4\"\ndata:\n  tier: web\n"
)
