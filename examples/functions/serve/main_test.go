package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The server says it is building before the seconds the build takes, and the catalog it writes is
// the committed one.
func TestRunSaysItIsBuilding(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "catalog.yaml")
	var progress bytes.Buffer
	if err := run("127.0.0.1:8443", filepath.Join(dir, "bin"), out, &progress); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(progress.String(), "building the example functions for ") {
		t.Errorf("progress %q, want a line saying it is building", progress.String())
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join("..", "catalog.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("the catalog written differs from examples/functions/catalog.yaml")
	}
}
