package kpt

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/krm-catalog/krm-catalog/resolver"
)

const pinCatalog = `apiVersion: config.kubernetes.io/v1alpha1
kind: KRMFunctionCatalog
metadata:
  name: pin
spec:
  krmFunctions:
  - group: fn.example.com
    names: {kind: SetNamespace}
    description: d
    publisher: example.com
    versions:
    - name: v1
      runtime:
        container: {image: 'registry.example.com/fns/set-namespace:v1.0.0', sha256: 'SUM'}
  - group: fn.example.com
    names: {kind: Script}
    description: d
    publisher: example.com
    versions:
    - name: v1
      runtime:
        starlark: {uri: 'https://functions.example.com/s.star', sha256: 'SUM'}
  - group: fn.example.com
    names: {kind: Unpinned}
    description: d
    publisher: example.com
    versions:
    - name: v1
      runtime:
        container: {image: 'registry.example.com/fns/unpinned:stable'}
`

func TestPinImages(t *testing.T) {
	t.Parallel()
	sum := strings.Repeat("ab", 32)
	pinned := "registry.example.com/fns/set-namespace:v1.0.0@sha256:" + sum
	for _, tc := range []struct {
		name    string
		kptfile string
		configs map[string]string // file: kind
		want    string            // the Kptfile afterwards
		steps   []PinnedStep      // Kptfile paths relative to the package
		wantErr string
	}{
		{
			name:    "by-kind mutator, comments kept",
			kptfile: "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: p # the package\npipeline:\n  mutators:\n  # the namespace\n  - configPath: ns.yaml\n    name: ns\n  - image: registry.example.com/other:v1\n",
			configs: map[string]string{"ns.yaml": "SetNamespace"},
			want:    "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: p # the package\npipeline:\n  mutators:\n  # the namespace\n  - image: " + pinned + "\n    configPath: ns.yaml\n    name: ns\n  - image: registry.example.com/other:v1\n",
			steps:   []PinnedStep{{Kptfile: "Kptfile", Step: "ns", Image: pinned}},
		},
		{
			name:    "validator in flow style",
			kptfile: "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata: {name: p}\npipeline:\n  validators: [{configPath: ns.yaml}]\n",
			configs: map[string]string{"ns.yaml": "SetNamespace"},
			want:    "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata: {name: p}\npipeline:\n  validators: [{image: " + pinned + ", configPath: ns.yaml}]\n",
			steps:   []PinnedStep{{Kptfile: "Kptfile", Step: "ns.yaml", Image: pinned}},
		},
		{
			name:    "no container image: left, said",
			kptfile: "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: p\npipeline:\n  mutators:\n  - configPath: s.yaml\n  - configPath: ns.yaml\n",
			configs: map[string]string{"s.yaml": "Script", "ns.yaml": "SetNamespace"},
			want:    "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: p\npipeline:\n  mutators:\n  - configPath: s.yaml\n  - image: " + pinned + "\n    configPath: ns.yaml\n",
			steps: []PinnedStep{
				{Kptfile: "Kptfile", Step: "s.yaml", Problem: "fn.example.com/v1 Script v1 of catalog CAT lists no container image: kpt cannot run this step; left as it is"},
				{Kptfile: "Kptfile", Step: "ns.yaml", Image: pinned},
			},
		},
		{
			name:    "no digest: pinned by tag, said",
			kptfile: "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: p\npipeline:\n  mutators:\n  - configPath: u.yaml\n",
			configs: map[string]string{"u.yaml": "Unpinned"},
			want:    "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: p\npipeline:\n  mutators:\n  - image: registry.example.com/fns/unpinned:stable\n    configPath: u.yaml\n",
			steps:   []PinnedStep{{Kptfile: "Kptfile", Step: "u.yaml", Image: "registry.example.com/fns/unpinned:stable", Problem: "fn.example.com/v1 Unpinned v1 of catalog CAT lists its image without a digest: pinned by tag only"}},
		},
		{
			name:    "unknown kind: an error, nothing written",
			kptfile: "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: p\npipeline:\n  mutators:\n  - configPath: ns.yaml\n  - configPath: x.yaml\n",
			configs: map[string]string{"ns.yaml": "SetNamespace", "x.yaml": "Unknown"},
			wantErr: "not found",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			cat := filepath.Join(dir, "catalog.yaml")
			write(t, cat, strings.ReplaceAll(pinCatalog, "SUM", sum))
			pkg := filepath.Join(dir, "pkg")
			write(t, filepath.Join(pkg, "Kptfile"), tc.kptfile)
			for f, kind := range tc.configs {
				write(t, filepath.Join(pkg, f), "apiVersion: fn.example.com/v1\nkind: "+kind+"\nmetadata:\n  name: c\n")
			}
			r, err := resolver.New(resolver.Options{Catalogs: []string{cat}, Trusted: []string{cat}, CacheDir: "-"})
			if err != nil {
				t.Fatal(err)
			}
			steps, err := PinImages(context.Background(), r, pkg)
			got, _ := os.ReadFile(filepath.Join(pkg, "Kptfile"))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tc.wantErr)
				}
				if string(got) != tc.kptfile {
					t.Errorf("the Kptfile was written:\n%s", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for i := range steps {
				steps[i].Kptfile, _ = filepath.Rel(pkg, steps[i].Kptfile)
				steps[i].Problem = strings.ReplaceAll(steps[i].Problem, cat, "CAT")
			}
			if diff := cmp.Diff(tc.steps, steps); diff != "" {
				t.Errorf("steps (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("Kptfile (-want +got):\n%s", diff)
			}
		})
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
