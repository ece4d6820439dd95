package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/krm-catalog/krm-catalog/oci/registrytest"
)

// pull --max-size: an artifact larger than the cap is refused with nothing written; raising the
// cap pulls it.
func TestPullMaxSize(t *testing.T) {
	dir := ociEnv(t)
	reg := registrytest.Distribution(t)
	ref := reg.Host + "/catalogs/capped:v1"
	mustRun(t, ExitOK, "", "push", ref, "../../../catalog/testdata/reference/catalog.yaml")
	out := filepath.Join(dir, "out")
	code, _, stderr := run(t, "", "pull", "--max-size", "16KiB", "-o", out, ref)
	if code != ExitFailure || !strings.Contains(stderr, "artifact too large: the pull may write 16384 bytes (--max-size)") {
		t.Fatalf("exit %d, stderr %s; want the cap named", code, stderr)
	}
	if entries, _ := os.ReadDir(out); len(entries) != 0 {
		t.Errorf("a refused pull wrote %v", entries)
	}
	mustRun(t, ExitOK, "", "pull", "--max-size", "32KiB", "-o", out, ref)
	if _, err := os.Stat(filepath.Join(out, "catalog.yaml")); err != nil {
		t.Error(err)
	}
	if code, _, stderr := run(t, "", "pull", "--max-size", "lots", "-o", out, ref); code != ExitUsage || !strings.Contains(stderr, `"lots" is not a size`) {
		t.Errorf("exit %d, stderr %s; want a usage error", code, stderr)
	}
}
