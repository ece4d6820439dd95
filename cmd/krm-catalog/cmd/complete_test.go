package cmd

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestResolveCompletesFromCatalogs drives cobra's completion (what the shell scripts of
// `krm-catalog completion` call) for resolve with a catalog given.
func TestResolveCompletesFromCatalogs(t *testing.T) {
	t.Setenv("KRM_CATALOG_BUILTIN", "")
	t.Setenv("KRM_CATALOG_SERVER", "")
	const cat = "../../../examples/functions/catalog.yaml"
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"apiVersions", []string{"--catalog", cat, "--trusted-catalog", cat, ""},
			[]string{"fn.example.com/v1\tSetNamespace, SetLabels, RequireResourceLimits, SetAnnotations"}},
		{"kinds by prefix", []string{"--catalog", cat, "--trusted-catalog", cat, "fn.example.com/v1", "SetA"},
			[]string{"SetAnnotations\tAdds annotations to every resource; a starlark script, run in-process."}},
		{"untrusted catalogs are not read", []string{"--catalog", cat, ""}, nil},
		{"no catalog and no service", []string{""}, nil},
		{"nothing after the kind", []string{"--catalog", cat, "--trusted-catalog", cat, "fn.example.com/v1", "SetLabels", ""}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := mustRun(t, ExitOK, "", append([]string{"__complete", "resolve"}, tt.args...)...)
			lines := strings.Split(strings.TrimSpace(out), "\n")
			// the last line is the directive: no file completion
			if lines[len(lines)-1] != ":4" {
				t.Errorf("directive %q, want :4", lines[len(lines)-1])
			}
			got := lines[:len(lines)-1]
			if d := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); d != "" {
				t.Errorf("completions (-want +got):\n%s", d)
			}
		})
	}
}
