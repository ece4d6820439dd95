package catalog

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
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

// FuzzParseKptMetadata holds that no metadata.yaml makes the parser panic, and that what it
// accepts makes a catalog that validates.
func FuzzParseKptMetadata(f *testing.F) {
	for _, fn := range []string{"set-namespace", "set-labels", "starlark", "format"} {
		data, err := os.ReadFile("../cmd/krm-catalog/cmd/testdata/kpt-metadata/" + fn + "/metadata.yaml")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(fn, data)
	}
	f.Add("x", []byte("image: &a r.example.com/x\ntags: [*a, *a]\n"))
	v, err := NewValidator()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		m, err := ParseKptMetadata(name, data)
		if err != nil {
			return
		}
		out, err := KptCatalog(KptImport{Name: "kpt-functions", Publisher: "kpt.dev", Tag: "v1", Version: "v1"}, []KptMetadata{m})
		if err != nil {
			t.Fatal(err)
		}
		if _, findings := v.Validate("catalog.yaml", out, Options{}); findings.HasErrors() {
			t.Logf("%v\n%s", findings, out) // metadata may hold what a catalog refuses (a URL that is none); it is reported, not a crash
		}
	})
}
