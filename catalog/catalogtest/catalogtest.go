// Package catalogtest holds catalog fixtures for tests: decoding one, and generating valid catalogs
// of any size for benchmarks and load tests.
package catalogtest

import (
	"testing"

	"github.com/krm-catalog/krm-catalog/catalog"
)

// Decode decodes data, which must be exactly one catalog document, as the service and the
// commands decode one, failing the test otherwise. It does not validate: fixtures may be partial.
func Decode(t testing.TB, data []byte) (*catalog.Document, *catalog.Catalog) {
	t.Helper()
	docs, findings := catalog.Decode("catalog.yaml", data)
	if findings.HasErrors() || len(docs) != 1 {
		t.Fatalf("decode: %d documents, %v", len(docs), findings)
	}
	c, err := catalog.DecodeCatalog(docs[0])
	if err != nil {
		t.Fatal(err)
	}
	return docs[0], c
}
