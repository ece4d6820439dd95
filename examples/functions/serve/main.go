// Command serve builds the example functions, writes the example catalog for what it built, and
// serves the executables and the example starlark script over plain http on a loopback address.
// krm-catalog fetches plain http from this machine (nothing is in transit; the catalog's sha256
// pins carry integrity), so no certificate authority is needed.
//
// The catalog pins the sha256 of the executables this Go toolchain builds; it is written over
// examples/functions/catalog.yaml (the file the README's commands name), so that with another
// toolchain the walk-through still runs and only that generated file changes. CI checks that the
// committed file is what its toolchain writes.
//
//	go run ./examples/functions/serve                      # write the catalog, serve on 127.0.0.1:8090
//	go run ./examples/functions/serve -write-catalog examples/functions/catalog.yaml   # write it and exit
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/krm-catalog/krm-catalog/examples/fnexamples"
)

// defaultAddr is where the committed catalog says the executables are.
const defaultAddr = "127.0.0.1:8090"

const header = `# The example functions of examples/functions, as a KRMFunctionCatalog. A development server on
# this machine builds them, writes this file for what it built (the sha256 digests below are those
# of what this repository's Go toolchain builds; another toolchain rewrites them) and serves the
# executables over plain http on 127.0.0.1, which krm-catalog accepts from this machine:
#
#   go run ./examples/functions/serve &          # http://127.0.0.1:8090
#
# Write this file without serving: go run ./examples/functions/serve -write-catalog examples/functions/catalog.yaml
`

func main() {
	addr := flag.String("addr", defaultAddr, "loopback address to serve on")
	dir := flag.String("dir", filepath.Join(os.TempDir(), "krm-catalog-examples"), "where the executables go")
	write := flag.String("write-catalog", "", "write the catalog to this file and exit instead of serving")
	catalogOut := flag.String("catalog", "", "when serving, write the catalog here (default: examples/functions/catalog.yaml of this repository)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, options{addr: *addr, dir: *dir, write: *write, catalog: *catalogOut}, os.Stderr); err != nil {
		log.Fatal(err)
	}
}

type options struct {
	addr string
	// dir is where the executables are built.
	dir string
	// write, when set, is where the catalog goes; nothing is served.
	write string
	// catalog is where the catalog goes before serving; empty: the committed one's path.
	catalog string
	// ready, when set, gets the listening address once the server accepts connections.
	ready func(addr string)
}

// run builds the example functions, then writes the catalog and serves them (or, with write, only
// writes it); progress says what it is doing while that takes seconds (a minute on a cold cache).
func run(ctx context.Context, o options, progress io.Writer) error {
	host, _, err := net.SplitHostPort(o.addr)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return errors.New("-addr must be a loopback address: this server is for trying the examples, not for publishing")
	}
	base := "http://" + o.addr
	var ln net.Listener
	if o.write == "" {
		// listen first: the catalog names the port actually served (-addr 127.0.0.1:0 picks one)
		if ln, err = net.Listen("tcp", o.addr); err != nil {
			return fmt.Errorf("listen: %w", err)
		}
		defer ln.Close()
		base = "http://" + ln.Addr().String()
	}
	root, err := fnexamples.ModuleRoot()
	if err != nil {
		return err
	}
	fmt.Fprintf(progress, "building the example functions for %d platforms into %s (about a minute the first time)...\n", len(fnexamples.Platforms()), o.dir)
	in, files, err := fnexamples.Published(ctx, root, o.dir, base, fnexamples.Platforms())
	if err != nil {
		return err
	}
	in.Header = header
	in.Images = fnexamples.ExampleImages()
	catalog, err := fnexamples.Catalog(in)
	if err != nil {
		return err
	}
	if o.write != "" {
		return os.WriteFile(o.write, catalog, 0o644)
	}
	out := o.catalog
	if out == "" {
		out = filepath.Join(root, "examples", "functions", "catalog.yaml")
	}
	if old, err := os.ReadFile(out); err != nil || string(old) != string(catalog) {
		fmt.Fprintf(progress, "wrote %s for what this toolchain built (git diff shows what changed)\n", out)
	}
	if err := os.WriteFile(out, catalog, 0o644); err != nil {
		return err
	}
	mux := http.NewServeMux()
	for urlPath, file := range files {
		mux.HandleFunc("GET "+urlPath, func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, file) })
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	fmt.Printf("serving the example functions on %s\n", base)
	if o.ready != nil {
		o.ready(ln.Addr().String())
	}
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
