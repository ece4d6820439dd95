package cachedir

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLayout(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", "/cache")
	tests := []struct {
		root string
		want []string
	}{
		{"", []string{"/cache/krm-catalog", "/cache/krm-catalog/oci", "/cache/krm-catalog/catalogs", "/cache/krm-catalog/exec", "/cache/krm-catalog/skip"}},
		{"/x", []string{"/x", "/x/oci", "/x/catalogs", "/x/exec", "/x/skip"}},
	}
	for _, tc := range tests {
		l := At(tc.root)
		got := []string{l.Root, l.OCI(), l.Catalogs(), l.Exec(), l.Skip()}
		for i := range got {
			got[i] = filepath.ToSlash(got[i])
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("At(%q) (-want +got):\n%s", tc.root, diff)
		}
	}
}
