package diff

import (
	"testing"

	"github.com/krm-catalog/krm-catalog/catalog"
)

// FuzzDiff feeds arbitrary documents to the diff as the old and the new catalog. The diff walks
// schemas that come from outside (any nesting, any types); it must not panic, and a catalog
// compared with itself has no changes.
func FuzzDiff(f *testing.F) {
	f.Add([]byte(base), []byte(base))
	f.Add([]byte(base), []byte("kind: KRMFunctionCatalog\nspec: {krmFunctions: [{group: g, names: {kind: K}, versions: [{name: v1, schema: {openAPIV3Schema: {type: [1, a], enum: x, required: [1, a], properties: {a: 1, b: {items: {properties: {c: {}}}}}}}}]}]}"))
	f.Add([]byte("kind: KRMFunctionCatalog\nspec: {krmFunctions: [{versions: [{schema: {openAPIV3Schema: &a {properties: {x: *a}}}}]}]}"), []byte(base))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		old, ok1 := decode(a)
		new, ok2 := decode(b)
		if !ok1 || !ok2 {
			return
		}
		_ = Catalogs(old, new)
		if same := Catalogs(old, old); len(same) != 0 {
			t.Fatalf("a catalog compared with itself has changes: %+v", same)
		}
	})
}

func decode(data []byte) (*catalog.Catalog, bool) {
	docs, _ := catalog.Decode("f.yaml", data)
	for _, d := range docs {
		if c, err := catalog.DecodeCatalog(d); err == nil {
			return c, true
		}
	}
	return nil, false
}
