package identity_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/krm-catalog/krm-catalog/identity"
)

// slsaV1 is the shape GitHub's generator writes (actions/attest-build-provenance).
const slsaV1 = `{
  "buildDefinition": {
    "buildType": "https://actions.github.io/buildtypes/workflow/v1",
    "externalParameters": {"workflow": {"ref": "refs/tags/v1.2.0", "repository": "https://github.com/acme/fns", "path": ".github/workflows/release.yml"}},
    "resolvedDependencies": [{"uri": "git+https://github.com/acme/fns@refs/tags/v1.2.0", "digest": {"gitCommit": "7f8e9d0c1b2a"}}]
  },
  "runDetails": {"builder": {"id": "https://github.com/actions/runner/github-hosted"}}
}`

func TestParseProvenance(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, predicateType, predicate string
		want                           identity.Provenance
		bad                            string
	}{
		{"SLSA v1 from GitHub", identity.SLSAProvenanceV1, slsaV1, identity.Provenance{
			PredicateType: identity.SLSAProvenanceV1, BuilderID: "https://github.com/actions/runner/github-hosted",
			BuildType: "https://actions.github.io/buildtypes/workflow/v1", SourceRepo: "https://github.com/acme/fns",
			SourceRef: "refs/tags/v1.2.0", SourceCommit: "7f8e9d0c1b2a"}, ""},
		{"SLSA v1, source from dependencies only", identity.SLSAProvenanceV1,
			`{"buildDefinition": {"resolvedDependencies": [{"uri": "git+https://gitlab.example/g/p@refs/heads/main", "digest": {"sha1": "abc"}}]}, "runDetails": {"builder": {"id": "https://gitlab.example/runner"}}}`,
			identity.Provenance{PredicateType: identity.SLSAProvenanceV1, BuilderID: "https://gitlab.example/runner", SourceRepo: "https://gitlab.example/g/p", SourceRef: "refs/heads/main", SourceCommit: "abc"}, ""},
		{"SLSA v0.2", identity.SLSAProvenanceV02,
			`{"builder": {"id": "https://github.com/slsa-framework/slsa-github-generator/.github/workflows/generator_generic_slsa3.yml@refs/tags/v1.9.0"}, "buildType": "https://github.com/slsa-framework/slsa-github-generator/generic@v1", "invocation": {"configSource": {"uri": "git+https://github.com/acme/fns@refs/tags/v1.0.0", "digest": {"sha1": "1234"}, "entryPoint": ".github/workflows/release.yml"}}}`,
			identity.Provenance{PredicateType: identity.SLSAProvenanceV02, BuilderID: "https://github.com/slsa-framework/slsa-github-generator/.github/workflows/generator_generic_slsa3.yml@refs/tags/v1.9.0",
				BuildType: "https://github.com/slsa-framework/slsa-github-generator/generic@v1", SourceRepo: "https://github.com/acme/fns", SourceRef: "refs/tags/v1.0.0", SourceCommit: "1234"}, ""},
		{"no builder", identity.SLSAProvenanceV1, `{"buildDefinition": {}}`, identity.Provenance{}, "names no builder"},
		{"not provenance", "https://cyclonedx.org/bom", `{}`, identity.Provenance{}, "not SLSA provenance"},
		{"not JSON", identity.SLSAProvenanceV1, `[`, identity.Provenance{}, "read the SLSA v1 provenance"},
		{"a newline in a value", identity.SLSAProvenanceV1, `{"runDetails": {"builder": {"id": "a\nb"}}}`, identity.Provenance{}, "control character"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := identity.ParseProvenance(tc.predicateType, []byte(tc.predicate))
			if tc.bad != "" {
				if err == nil || !strings.Contains(err.Error(), tc.bad) {
					t.Fatalf("ParseProvenance = %+v, %v; want an error with %q", got, err, tc.bad)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ParseProvenance (-want +got):\n%s", diff)
			}
		})
	}
}

// FuzzParseProvenance: a predicate comes from a registry; what passes names a builder, in
// single-line values of bounded length.
func FuzzParseProvenance(f *testing.F) {
	f.Add(true, []byte(slsaV1))
	f.Add(false, []byte(`{"builder": {"id": "x"}, "invocation": {"configSource": {"uri": "git+https://h/r@ref"}}}`))
	f.Fuzz(func(t *testing.T, v1 bool, data []byte) {
		pt := identity.SLSAProvenanceV02
		if v1 {
			pt = identity.SLSAProvenanceV1
		}
		p, err := identity.ParseProvenance(pt, data)
		if err != nil {
			return
		}
		if p.BuilderID == "" {
			t.Error("no builder passed")
		}
		for _, s := range []string{p.BuilderID, p.BuildType, p.SourceRepo, p.SourceRef, p.SourceCommit} {
			if len(s) > 512 || strings.ContainsAny(s, "\n\r\x00") {
				t.Errorf("value %q passed", s)
			}
		}
	})
}
