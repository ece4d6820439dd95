package kustrun

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/kustomize/api/krusty"
)

// A kustomization in memory hides the one on disk, and the files it names may be in memory too;
// nothing is written to the directory.
func TestFSBuild(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte("resources: [missing.yaml]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fsys := NewFS()
	fsys.Set(filepath.Join(dir, "kustomization.yaml"), []byte("resources: [.cm.yaml]\nnamePrefix: p-\n"))
	fsys.Set(filepath.Join(dir, ".cm.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n"))
	out, err := Build(fsys, dir, krusty.MakeDefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: p-c\n", string(out)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	names, err := fsys.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{".cm.yaml", "kustomization.yaml"}, names); diff != "" {
		t.Errorf("ReadDir (-want +got):\n%s", diff)
	}
	onDisk, err := os.ReadDir(dir)
	if err != nil || len(onDisk) != 1 {
		t.Errorf("the directory on disk holds %v (%v), want only the user's kustomization", onDisk, err)
	}
	fsys.Delete(filepath.Join(dir, "kustomization.yaml"))
	if _, err := Build(fsys, dir, krusty.MakeDefaultOptions()); err == nil {
		t.Error("with the in-memory file deleted, the file on disk (naming a missing resource) must be read")
	}
}

// Format prints resources in kustomize's key order, keeping their order.
func TestFormat(t *testing.T) {
	t.Parallel()
	out, err := Format([]byte("kind: Service\napiVersion: v1\nmetadata:\n  name: b\n---\nmetadata:\n  name: a\nkind: ConfigMap\napiVersion: v1\ndata:\n  k: 'v'\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := "apiVersion: v1\nkind: Service\nmetadata:\n  name: b\n---\napiVersion: v1\ndata:\n  k: v\nkind: ConfigMap\nmetadata:\n  name: a\n"
	if diff := cmp.Diff(want, string(out)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
