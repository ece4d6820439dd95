package functions

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/krm-catalog/krm-catalog/fn/fntest"
	"github.com/krm-catalog/krm-catalog/internal/testenv"
)

// corpus is the differential corpus: one kustomization per directory, each exercising kustomize
// features (resources, bases, components, generators, patches of every kind, replacements, vars,
// images, replicas, labels, annotations, prefixes, namespaces, sort options, build metadata, custom
// field specs, built-in transformer and generator configs, inline configs, errors).
const corpus = "testdata/kustomize"

// krm-catalog build prints what kustomize v5.8.2 prints, byte for byte, for every kustomization of
// the corpus, and fails where kustomize fails. Each is built twice more with an unused catalogs
// field added to its kustomization (krm-catalog then gives krusty the kustomization rewritten): a
// catalog that no function needs changes nothing.
func TestBuildMatchesKustomize(t *testing.T) {
	t.Parallel()
	kustomize := fntest.Kustomize(t)
	cases, err := os.ReadDir(corpus)
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) < 30 {
		t.Fatalf("the corpus holds %d kustomizations, want at least 30", len(cases))
	}
	for _, c := range cases {
		t.Run(c.Name(), func(t *testing.T) {
			t.Parallel()
			dir, err := filepath.Abs(filepath.Join(corpus, c.Name()))
			if err != nil {
				t.Fatal(err)
			}
			want := run{}.exec(t, kustomize, "build", dir)
			if strings.HasPrefix(c.Name(), "error-") != (want.code != 0) {
				t.Fatalf("kustomize: %s", want)
			}
			withCatalogs := t.TempDir()
			testenv.CopyTree(t, dir, withCatalogs)
			addCatalogs(t, withCatalogs)
			for _, d := range []string{dir, withCatalogs} {
				got := run{}.krm(t, "build", d)
				if (got.code == 0) != (want.code == 0) {
					t.Fatalf("%s: kustomize exit %d, krm-catalog:\n%s", d, want.code, got)
				}
				if got.stdout != want.stdout {
					t.Errorf("%s: output differs from kustomize's\nkustomize:\n%s\nkrm-catalog:\n%s", d, want.stdout, got.stdout)
				}
			}
		})
	}
}

// addCatalogs adds an unused catalogs field to the root kustomization of dir.
func addCatalogs(t *testing.T, dir string) {
	t.Helper()
	for _, name := range []string{"kustomization.yaml", "kustomization.yml", "Kustomization"} {
		p := filepath.Join(dir, name)
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		if err := os.WriteFile(p, append(data, "\ncatalogs:\n- unused-catalog.yaml\n"...), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf("no kustomization file in %s", dir)
}

// KEP-2906 story 2: the catalog copied beside the kustomization, listed in its catalogs field, and
// transformer configs that name their function by apiVersion and kind only. The catalog must be
// trusted by --trusted-catalog, written as the error shows it; --catalog is searched first.
func TestBuildStory2(t *testing.T) {
	t.Parallel()
	pub := publish(t, nil)
	root := t.TempDir()
	writeFile(t, root, "app/catalog.yaml", readFile(t, pub.catalog))
	writeFile(t, root, "app/kustomization.yaml", `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
catalogs:
  - catalog.yaml
resources:
- deployment.yaml
- service.yaml
namePrefix: shop-
transformers:
- namespace.yaml
- labels.yaml
`)
	writeFile(t, root, "app/deployment.yaml", deployment)
	writeFile(t, root, "app/service.yaml", service)
	writeFile(t, root, "app/namespace.yaml", "apiVersion: fn.example.com/v1\nkind: SetNamespace\nnamespace: story\n")
	writeFile(t, root, "app/labels.yaml", "apiVersion: fn.example.com/v1\nkind: SetLabels\nlabels:\n  story: \"2\"\n")
	r := run{env: pub.env, dir: root}
	cache := t.TempDir()

	// not trusted: the KEP's error, naming the value the Kustomization declares, nothing printed,
	// nothing downloaded
	out := r.krm(t, "build", "app", "--cache-dir", cache)
	if out.code != 2 || out.stdout != "" || !strings.Contains(out.stderr, "--trusted-catalog catalog.yaml") {
		t.Errorf("untrusted catalog: want exit 2, no output and the trust hint:\n%s", out)
	}
	if n := pub.hits.Total(); n != 0 {
		t.Errorf("%d downloads from an untrusted catalog", n)
	}

	// trusted
	out = r.krm(t, "build", "app", "--trusted-catalog", "app/catalog.yaml", "--cache-dir", cache)
	if out.code != 0 {
		t.Fatal(out)
	}
	for _, want := range []string{"name: shop-web", "namespace: story", `story: "2"`} {
		if strings.Count(out.stdout, want) != 2 {
			t.Errorf("want %q on both resources:\n%s", want, out.stdout)
		}
	}
	// trusted as the Kustomization declares it (KEP-2906), from another directory than its own
	if out2 := r.krm(t, "build", "app", "--trusted-catalog", "catalog.yaml", "--cache-dir", cache); out2.code != 0 || out2.stdout != out.stdout {
		t.Errorf("--trusted-catalog catalog.yaml, as declared:\n%s", out2)
	}

	// --catalog first: a trusted catalog on the command line that has the functions is enough, the
	// kustomization's own catalog is not reached
	out = r.krm(t, append([]string{"build", "app"}, flags(t, pub.catalog)...)...)
	if out.code != 0 || !strings.Contains(out.stdout, "namespace: story") {
		t.Errorf("with --catalog:\n%s", out)
	}
}
