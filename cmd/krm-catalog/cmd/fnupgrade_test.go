package cmd

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/krm-catalog/krm-catalog/fn/upgrade"
)

// upgradeCatalog lists set-labels at the given tags, one catalog version each (v1, v2...), every
// one with the same schema.
func upgradeCatalog(tags ...string) string {
	var b strings.Builder
	b.WriteString("apiVersion: config.kubernetes.io/v1alpha1\nkind: KRMFunctionCatalog\nmetadata:\n  name: labels\nspec:\n  krmFunctions:\n")
	b.WriteString("    - group: fn.example.com\n      names:\n        kind: SetLabels\n      description: labels\n      publisher: example.com\n      versions:\n")
	for i, tag := range tags {
		fmt.Fprintf(&b, "        - name: v%d\n          schema:\n            openAPIV3Schema: {type: object}\n          runtime:\n            container:\n              image: registry.example.com/fns/set-labels:%s\n              sha256: \"%064x\"\n", i+1, tag, i+1)
	}
	return b.String()
}

// The commands over a package: the table, JSON, --fail-on, --dry-run, and the usage errors.
func TestFnOutdatedAndUpgrade(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cat := writeTestFile(t, dir, "catalog.yaml", upgradeCatalog("1.0.0", "1.0.1", "1.1.0", "2.0.0"), 0o644)
	pkg := filepath.Join(dir, "pkg")
	if err := os.Mkdir(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	kptfile := "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\npipeline:\n  mutators:\n  - image: registry.example.com/fns/set-labels:1.0.0 # pinned\n"
	writeTestFile(t, pkg, "Kptfile", kptfile, 0o644)
	flags := []string{"--catalog", cat, "--trusted-catalog", cat, "--cache-dir", filepath.Join(dir, "cache")}
	with := func(args ...string) []string { return append(args, flags...) }

	code, stdout, stderr := run(t, "", with("fn", "outdated", pkg)...)
	wantTable := [][]string{
		{"STEP", "FUNCTION", "CURRENT", "NEWEST", "AVAILABLE"},
		{pkg + "/Kptfile:7", "pipeline.mutators[0]", "fn.example.com/SetLabels", "1.0.0", "2.0.0", "major"},
		{"1", "step(s):", "1", "outdated,", "0", "up", "to", "date,", "0", "unknown"},
	}
	var table [][]string
	for _, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
		table = append(table, strings.Fields(l))
	}
	if d := cmp.Diff(wantTable, table); code != ExitOK || d != "" {
		t.Errorf("fn outdated: exit %d, stderr %s\n%s", code, stderr, d)
	}
	if code, _, _ := run(t, "", with("fn", "outdated", pkg, "--fail-on", "outdated")...); code != ExitFailure {
		t.Errorf("--fail-on outdated: exit %d, want 1", code)
	}

	code, stdout, _ = run(t, "", with("fn", "upgrade", pkg, "--dry-run")...)
	if code != ExitOK || !strings.Contains(stdout, "-  - image: registry.example.com/fns/set-labels:1.0.0 # pinned\n+  - image: registry.example.com/fns/set-labels:1.1.0@sha256:"+fmt.Sprintf("%064x", 3)+" # pinned\n") ||
		!strings.Contains(stdout, "would upgrade") || !strings.Contains(stdout, "1 file(s) to write (dry run: nothing written)") {
		t.Errorf("fn upgrade --dry-run (--to minor): exit %d\n%s", code, stdout)
	}
	if got, _ := os.ReadFile(filepath.Join(pkg, "Kptfile")); string(got) != kptfile {
		t.Errorf("a dry run wrote the Kptfile:\n%s", got)
	}

	code, stdout, _ = run(t, "", with("fn", "upgrade", pkg, "--to", "patch", "--format", "json")...)
	var rep upgrade.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil || code != ExitOK {
		t.Fatalf("exit %d, %v\n%s", code, err, stdout)
	}
	if len(rep.Steps) != 1 || rep.Steps[0].Status != upgrade.Upgraded || rep.Steps[0].To.Version != "1.0.1" || len(rep.Files) != 1 || rep.DryRun {
		t.Errorf("fn upgrade --to patch: %s", stdout)
	}
	if got, _ := os.ReadFile(filepath.Join(pkg, "Kptfile")); !strings.Contains(string(got), "set-labels:1.0.1@sha256:") {
		t.Errorf("the Kptfile after --to patch:\n%s", got)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"fn", "upgrade", pkg, "--to", "major"}, "--to must be patch, minor or latest"},
		{[]string{"fn", "upgrade", pkg, "--only", "SetLabels"}, "--only takes GROUP/KIND"},
		{[]string{"fn", "outdated", pkg, "--fail-on", "breaking"}, "--fail-on must be none or outdated"},
		{[]string{"fn", "outdated", pkg, "--format", "yaml"}, "--format must be table or json"},
		{[]string{"fn", "outdated", filepath.Join(dir, "missing")}, "cannot read " + filepath.Join(dir, "missing")},
		{[]string{"fn", "outdated", cat}, "not a directory, Kptfile, Kustomization or composition.yaml"},
	} {
		if code, _, stderr := run(t, "", with(tc.args...)...); code != ExitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %s; want 2 saying %q", tc.args, code, stderr, tc.want)
		}
	}
	// an untrusted catalog is a usage error, as for every fn command
	if code, _, stderr := run(t, "", "fn", "outdated", pkg, "--catalog", cat, "--cache-dir", filepath.Join(dir, "cache")); code != ExitUsage || !strings.Contains(stderr, "--trusted-catalog") {
		t.Errorf("an untrusted catalog: exit %d, stderr %s", code, stderr)
	}
}
