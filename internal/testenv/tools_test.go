package testenv

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// A tools script is run with the tools directory in KRM_CATALOG_TOOLS_BIN, and the directory is
// the last line it prints.
func TestRunToolScript(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	bin := filepath.Join(t.TempDir(), "bin")
	script := "#!/bin/sh\necho building >&2\ntouch \"$KRM_CATALOG_TOOLS_BIN/kustomize\"\necho noise\necho \"$KRM_CATALOG_TOOLS_BIN\"\n"
	if err := os.MkdirAll(filepath.Join(root, ".ci"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, ".ci", "tools-fn.sh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	dir, err := runToolScript(root, ".ci/tools-fn.sh", bin)
	if err != nil {
		t.Fatal(err)
	}
	if dir != bin {
		t.Errorf("dir %q, want %q", dir, bin)
	}
	if _, err := os.Stat(filepath.Join(bin, "kustomize")); err != nil {
		t.Errorf("the script did not build into the directory: %v", err)
	}
}

func TestWriteSkip(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	writeSkip(&b, "TestX", "kustomize is missing: build it")
	if got, want := b.String(), "--- SKIP: TestX: kustomize is missing: build it\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
