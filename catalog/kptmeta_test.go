package catalog

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestParseKptMetadata(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, fn, data, wantErr string
		want                    KptMetadata
	}{
		{"a function", "set-namespace", "image: r.example.com/kpt-fn/set-namespace\ndescription: Update namespace.\ntags: [mutator]\nlicense: Apache-2.0\nhidden: true\n", "",
			KptMetadata{Name: "set-namespace", Image: "r.example.com/kpt-fn/set-namespace", Description: "Update namespace.", Tags: []string{"mutator"}, License: "Apache-2.0", Hidden: true}},
		{"an unknown field", "x", "image: r.example.com/x\nnew: 1\n", "field new not found", KptMetadata{}},
		{"no image", "x", "description: d\n", "no image", KptMetadata{}},
		{"an image with a tag", "x", "image: r.example.com/x:v1\n", "has a tag or digest", KptMetadata{}},
		{"a name that is no kpt name", "Set_NS", "image: r.example.com/x\n", "lower-case words", KptMetadata{}},
		{"not a mapping", "x", "- a\n", "cannot unmarshal", KptMetadata{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseKptMetadata(tc.fn, []byte(tc.data))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestKptKind(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]string{"set-namespace": "SetNamespace", "starlark": "Starlark", "apply-replacements": "ApplyReplacements", "set-gcp-resource-ids": "SetGcpResourceIds"} {
		if got := KptKind(name); got != want {
			t.Errorf("KptKind(%q) = %q, want %q", name, got, want)
		}
	}
}

// FuzzParseKptMetadata holds the importer to what it promises for every metadata.yaml the parser
// accepts: the catalog written from it reads back as one KRMFunctionCatalog whose one function
// carries exactly what the metadata said (kind from the name, the image at the tag, description,
// tags, home, examples, license), and the only validation errors it can have are about those
// copied values (a sourceURL that is no URL), never about the catalog the importer builds.
func FuzzParseKptMetadata(f *testing.F) {
	for _, fn := range []string{"set-namespace", "set-labels", "starlark", "format"} {
		data, err := os.ReadFile("../cmd/krm-catalog/cmd/testdata/kpt-metadata/" + fn + "/metadata.yaml")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(fn, data)
	}
	f.Add("x", []byte("image: &a r.example.com/x\ntags: [*a, *a]\n"))
	f.Add("set-x", []byte("image: r.example.com/x\ndescription: \"  two\\nlines \\u200b\"\nsourceURL: not a url\nexamplePackageURLs: ['']\ntags: [on, '1']\n"))
	v, err := NewValidator()
	if err != nil {
		f.Fatal(err)
	}
	// where the values copied from the metadata land in the catalog
	copied := regexp.MustCompile(`^/spec/krmFunctions/0/(description|home|tags(/[0-9]+)?|versions/0/(examples(/[0-9]+)?|license))$`)
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		m, err := ParseKptMetadata(name, data)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an error without a message")
			}
			return
		}
		out, err := KptCatalog(KptImport{Name: "kpt-functions", Publisher: "kpt.dev", Tag: "v1", Version: "v1"}, []KptMetadata{m})
		if err != nil {
			t.Fatalf("parsed, but no catalog: %v", err)
		}
		docs, findings := v.Validate("catalog.yaml", out, Options{})
		for _, fd := range findings {
			if fd.Severity == SeverityError && !copied.MatchString(fd.Pointer) {
				t.Fatalf("the importer built an invalid catalog: %v\n%s", fd, out)
			}
		}
		if len(docs) != 1 {
			t.Fatalf("%d documents, want 1:\n%s", len(docs), out)
		}
		cat, err := DecodeCatalog(docs[0])
		if err != nil || len(cat.Functions) != 1 || len(cat.Functions[0].Versions) != 1 || cat.Functions[0].Versions[0].Runtime.Container == nil {
			t.Fatalf("not a catalog of one function of one version (%v):\n%s", err, out)
		}
		type fields struct {
			Group, Kind, Publisher, Description, Home, Image, License string
			Tags, Examples                                            []string
		}
		fn, ver := cat.Functions[0], cat.Functions[0].Versions[0]
		got := fields{fn.Group, fn.Kind, fn.Publisher, fn.Description, fn.Home, ver.Runtime.Container.Image, ver.License, fn.Tags, ver.Examples}
		want := fields{KptGroup, KptKind(name), "kpt.dev", strings.TrimSpace(m.Description), m.SourceURL, m.Image + ":v1", m.License, m.Tags, m.ExamplePackageURLs}
		if d := cmp.Diff(want, got, cmpopts.EquateEmpty()); d != "" || ver.Name != "v1" {
			t.Fatalf("the catalog does not carry the metadata (-metadata +catalog):\n%s\n%s", d, out)
		}
	})
}
