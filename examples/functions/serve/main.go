// Command serve builds the example functions and serves them, with the example starlark script,
// over https on a loopback address, so that examples/functions/catalog.yaml resolves and runs as
// written. It makes a throw-away certificate authority and writes it to DIR/ca.pem: point
// SSL_CERT_FILE at it so that krm-catalog trusts the server.
//
//	go run ./examples/functions/serve                      # serve on 127.0.0.1:8443
//	go run ./examples/functions/serve -write-catalog examples/functions/catalog.yaml   # regenerate it
package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/krm-catalog/krm-catalog/examples/fnexamples"
)

const header = `# The example functions of examples/functions, as a KRMFunctionCatalog. Their executables are
# served by a development server on this machine, which builds them (reproducibly: the sha256 digests
# below are those of what it builds with this repository's Go toolchain):
#
#   go run ./examples/functions/serve &          # https://127.0.0.1:8443, CA in $TMPDIR/krm-catalog-examples/ca.pem
#   export SSL_CERT_FILE=${TMPDIR:-/tmp}/krm-catalog-examples/ca.pem
#
# Regenerate this file with: go run ./examples/functions/serve -write-catalog examples/functions/catalog.yaml
`

func main() {
	addr := flag.String("addr", "127.0.0.1:8443", "loopback address to serve on")
	dir := flag.String("dir", filepath.Join(os.TempDir(), "krm-catalog-examples"), "where the executables and ca.pem go")
	write := flag.String("write-catalog", "", "write the catalog to this file and exit instead of serving")
	flag.Parse()
	if err := run(*addr, *dir, *write, os.Stderr); err != nil {
		log.Fatal(err)
	}
}

// run builds the example functions, then writes the catalog or serves them; progress says what it
// is doing while that takes seconds (a minute on a cold build cache).
func run(addr, dir, write string, progress io.Writer) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return errors.New("-addr must be a loopback address: this server is for trying the examples, not for publishing")
	}
	root, err := fnexamples.ModuleRoot()
	if err != nil {
		return err
	}
	fmt.Fprintf(progress, "building the example functions for %d platforms into %s (about a minute the first time)...\n", len(fnexamples.Platforms()), dir)
	in, files, err := fnexamples.Published(ctx, root, dir, "https://"+addr, fnexamples.Platforms())
	if err != nil {
		return err
	}
	in.Header = header
	catalog, err := fnexamples.Catalog(in)
	if err != nil {
		return err
	}
	if write != "" {
		return os.WriteFile(write, catalog, 0o644)
	}
	committed := filepath.Join(root, "examples", "functions", "catalog.yaml")
	if b, err := os.ReadFile(committed); err == nil && string(b) != string(catalog) && addr == "127.0.0.1:8443" {
		log.Printf("warning: %s does not match what was built; regenerate it with -write-catalog", committed)
	}
	cert, caPEM, err := selfSigned(host)
	if err != nil {
		return err
	}
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, caPEM, 0o644); err != nil {
		return err
	}
	mux := http.NewServeMux()
	for urlPath, file := range files {
		mux.HandleFunc("GET "+urlPath, func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, file) })
	}
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	fmt.Printf("serving the example functions on https://%s\nexport SSL_CERT_FILE=%s\n", addr, caFile)
	if err := srv.ListenAndServeTLS("", ""); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// selfSigned makes a certificate for host, valid for a day, signed by itself.
func selfSigned(host string) (tls.Certificate, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: "krm-catalog example functions"},
		NotBefore:             time.Now().Add(-time.Minute),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.ParseIP(host)},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	return cert, certPEM, err
}
