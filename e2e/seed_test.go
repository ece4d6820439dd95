package e2e

import (
	"context"
	"fmt"
	"testing"

	"github.com/krm-catalog/krm-catalog/catalog"
	"github.com/krm-catalog/krm-catalog/internal/testcatalog"
	"github.com/krm-catalog/krm-catalog/store"
)

// seedCatalogs publishes catalogs of 200 generated functions each (one version per function)
// through the store, as a publish through the API stores them, numbered from first: catalog-NNNN
// with the group teamNNNN.example.com. Two publishes run at once.
func seedCatalogs(tb testing.TB, st *store.Store, first, n int) {
	tb.Helper()
	ctx := context.Background()
	errs := make(chan error, n)
	work := make(chan int)
	for range 2 {
		go func() {
			for c := range work {
				errs <- publishGenerated(ctx, st, c)
			}
		}()
	}
	go func() {
		for c := first; c < first+n; c++ {
			work <- c
		}
		close(work)
	}()
	for range n {
		if err := <-errs; err != nil {
			tb.Fatal(err)
		}
	}
}

func publishGenerated(ctx context.Context, st *store.Store, c int) error {
	name := fmt.Sprintf("catalog-%04d", c)
	data := testcatalog.Catalog(testcatalog.Options{Name: name, Functions: 200, Group: fmt.Sprintf("team%04d.example.com", c)})
	docs, findings := catalog.Decode("c.yaml", data)
	if findings.HasErrors() {
		return fmt.Errorf("generated catalog %s: %v", name, findings)
	}
	cat, err := catalog.DecodeCatalog(docs[0])
	if err != nil {
		return err
	}
	_, _, err = st.PublishCatalog(ctx, store.PublishCatalogParams{
		Name: name, Version: "1.0.0", Publisher: "example.com", Content: data, Document: docs[0], Catalog: cat,
	})
	return err
}
