package oci_test

import (
	"context"
	"crypto/rand"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/krm-catalog/krm-catalog/oci"
	"github.com/krm-catalog/krm-catalog/oci/sign"
	"github.com/krm-catalog/krm-catalog/oci/sign/signtest"
)

// fixedTime makes manifests reproducible across test runs.
var fixedTime = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// newClient returns a client with its own cache in a temporary directory.
func newClient(t *testing.T) *oci.Client {
	t.Helper()
	cache, err := oci.OpenCache(context.Background(), filepath.Join(t.TempDir(), "cache"))
	if err != nil {
		t.Fatal(err)
	}
	return oci.NewClient(oci.Options{Cache: cache})
}

// countingTransport counts requests, to prove a pull used no network, and blob requests among them.
type countingTransport struct{ n, blobs atomic.Int64 }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	if strings.Contains(r.URL.Path, "/blobs/") {
		c.blobs.Add(1)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// randomBytes returns n bytes that no other test pushes.
func randomBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// keyPair makes a cosign key pair and returns the signer and the trusted public key.
func keyPair(t *testing.T, name string) (*sign.Signer, sign.PublicKey) {
	t.Helper()
	k := signtest.KeyPair(t, name)
	return k.Signer, k.Public
}

const catalogYAML = `apiVersion: config.kubernetes.io/v1alpha1
kind: KRMFunctionCatalog
metadata:
  name: test-catalog
spec:
  krmFunctions: []
`

const definitionYAML = `apiVersion: config.kubernetes.io/v1alpha1
kind: KRMFunctionDefinition
spec:
  group: fn.example.com
  names:
    kind: SetThing
  description: Sets a thing.
  publisher: example.com
  versions:
    - name: v1
      runtime:
        container:
          image: registry.example.com/set-thing@sha256:0dccf88826d80f10f13332fbc81c34af84fad81718c2266c151efaabf7922120
`
