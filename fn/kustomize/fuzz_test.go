package kustomize

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// FuzzBuild: any kustomization file (outside input) is either built or refused with an error; the
// loader, the classification of entries and the staging never panic.
func FuzzBuild(f *testing.F) {
	for _, seed := range []string{
		"resources:\n- deployment.yaml\n",
		"catalogs: [catalog.yaml]\nresources:\n- deployment.yaml\ntransformers:\n- fn.yaml\n",
		"catalogs: catalog.yaml\ntransformers: fn.yaml\n",
		"resources:\n- deployment.yaml\ntransformers:\n- |\n  apiVersion: fn.example.com/v1\n  kind: Mark\n  value: x\n- fn.yaml\nvalidators:\n- fn.yaml\ngenerators:\n- fn.yaml\n",
		"kind: Component\ncomponents: [.]\n",
		"resources: [., ..]\n",
		"transformers: [fn.yaml, fn.yaml]\nnamePrefix: p-\ncomponents: [c]\n",
		"- a\n- b\n",
		"{",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, kust string) {
		dir := t.TempDir()
		files := map[string]string{
			"kustomization.yaml":   kust,
			"deployment.yaml":      deployment,
			"fn.yaml":              fnConfig("Mark", "fuzz"),
			"c/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\ntransformers:\n- ../fn.yaml\ncomponents:\n- ../d\n",
			"d/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\ncomponents:\n- ../c\n",
		}
		for name, content := range files {
			p := filepath.Join(dir, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		out, _, err := Build(context.Background(), dir, Options{Functions: &fakeFunctions{}})
		if err != nil && len(out) > 0 {
			t.Fatalf("output with an error: %v", err)
		}
	})
}
