package cmd

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/krm-catalog/krm-catalog/fn/runner"
	"github.com/krm-catalog/krm-catalog/oci/registrytest"
)

// TestFnRunSkipsAnIdempotentRerun runs an idempotent starlark function (an OCI artifact in a real
// registry) over a package twice: the second run skips it and says so; --no-skip runs it; a
// changed package runs it again.
func TestFnRunSkipsAnIdempotentRerun(t *testing.T) {
	dir := ociEnv(t)
	reg := registrytest.Distribution(t)
	script, err := os.ReadFile("../../../examples/functions/set-annotations.star")
	if err != nil {
		t.Fatal(err)
	}
	digest := strings.TrimSpace(mustRun(t, ExitOK, "", "push", "--type", "starlark", reg.Host+"/fns/ann:v1", "../../../examples/functions/set-annotations.star"))
	sum := sha256.Sum256(script)
	cat := writeTestFile(t, dir, "catalog.yaml", fmt.Sprintf(`apiVersion: config.kubernetes.io/v1alpha1
kind: KRMFunctionCatalog
metadata:
  name: skip
spec:
  krmFunctions:
  - group: fn.example.com
    names: {kind: SetAnnotations}
    description: d
    publisher: example.com
    versions:
    - name: v1
      idempotent: true
      runtime:
        starlark: {ref: '%s/fns/ann@%s', sha256: '%s'}
`, reg.Host, digest, hex.EncodeToString(sum[:])), 0o644)
	cfg := writeTestFile(t, dir, "ann.yaml", "apiVersion: fn.example.com/v1\nkind: SetAnnotations\nannotations: {owner: platform}\n", 0o644)
	pkg := filepath.Join(dir, "pkg")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	writeTestFile(t, pkg, "cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a # the first\ndata: {x: '1'}\n", 0o644)
	args := []string{"fn", "run", pkg, "--fn-config", cfg, "--catalog", cat, "--trusted-catalog", cat, "--cache-dir", filepath.Join(dir, "c")}

	for i, tc := range []struct {
		extra   []string
		edit    bool
		skipped bool
	}{
		{nil, false, false},                   // first run: runs, remembers
		{nil, false, true},                    // unchanged: skipped
		{[]string{"--no-skip"}, false, false}, // told not to skip
		{nil, true, false},                    // the package changed: runs
		{nil, false, true},                    // and is remembered again
	} {
		if tc.edit {
			writeTestFile(t, pkg, "cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a # the first\ndata: {x: '2'}\n", 0o644)
		}
		code, _, stderr := run(t, "", append(args, tc.extra...)...)
		if code != ExitOK {
			t.Fatalf("run %d: exit %d: %s", i, code, stderr)
		}
		if got := strings.Contains(stderr, runner.SkippedMessage); got != tc.skipped {
			t.Errorf("run %d: skipped %v, want %v; stderr:\n%s", i, got, tc.skipped, stderr)
		}
		out, _ := os.ReadFile(filepath.Join(pkg, "cm.yaml"))
		if !strings.Contains(string(out), "owner: platform") || !strings.Contains(string(out), "# the first") {
			t.Errorf("run %d wrote:\n%s", i, out)
		}
	}
}
