package oci_test

import (
	"os"
	"path/filepath"
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
