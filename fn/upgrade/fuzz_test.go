package upgrade

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/krm-catalog/krm-catalog/fn"
	"github.com/krm-catalog/krm-catalog/fn/kpt"
)

// FuzzScan reads arbitrary bytes as a Kptfile, a Kustomization and a Composition: the scan must
// never panic; what it finds is compared with the test catalogs and upgraded where it can be, and
// an upgrade of a step written in the file itself must leave a file that reads as the same kind of
// file, with the new version in it.
//
//	go test ./fn/upgrade -run '^$' -fuzz FuzzScan -fuzztime 60s
func FuzzScan(f *testing.F) {
	for _, p := range []string{"shop/Kptfile", "web/kustomization.yaml", "app/composition.yaml", "shop/cart/Kptfile"} {
		data, err := os.ReadFile(filepath.Join("testdata", "tree", filepath.FromSlash(p)))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, seed := range []string{
		"apiVersion: kpt.dev/v1\nkind: Kptfile\npipeline:\n  mutators:\n  - image: &a registry.example.com/fns/set-labels:1.0.0\n  - image: *a\n",
		"apiVersion: kpt.dev/v1\nkind: Kptfile\npipeline: {mutators: [{image: registry.example.com/fns/set-labels:1.0.0}]}\n",
		"transformers:\n- |\n  apiVersion: fn.example.com/v1\n  kind: SetLabels\n  metadata: {annotations: {config.kubernetes.io/function: 'container: {image: registry.example.com/fns/set-labels:1.0.0}'}}\n",
		"transformers: [{runtime: {container: {image: registry.example.com/fns/set-labels:1.0.0}}, apiVersion: a/v1, kind: K}]\n",
		"\xff",
	} {
		f.Add([]byte(seed))
	}
	x, err := newIndex(context.Background(), testResolver(f, releases3...))
	if err != nil {
		f.Fatal(err)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		u := &run{o: Options{To: Latest}, x: x, files: &files{}, diffs: map[[2]*entry][]BreakingInfo{}, indexes: map[string]*lazyIndex{}}
		sc := &scanner{files: u.files}
		for _, kind := range []string{"Kptfile", "Kustomization", "Composition"} {
			p := filepath.Join(dir, kind)
			var sites []*site
			var err error
			switch kind {
			case "Kptfile":
				sites, err = sc.kptfile(p, data)
			case "Kustomization":
				sites, err = sc.kustomization(p, data)
			default:
				sites, err = sc.composition(p, data)
			}
			if err != nil {
				continue
			}
			for _, st := range sites {
				st.x = x
				s := u.compare(st)
				if s.Status != Outdated || st.at == nil || st.at.file != p || st.source != "image" || st.cfg != nil || st.tag != "" {
					continue
				}
				// an image step with no config: the schema check does not apply
				u.choose(s)
				if s.Status != Upgraded {
					continue
				}
				out, err := fn.EditScalars(data, s.edit.edit)
				if errors.Is(err, fn.ErrNotEditable) {
					continue
				}
				if err != nil {
					t.Fatalf("%s: the edit of a file that was read failed: %v", kind, err)
				}
				if kind == "Kptfile" {
					if _, err := kpt.ParseKptfile(out); err != nil {
						t.Fatalf("the upgraded Kptfile does not read: %v\n%s", err, out)
					}
				}
			}
		}
	})
}
