package catalog

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSameRuntime(t *testing.T) {
	t.Parallel()
	hexA, hexB := strings.Repeat("a", 64), strings.Repeat("b", 64)
	image := func(img, sha string) Runtime { return Runtime{Container: &ContainerRuntime{Image: img, SHA256: sha}} }
	exec := func(ps ...ExecPlatform) Runtime { return Runtime{Exec: &ExecRuntime{Platforms: ps}} }
	linux := ExecPlatform{Bin: "fn", OS: "linux", Arch: "amd64", URI: "https://example.com/fn-linux", SHA256: hexA}
	darwin := ExecPlatform{Bin: "fn", OS: "darwin", Arch: "arm64", URI: "https://example.com/fn-darwin", SHA256: hexB}
	tests := []struct {
		name string
		a, b Runtime
		want bool
	}{
		{"same image by digest", image("r.example.com/fn@sha256:"+hexA, ""), image("r.example.com/fn@sha256:"+hexA, ""), true},
		{"digest in the image or beside it", image("r.example.com/fn@sha256:"+hexA, ""), image("r.example.com/fn", hexA), true},
		{"another digest", image("r.example.com/fn@sha256:"+hexA, ""), image("r.example.com/fn@sha256:"+hexB, ""), false},
		{"another repository", image("r.example.com/fn@sha256:"+hexA, ""), image("r.example.com/other@sha256:"+hexA, ""), false},
		{"a tag for a digest", image("r.example.com/fn@sha256:"+hexA, ""), image("r.example.com/fn:v1", ""), false},
		{"network asked for", image("r.example.com/fn", hexA), Runtime{Container: &ContainerRuntime{Image: "r.example.com/fn", SHA256: hexA, RequireNetwork: true}}, false},
		{"platforms in another order", exec(linux, darwin), exec(darwin, linux), true},
		{"a platform less", exec(linux, darwin), exec(linux), false},
		{"another executable", exec(linux), exec(ExecPlatform{Bin: "fn", OS: "linux", Arch: "amd64", URI: "https://example.com/fn-linux", SHA256: hexB}), false},
		{"starlark source", Runtime{Starlark: &StarlarkRuntime{URI: "https://example.com/a.star", SHA256: hexA}}, Runtime{Starlark: &StarlarkRuntime{URI: "https://example.com/b.star", SHA256: hexA}}, false},
		{"a runtime more", image("r.example.com/fn", hexA), Runtime{Container: &ContainerRuntime{Image: "r.example.com/fn", SHA256: hexA}, Exec: &ExecRuntime{Platforms: []ExecPlatform{linux}}}, false},
		{"none", Runtime{}, Runtime{}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := SameRuntime(tc.a, tc.b); got != tc.want {
				t.Errorf("SameRuntime = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestWithFunction(t *testing.T) {
	t.Parallel()
	const cat = `# the platform's catalog
apiVersion: config.kubernetes.io/v1alpha1
kind: KRMFunctionCatalog
metadata:
  name: official
spec:
  krmFunctions:
    - group: fn.example.com
      names: {kind: A}
      publisher: example.com
      versions: [{name: v1}]
`
	def := func(kind, version string) string {
		return `apiVersion: config.kubernetes.io/v1alpha1
kind: KRMFunctionDefinition
metadata:
  name: x
spec:
  group: fn.example.com
  names:
    kind: ` + kind + `
  publisher: example.com
  versions:
    - name: ` + version + "\n"
	}
	tests := []struct {
		name, catalog, definition string
		want                      []string // kind@versions of the entries, in order
		wantErr                   string
	}{
		{"added after the last", cat, def("B", "v1"), []string{"A@v1", "B@v1"}, ""},
		{"in place of the same function", cat, def("A", "v2"), []string{"A@v2"}, ""},
		{"into an empty list", "apiVersion: config.kubernetes.io/v1alpha1\nkind: KRMFunctionCatalog\nmetadata: {name: x}\nspec: {krmFunctions: []}\n", def("B", "v1"), []string{"B@v1"}, ""},
		{"a catalog in JSON", `{"apiVersion":"config.kubernetes.io/v1alpha1","kind":"KRMFunctionCatalog","metadata":{"name":"x"},"spec":{"krmFunctions":[]}}`, def("B", "v1"), []string{"B@v1"}, ""},
		{"a definition without spec", cat, "kind: KRMFunctionDefinition\n", nil, "the definition has no spec"},
		{"not an object", "- a\n", def("B", "v1"), nil, "not a YAML or JSON object"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out, err := WithFunction([]byte(tc.catalog), []byte(tc.definition))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			docs, findings := Decode("catalog.yaml", out)
			if findings.HasErrors() || len(docs) != 1 {
				t.Fatalf("the result does not decode: %v\n%s", findings, out)
			}
			c, err := DecodeCatalog(docs[0])
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range c.Functions {
				var vs []string
				for _, v := range f.Versions {
					vs = append(vs, v.Name)
				}
				got = append(got, f.Kind+"@"+strings.Join(vs, ","))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("entries (-want +got):\n%s\n%s", diff, out)
			}
			if strings.HasPrefix(tc.catalog, "#") && !strings.Contains(string(out), "# the platform's catalog") {
				t.Errorf("the catalog's comment is lost:\n%s", out)
			}
		})
	}
}

// FuzzWithFunction holds that adding an entry never panics, and that from documents that decode
// it returns one that decodes.
func FuzzWithFunction(f *testing.F) {
	f.Add([]byte("kind: KRMFunctionCatalog\nspec:\n  krmFunctions: []\n"), []byte("spec:\n  group: g\n  names: {kind: K}\n"))
	f.Add([]byte(`{"spec":{"krmFunctions":[{"group":"g","names":{"kind":"K"}}]}}`), []byte(`{"spec":{"group":"g","names":{"kind":"K"}}}`))
	f.Add([]byte("a: &x [*x]\n"), []byte("spec: {}\n"))
	f.Fuzz(func(t *testing.T, cat, def []byte) {
		out, err := WithFunction(cat, def)
		if err != nil {
			return
		}
		for _, in := range [][]byte{cat, def} {
			if docs, findings := Decode("in.yaml", in); findings.HasErrors() || len(docs) != 1 {
				return
			}
		}
		if _, findings := Decode("catalog.yaml", out); findings.HasErrors() {
			t.Fatalf("the result does not decode: %v\n%s", findings, out)
		}
	})
}
