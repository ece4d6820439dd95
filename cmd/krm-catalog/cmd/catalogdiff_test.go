package cmd

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/krm-catalog/krm-catalog/catalog/diff"
	"github.com/krm-catalog/krm-catalog/oci/registrytest"
	"github.com/krm-catalog/krm-catalog/oci/sign/signtest"
)

// TestCatalogDiffCommand compares the example catalog, pushed to a real registry and signed, with an
// edited copy on disk: text and JSON output, --fail-on, and --key on the oci:// side.
func TestCatalogDiffCommand(t *testing.T) {
	dir := ociEnv(t)
	keys := signtest.KeyPair(t, "k")
	key := writeTestFile(t, dir, "cosign.key", string(keys.PrivatePEM), 0o600)
	pub := writeTestFile(t, dir, "cosign.pub", string(keys.PublicPEM), 0o644)
	other := writeTestFile(t, dir, "other.pub", string(signtest.KeyPair(t, "other").PublicPEM), 0o644)
	reg := registrytest.Distribution(t)

	ref := reg.Host + "/catalogs/example:v1"
	digest := strings.TrimSpace(mustRun(t, ExitOK, "", "push", ref, "../../../catalog/testdata/reference/catalog.yaml"))
	mustRun(t, ExitOK, "", "sign", "--key", key, reg.Host+"/catalogs/example@"+digest)
	old := "oci://" + ref

	orig, err := os.ReadFile("../../../catalog/testdata/reference/catalog.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// an update that moves one digest (fine) and makes a field required (breaking)
	edited := strings.Replace(string(orig), "0dccf88826d80f10f13332fbc81c34af84fad81718c2266c151efaabf7922120", "1dccf88826d80f10f13332fbc81c34af84fad81718c2266c151efaabf7922120", 1)
	edited = strings.ReplaceAll(edited, "required: [namespace]", "required: [namespace, updateReferences]")
	newPath := writeTestFile(t, dir, "catalog.yaml", edited, 0o644)
	same := writeTestFile(t, dir, "same.yaml", string(orig), 0o644)

	t.Run("text", func(t *testing.T) {
		out := mustRun(t, ExitOK, "", "catalog", "diff", "--key", pub, old, newPath)
		for _, want := range []string{
			"digest-changed  fn.example.com/SetNamespace v1 container",
			"BREAKING  field-required  fn.example.com/SetNamespace v1 updateReferences",
			"change(s), 2 breaking",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
	})
	t.Run("json and --fail-on breaking", func(t *testing.T) {
		out := mustRun(t, ExitFailure, "", "catalog", "diff", "--format", "json", "--fail-on", "breaking", old, newPath)
		var rep diff.Report
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		var kinds []diff.Kind
		for _, c := range rep.Changes {
			kinds = append(kinds, c.Kind)
		}
		want := []diff.Kind{diff.DigestChanged, diff.FieldRequired, diff.FieldRequired}
		if d := cmp.Diff(want, kinds); d != "" || rep.Breaking != 2 || rep.Old != old {
			t.Errorf("report %+v; kinds (-want +got):\n%s", rep, d)
		}
	})
	t.Run("no change passes --fail-on any", func(t *testing.T) {
		out := mustRun(t, ExitOK, "", "catalog", "diff", "--fail-on", "any", old, same)
		if !strings.Contains(out, "no changes") {
			t.Errorf("output: %s", out)
		}
	})
	t.Run("errors", func(t *testing.T) {
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"--key", other, old, same}, "no signature by a trusted key"},
			{[]string{"--fail-on", "sometimes", old, same}, "--fail-on must be"},
			{[]string{"--format", "xml", old, same}, "--format must be"},
			{[]string{old, dir + "/missing.yaml"}, "missing.yaml"},
		} {
			code, _, stderr := run(t, "", append([]string{"catalog", "diff"}, tc.args...)...)
			if code != ExitUsage || !strings.Contains(stderr, tc.want) {
				t.Errorf("%v: exit %d, stderr %q; want exit %d mentioning %q", tc.args, code, stderr, ExitUsage, tc.want)
			}
		}
	})
}
