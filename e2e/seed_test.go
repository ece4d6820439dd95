package e2e

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/krm-catalog/krm-catalog/catalog"
	"github.com/krm-catalog/krm-catalog/catalog/catalogtest"
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
	data := catalogtest.Catalog(catalogtest.Options{Name: name, Functions: 200, Group: fmt.Sprintf("team%04d.example.com", c)})
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

// cloneFunctions multiplies the functions in the database by copies+1 in SQL, for search
// benchmarks too large to seed through the store in reasonable time (a million function versions
// would take half an hour here): each copy k repeats every function under the group
// "cK-GROUP", with the same kind, description, tags and runtimes, and the kept facet totals are
// counted again and the copies' words added to the search words. Only the search view is copied
// (functions and function_facets; no catalog versions, no function_versions rows): search reads
// nothing else, but the copies have no function pages.
func cloneFunctions(tb testing.TB, db *pgxpool.Pool, copies int) {
	tb.Helper()
	ctx := context.Background()
	for k := 1; k <= copies; k++ {
		if _, err := db.Exec(ctx, sqlCloneFunctions, fmt.Sprintf("c%d", k)); err != nil {
			tb.Fatalf("clone functions: %v", err)
		}
	}
	if _, err := db.Exec(ctx, sqlCloneFacets); err != nil {
		tb.Fatalf("clone function facets: %v", err)
	}
	if _, err := db.Exec(ctx, sqlCloneLexemes); err != nil {
		tb.Fatalf("clone search words: %v", err)
	}
	if _, err := db.Exec(ctx, sqlRecountFacets); err != nil {
		tb.Fatalf("recount facets: %v", err)
	}
}

const (
	sqlCloneFunctions = `
INSERT INTO functions (fn_group, kind, publisher_id, publisher, description, tags, runtimes, versions, catalogs, name_words, tag_words)
SELECT $1 || '-' || fn_group, kind, publisher_id, publisher, description, tags, runtimes, versions, catalogs,
       $1 || '-' || name_words || ' ' || $1, tag_words
FROM functions WHERE fn_group NOT LIKE 'c%'`
	// the copies' rows of what counts read, as a publish writes them
	sqlCloneFacets = `
INSERT INTO function_facets (id, kind_lower, publisher, tags, runtimes, search)
SELECT id, lower(kind), publisher, tags, runtimes, search FROM functions
WHERE fn_group LIKE 'c%' AND cardinality(versions) > 0 ORDER BY id`
	// the copies' new words (their groups, "cK") for prefix expansion, as a publish adds them
	sqlCloneLexemes = `
INSERT INTO search_lexemes
SELECT DISTINCT l FROM functions, unnest(tsvector_to_array(search)) AS l WHERE fn_group LIKE 'c%'
ON CONFLICT DO NOTHING`
	sqlRecountFacets = `
DELETE FROM facet_totals;
INSERT INTO facet_totals (facet, value, count)
SELECT 'publisher', publisher, count(*) FROM functions WHERE cardinality(versions) > 0 GROUP BY publisher
UNION ALL
SELECT 'tag', t, count(*) FROM functions, unnest(tags) AS t WHERE cardinality(versions) > 0 GROUP BY t
UNION ALL
SELECT 'runtime', r, count(*) FROM functions, unnest(runtimes) AS r WHERE cardinality(versions) > 0 GROUP BY r;`
)
