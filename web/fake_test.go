package web

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/krm-catalog/krm-catalog/catalog/catalogtest"
	"github.com/krm-catalog/krm-catalog/identity"
	"github.com/krm-catalog/krm-catalog/store"
)

// fakeStore serves the example catalog from memory, the way the PostgreSQL store would describe it.
type fakeStore struct {
	content   store.Content
	catalog   store.CatalogSummary
	functions []store.FunctionDetail
	keys      []store.Key
	ids       []store.Identity
	grants    []store.Grant
	// searched records the last search query.
	searched store.SearchQuery
	// fail makes every method fail with it.
	fail error
	// countCap, when set, makes searches count as the store does past store.CountCap.
	countCap int
	// contentReads counts CatalogContent calls.
	contentReads atomic.Int32
	proposals    []store.Proposal
}

var published = time.Date(2026, 3, 14, 9, 26, 53, 0, time.UTC)

func newFakeStore(t testing.TB) *fakeStore {
	t.Helper()
	data, err := os.ReadFile("../catalog/testdata/reference/catalog.yaml")
	if err != nil {
		t.Fatal(err)
	}
	doc, cat := catalogtest.Decode(t, data)
	digest := store.Digest(data)
	f := &fakeStore{content: store.Content{Name: cat.Name, Version: "1.0.0", Bytes: data, Digest: digest}}
	cv := store.CatalogVersion{Catalog: cat.Name, Version: "1.0.0", Digest: digest, Publisher: "example.com", PublishedAt: published, Size: len(data), Latest: true, Functions: len(cat.Functions)}
	f.catalog = store.CatalogSummary{Name: cat.Name, Publisher: "example.com", CreatedAt: published, Versions: 1, Latest: &cv}
	spec, _ := doc.Value["spec"].(map[string]any)
	rawFns, _ := spec["krmFunctions"].([]any)
	for i, fn := range cat.Functions {
		d := store.FunctionDetail{
			FunctionSummary: store.FunctionSummary{Group: fn.Group, Kind: fn.Kind, Publisher: fn.Publisher, Description: fn.Description,
				Tags: fn.Tags, Catalogs: []string{cat.Name}},
			Home: fn.Home, Maintainers: fn.Maintainers,
		}
		rawVersions, _ := rawFns[i].(map[string]any)["versions"].([]any)
		for j, v := range fn.Versions {
			d.Versions = append(d.Versions, v.Name)
			for _, k := range v.Runtime.Kinds() {
				if !slices.Contains(d.Runtimes, k) {
					d.Runtimes = append(d.Runtimes, k)
				}
			}
			fv := store.FunctionVersion{Group: fn.Group, Kind: fn.Kind, Version: v.Name, APIVersion: fn.APIVersion(v), Publisher: fn.Publisher,
				Description: fn.Description, Home: fn.Home, Maintainers: fn.Maintainers, Tags: fn.Tags, Runtimes: v.Runtime.Kinds(),
				Spec:   roundTrip(t, rawVersions[j]),
				Source: store.Source{Catalog: cat.Name, CatalogVersion: "1.0.0", Digest: digest, PublishedAt: published}}
			d.Entries = append(d.Entries, fv)
		}
		f.functions = append(f.functions, d)
	}
	return f
}

// roundTrip makes a value look as it does read back from jsonb: numbers become float64.
func roundTrip(t testing.TB, v any) map[string]any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func (f *fakeStore) SearchFunctions(_ context.Context, q store.SearchQuery) (store.SearchResult, error) {
	f.searched = q
	if f.fail != nil {
		return store.SearchResult{}, f.fail
	}
	if q.PageToken == "bad" {
		return store.SearchResult{}, store.ErrBadPageToken
	}
	res := store.SearchResult{Functions: []store.FunctionSummary{}}
	tags := map[string]int{}
	runtimes := map[string]int{}
	for _, d := range f.functions {
		text := strings.ToLower(d.Kind + " " + d.Description)
		if q.Text != "" && !strings.Contains(text, strings.ToLower(q.Text)) {
			continue
		}
		if q.Runtime != "" && !slices.Contains(d.Runtimes, q.Runtime) {
			continue
		}
		ok := true
		for _, t := range q.Tags {
			ok = ok && slices.Contains(d.Tags, t)
		}
		if !ok {
			continue
		}
		res.Functions = append(res.Functions, d.FunctionSummary)
		for _, t := range d.Tags {
			tags[t]++
		}
		for _, r := range d.Runtimes {
			runtimes[r]++
		}
	}
	res.Total = len(res.Functions)
	if res.Total > 0 { // as PostgreSQL counts: no row for a value nothing has
		res.Facets.Publisher = []store.FacetCount{{Value: "example.com", Count: res.Total}}
	}
	for k, n := range tags {
		res.Facets.Tag = append(res.Facets.Tag, store.FacetCount{Value: k, Count: n})
	}
	for k, n := range runtimes {
		res.Facets.Runtime = append(res.Facets.Runtime, store.FacetCount{Value: k, Count: n})
	}
	byCount := func(a, b store.FacetCount) int {
		if a.Count != b.Count {
			return b.Count - a.Count
		}
		return strings.Compare(a.Value, b.Value)
	}
	slices.SortFunc(res.Facets.Tag, byCount)
	slices.SortFunc(res.Facets.Runtime, byCount)
	if f.countCap > 0 && res.Total > f.countCap {
		res.Total, res.TotalCapped = f.countCap, true
		for _, fc := range [][]store.FacetCount{res.Facets.Publisher, res.Facets.Tag, res.Facets.Runtime} {
			for i := range fc {
				fc[i].Capped = true
			}
		}
	}
	if q.Limit > 0 && len(res.Functions) > q.Limit {
		res.Functions = res.Functions[:q.Limit]
		res.NextPageToken = "next"
	}
	return res, nil
}

func (f *fakeStore) GetFunction(_ context.Context, group, kind string) (store.FunctionDetail, error) {
	if f.fail != nil {
		return store.FunctionDetail{}, f.fail
	}
	for _, d := range f.functions {
		if d.Group == group && d.Kind == kind {
			return d, nil
		}
	}
	return store.FunctionDetail{}, store.Errorf(store.ErrNotFound, "no function %s/%s", group, kind)
}

func (f *fakeStore) ListCatalogs(context.Context) ([]store.CatalogSummary, error) {
	return []store.CatalogSummary{f.catalog}, f.fail
}

func (f *fakeStore) GetCatalog(_ context.Context, name string) (store.CatalogSummary, error) {
	if name != f.catalog.Name {
		return store.CatalogSummary{}, store.Errorf(store.ErrNotFound, "no catalog %q", name)
	}
	return f.catalog, f.fail
}

func (f *fakeStore) ListCatalogVersions(_ context.Context, name string) ([]store.CatalogVersion, error) {
	if name != f.catalog.Name {
		return nil, store.Errorf(store.ErrNotFound, "no catalog %q", name)
	}
	return []store.CatalogVersion{*f.catalog.Latest}, f.fail
}

func (f *fakeStore) CatalogContent(_ context.Context, name, version string) (store.Content, error) {
	f.contentReads.Add(1)
	if name != f.catalog.Name || version != "" && version != f.content.Version {
		return store.Content{}, store.Errorf(store.ErrNotFound, "catalog %q has no version %s", name, version)
	}
	return f.content, f.fail
}

func (f *fakeStore) GetPublisher(_ context.Context, name string) (store.Publisher, error) {
	if name != "example.com" {
		return store.Publisher{}, store.Errorf(store.ErrNotFound, "no publisher %q", name)
	}
	return store.Publisher{Name: name, CreatedAt: published, Functions: len(f.functions), Catalogs: 1}, f.fail
}

func (f *fakeStore) PublisherFunctions(_ context.Context, name string, limit int) ([]store.FunctionSummary, error) {
	var out []store.FunctionSummary
	for _, d := range f.functions {
		if d.Publisher == name && len(out) < limit {
			out = append(out, d.FunctionSummary)
		}
	}
	return out, f.fail
}

func (f *fakeStore) PublisherCatalogs(_ context.Context, name string) ([]store.CatalogSummary, error) {
	if name != f.catalog.Publisher {
		return nil, f.fail
	}
	return []store.CatalogSummary{f.catalog}, f.fail
}

func (f *fakeStore) ListIdentities(_ context.Context, publisher string) ([]store.Identity, error) {
	var out []store.Identity
	for _, id := range f.ids {
		if id.Publisher == publisher {
			out = append(out, id)
		}
	}
	return out, f.fail
}

func (f *fakeStore) ListKeys(_ context.Context, publisher string) ([]store.Key, error) {
	var out []store.Key
	for _, k := range f.keys {
		if k.Publisher == publisher {
			out = append(out, k)
		}
	}
	return out, f.fail
}

// GetGroupOwner applies the ownership rule to the fake's grants and its one publisher, example.com.
func (f *fakeStore) GetGroupOwner(_ context.Context, group string) (store.GroupOwner, error) {
	for _, a := range identity.Ancestors(group) {
		for _, g := range f.grants {
			if g.Group == a {
				return store.GroupOwner{Group: group, Owner: g.Publisher, Via: store.OwnedByGrant, Through: a}, f.fail
			}
		}
		if a == f.catalog.Publisher {
			return store.GroupOwner{Group: group, Owner: a, Via: store.OwnedByName, Through: a}, f.fail
		}
	}
	return store.GroupOwner{Group: group}, f.fail
}

func (f *fakeStore) ListGrants(_ context.Context, publisher string) ([]store.Grant, error) {
	var out []store.Grant
	for _, g := range f.grants {
		if g.Publisher == publisher {
			out = append(out, g)
		}
	}
	return out, f.fail
}

// fakeSignatures annotates versions from a table: group/kind@version, or catalog@version.
type fakeSignatures map[string]string

func (f fakeSignatures) AnnotateFunctionVersions(_ context.Context, fvs []store.FunctionVersion) {
	for i, fv := range fvs {
		fvs[i].Signature = f[fv.Group+"/"+fv.Kind+"@"+fv.Version]
	}
}

func (f fakeSignatures) AnnotateCatalogVersions(_ context.Context, vs []store.CatalogVersion) {
	for i, v := range vs {
		vs[i].Signature = f[v.Catalog+"@"+v.Version]
	}
}

func (f *fakeStore) ListProposals(ctx context.Context, catalogName string) ([]store.Proposal, error) {
	if f.fail != nil {
		return nil, f.fail
	}
	return f.proposals, nil
}
