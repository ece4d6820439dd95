package kpt

import (
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestKrmignored(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	files := map[string]string{
		"Kptfile":               "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n",
		".krmignore":            "notes.yaml\nscratch/\n*.tmpl.yaml\n",
		"notes.yaml":            "just: notes\n",
		"a.tmpl.yaml":           "x: y\n",
		"scratch/one.yaml":      "a: b\n",
		"scratch/deep/two.yaml": "a: b\n",
		"kept.yaml":             "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kept\n",
		// a subpackage's own .krmignore applies to it alone; the parent's patterns do not reach in
		"sub/Kptfile":    "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: sub\n",
		"sub/.krmignore": "local.yaml\n",
		"sub/local.yaml": "not: krm\n",
		"sub/notes.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: n\n",
		// a directory that is no package has no .krmignore of its own
		"plain/.krmignore": "x.yaml\n",
		"plain/x.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n",
	}
	for p, c := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := krmignored(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range got {
		rel, _ := filepath.Rel(dir, p)
		got[i] = filepath.ToSlash(rel)
	}
	sort.Strings(got)
	want := []string{"a.tmpl.yaml", "notes.yaml", "scratch/deep/two.yaml", "scratch/one.yaml", "sub/local.yaml"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("ignored files (-want +got):\n%s", d)
	}
}
