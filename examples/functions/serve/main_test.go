package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The server says it is building before the seconds the build takes, and the catalog it writes is
// the committed one: CI's toolchain writes examples/functions/catalog.yaml byte for byte (another
// toolchain only rewrites that file when the server starts).
func TestWriteCatalogIsTheCommittedOne(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "catalog.yaml")
	var progress bytes.Buffer
	if err := run(context.Background(), options{addr: defaultAddr, dir: filepath.Join(dir, "bin"), write: out}, &progress); err != nil {
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
		t.Error("the catalog written differs from examples/functions/catalog.yaml; regenerate it: go run ./examples/functions/serve -write-catalog examples/functions/catalog.yaml")
	}
}

// Serving, it writes the catalog for the address it listens on before it answers, and serves over
// plain http what that catalog names.
func TestServeWritesTheCatalogFirst(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "catalog.yaml")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, options{addr: "127.0.0.1:0", dir: filepath.Join(dir, "bin"), catalog: out, ready: func(a string) { ready <- a }}, io.Discard)
	}()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("the server stopped: %v", err)
	}
	cat, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + addr + "/set-annotations.star"
	if !strings.Contains(string(cat), "uri: "+url) {
		t.Fatalf("the catalog does not name %s:\n%s", url, cat)
	}
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET %s: %s", url, resp.Status)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("after stopping: %v", err)
	}
}
