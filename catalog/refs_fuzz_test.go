package catalog

import (
	"fmt"
	"strings"
	"testing"

	"github.com/distribution/reference"
	"github.com/google/go-cmp/cmp"
)

// distributionParse is what ParseImage replaces: distribution/reference's Parse.
func distributionParse(s string) (ImageRef, error) {
	ref, err := reference.Parse(s)
	if err != nil {
		return ImageRef{}, err
	}
	named, ok := ref.(reference.Named)
	if !ok {
		return ImageRef{}, reference.ErrNameEmpty
	}
	out := ImageRef{Name: named.Name()}
	if t, ok := ref.(reference.Tagged); ok {
		out.Tag = t.Tag()
	}
	if d, ok := ref.(reference.Digested); ok {
		out.Digest = d.Digest().String()
	}
	return out, nil
}

var imageRefSeeds = []string{
	"", "nginx", "nginx:1.25", "Nginx", "registry.example.com/fns/set-ns:v1.2.3",
	"registry.example.com:5000/fns/set-ns@sha256:" + strings.Repeat("ab", 32),
	"localhost:5000/a/b:tag@sha256:" + strings.Repeat("0", 64),
	"[::1]:5000/x", "[fe80::1]/x:y", "a__b/c--d/e.f_g", "a___b", "a-/b", "-a", "a/", "/a", "a//b",
	"a:", "a@", "a@sha256:abc", "a@sha256:" + strings.Repeat("A", 64), "a@md5:" + strings.Repeat("0", 32),
	"a@sha256+b.c:" + strings.Repeat("0", 64), "ex-ample.com/x", "-ex.com/x", "ex.com:/x", "ex.com:8a/x",
	"UPPER.example.com/x", "example.com/UPPER", "x:" + strings.Repeat("t", 129), "x:_t", "x:.t",
	strings.Repeat("a", 256), "example.com/" + strings.Repeat("a", 255), "a b", "a\tb", "a:b:c", "a/b:c/d",
}

// TestParseImage pins a few answers; FuzzParseImage compares every answer with distribution/reference.
func TestParseImage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    ImageRef
		wantErr string
	}{
		{"registry.example.com:5000/fns/set-ns:v1@sha256:" + strings.Repeat("ab", 32), ImageRef{Name: "registry.example.com:5000/fns/set-ns", Tag: "v1", Digest: "sha256:" + strings.Repeat("ab", 32)}, ""},
		{"nginx", ImageRef{Name: "nginx"}, ""},
		{"Nginx:1", ImageRef{}, "repository name must be lowercase"},
		{"a b", ImageRef{}, "invalid reference format"},
		{"", ImageRef{}, "repository name must have at least one component"},
	}
	for _, tc := range tests {
		got, err := ParseImage(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseImage(%q) = %v, want error %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseImage(%q): %v", tc.in, err)
		} else if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("ParseImage(%q) (-want +got):\n%s", tc.in, diff)
		}
	}
	for _, s := range imageRefSeeds {
		compareWithDistribution(t, s)
	}
}

// FuzzParseImage: image references come from catalogs, and must parse exactly as
// distribution/reference parses them.
func FuzzParseImage(f *testing.F) {
	for _, s := range imageRefSeeds {
		f.Add(s)
	}
	f.Fuzz(compareWithDistribution)
}

func compareWithDistribution(t *testing.T, s string) {
	want, wantErr := distributionParse(s)
	got, err := ParseImage(s)
	if (err == nil) != (wantErr == nil) {
		t.Fatalf("ParseImage(%q): err = %v, distribution/reference: %v", s, err, wantErr)
	}
	if err != nil {
		if msg := fmt.Sprintf("invalid image reference %q: %v", s, wantErr); err.Error() != msg {
			t.Fatalf("ParseImage(%q): %q, want %q", s, err, msg)
		}
		return
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("ParseImage(%q) (-distribution/reference +ParseImage):\n%s", s, diff)
	}
}

func TestSemver(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"1.2.3":          "v1.2.3",
		"v1.2.3":         "v1.2.3",
		"1.2.3-rc.1":     "v1.2.3-rc.1",
		"v1.2.3+build-7": "v1.2.3+build-7",
		"1.2.3-rc.1+b.2": "v1.2.3-rc.1+b.2",
		"1.2":            "",
		"v1":             "",
		"01.2.3":         "",
		"latest":         "",
		"vv1.2.3":        "",
		"1.2.3-":         "",
		"":               "",
	} {
		if got := Semver(in); got != want {
			t.Errorf("Semver(%q) = %q, want %q", in, got, want)
		}
	}
}
