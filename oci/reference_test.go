package oci_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/krm-catalog/krm-catalog/oci"
)

func TestParseReference(t *testing.T) {
	t.Parallel()
	const d = "sha256:0dccf88826d80f10f13332fbc81c34af84fad81718c2266c151efaabf7922120"
	tests := []struct {
		in   string
		want oci.Reference
	}{
		{"registry.example.com/catalogs/platform:v1.4.0", oci.Reference{Registry: "registry.example.com", Repository: "catalogs/platform", Tag: "v1.4.0"}},
		{"oci://registry.example.com/fns/x@" + d, oci.Reference{Registry: "registry.example.com", Repository: "fns/x", Digest: d}},
		{"127.0.0.1:5000/a/b:v1@" + d, oci.Reference{Registry: "127.0.0.1:5000", Repository: "a/b", Tag: "v1", Digest: d}},
		{"localhost/repo", oci.Reference{Registry: "localhost", Repository: "repo"}},
	}
	for _, tc := range tests {
		got, err := oci.ParseReference(tc.in)
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.in, diff)
		}
	}
}

// TestParseReferenceRejects holds the checks of oras-go's and go-digest's regular expressions.
func TestParseReferenceRejects(t *testing.T) {
	t.Parallel()
	const hex = "0dccf88826d80f10f13332fbc81c34af84fad81718c2266c151efaabf7922120"
	tests := []struct{ name, in string }{
		{"upper-case repository", "registry.example.com/Catalogs/platform:v1"},
		{"repository ending in a separator", "registry.example.com/catalogs-:v1"},
		{"tag starting with a dot", "registry.example.com/catalogs/platform:.v1"},
		{"tag of 129 characters", "registry.example.com/catalogs/platform:" + strings.Repeat("a", 129)},
		{"upper-case digest", "registry.example.com/fns/x@sha256:" + strings.ToUpper(hex)},
		{"digest not hex", "registry.example.com/fns/x@sha256:" + strings.Repeat("g", 64)},
		{"sha512 digest not hex", "registry.example.com/fns/x@sha512:" + strings.Repeat("z", 128)},
	}
	for _, tc := range tests {
		if got, err := oci.ParseReference(tc.in); !errors.Is(err, oci.ErrInvalidReference) {
			t.Errorf("%s: %q parsed as %+v, %v; want ErrInvalidReference", tc.name, tc.in, got, err)
		}
	}
	// the longest tag the expression accepts, and a sha512 digest
	for _, in := range []string{
		"registry.example.com/catalogs/platform:" + strings.Repeat("a", 128),
		"registry.example.com/fns/x@sha512:" + hex + hex,
	} {
		if _, err := oci.ParseReference(in); err != nil {
			t.Errorf("%q: %v", in, err)
		}
	}
}

func TestDefaultCacheDir(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", dir)
	got, err := oci.DefaultCacheDir()
	if err != nil || got != filepath.Join(dir, "krm-catalog", "oci") {
		t.Errorf("with XDG_CACHE_HOME: %q, %v", got, err)
	}
	t.Setenv("XDG_CACHE_HOME", "")
	base, err := os.UserCacheDir()
	if err != nil {
		t.Skip("no user cache directory here:", err)
	}
	if got, _ := oci.DefaultCacheDir(); got != filepath.Join(base, "krm-catalog", "oci") {
		t.Errorf("without XDG_CACHE_HOME: %q, want under %s", got, base)
	}
}
