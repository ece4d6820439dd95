package store_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/krm-catalog/krm-catalog/catalog"
	"github.com/krm-catalog/krm-catalog/catalog/catalogtest"
	"github.com/krm-catalog/krm-catalog/migrations"
	"github.com/krm-catalog/krm-catalog/store"
	"github.com/krm-catalog/krm-catalog/store/storetest"
)

func TestMain(m *testing.M) {
	os.Exit(storetest.Main(m, migrations.Up))
}

func openStore(t *testing.T) *store.Store {
	t.Helper()
	return openStoreAt(t, storetest.NewDatabase(t))
}

func openStoreAt(t *testing.T, url string) *store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func publish(t *testing.T, s *store.Store, publisher, name, version string, data []byte) (store.CatalogVersion, bool, error) {
	t.Helper()
	doc, c := catalogtest.Decode(t, data)
	return s.PublishCatalog(context.Background(), store.PublishCatalogParams{
		Name: name, Version: version, Publisher: publisher, Content: data, Document: doc, Catalog: c,
	})
}

func mustToken(t *testing.T, s *store.Store, publisher string) string {
	t.Helper()
	tok, _, err := s.CreateToken(context.Background(), publisher, "test")
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestTokens(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t)
	tok, info, err := s.CreateToken(ctx, "example.com", "ci")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tok, store.TokenPrefix) || len(tok) < 40 || !strings.HasPrefix(tok, info.Hint) {
		t.Fatalf("token %q with hint %q", tok, info.Hint)
	}
	pub, err := s.Authenticate(ctx, tok)
	if err != nil || pub.Publisher != "example.com" || pub.TokenID != info.ID {
		t.Fatalf("Authenticate = %+v, %v; want example.com's token %d", pub, err, info.ID)
	}
	for _, bad := range []string{"", tok + "x", store.TokenPrefix + "nope", "Bearer " + tok} {
		if _, err := s.Authenticate(ctx, bad); !errors.Is(err, store.ErrUnauthorized) {
			t.Errorf("Authenticate(%q) = %v, want ErrUnauthorized", bad, err)
		}
	}
	list, err := s.ListTokens(ctx, "example.com")
	if err != nil || len(list) != 1 || list[0].LastUsedAt == nil || list[0].Hint != info.Hint {
		t.Fatalf("ListTokens = %+v, %v", list, err)
	}
	if err := s.RevokeToken(ctx, "other.com", info.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("another publisher revoked the token: %v", err)
	}
	if err := s.RevokeToken(ctx, "example.com", info.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Authenticate(ctx, tok); !errors.Is(err, store.ErrUnauthorized) {
		t.Errorf("revoked token still authenticates: %v", err)
	}
	id := fmt.Sprint(info.ID)
	if diff := cmp.Diff([]string{"token.revoke example.com token " + id, "token.create example.com token " + id}, auditLog(t, s, "token.")); diff != "" {
		t.Errorf("audit log (-want +got):\n%s", diff)
	}
}

// auditLog returns the newest audit entries whose action starts with prefix, newest first, each
// as "action publisher subject".
func auditLog(t *testing.T, s *store.Store, prefix string) []string {
	t.Helper()
	entries, err := s.AuditLog(context.Background(), 100)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Action, prefix) {
			out = append(out, e.Action+" "+e.Publisher+" "+e.Subject)
		}
	}
	return out
}

func TestPublishCatalog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t)
	mustToken(t, s, "example.com")
	mustToken(t, s, "intruder.example")
	v1 := catalogtest.Catalog(catalogtest.Options{Name: "fns", Functions: 3})

	got, created, err := publish(t, s, "example.com", "fns", "1.0.0", v1)
	if err != nil || !created || !got.Latest || got.Digest != store.Digest(v1) || got.Functions != 3 {
		t.Fatalf("first publish = %+v, %v, %v", got, created, err)
	}
	if _, created, err := publish(t, s, "example.com", "fns", "1.0.0", v1); err != nil || created {
		t.Errorf("same bytes again: created %v, err %v; want a no-op", created, err)
	}
	other := append([]byte("# changed\n"), v1...)
	if _, _, err := publish(t, s, "example.com", "fns", "1.0.0", other); !errors.Is(err, store.ErrConflict) {
		t.Errorf("other bytes under a published version: %v, want ErrConflict", err)
	}
	if _, _, err := publish(t, s, "intruder.example", "fns", "2.0.0", v1); !errors.Is(err, store.ErrForbidden) {
		t.Errorf("another publisher's catalog name: %v, want ErrForbidden", err)
	}
	if _, _, err := publish(t, s, "intruder.example", "copy", "1.0.0", catalogtest.Catalog(catalogtest.Options{Name: "copy", Functions: 1, Publisher: "intruder.example"})); !errors.Is(err, store.ErrForbidden) {
		t.Errorf("another publisher's function: %v, want ErrForbidden", err)
	}

	content, err := s.CatalogContent(ctx, "fns", "")
	if err != nil || string(content.Bytes) != string(v1) || content.Version != "1.0.0" {
		t.Fatalf("latest content = %q %v", content.Version, err)
	}
	if _, err := s.CatalogContent(ctx, "fns", "9.9.9"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("missing version: %v", err)
	}
}

func TestLatestFollowsSemver(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t)
	mustToken(t, s, "example.com")
	for i, v := range []string{"1.0.0", "2.0.0", "1.5.0", "v2.1.0-rc.1", "2.1.0"} {
		data := catalogtest.Catalog(catalogtest.Options{Name: "fns", Functions: i + 1})
		if _, _, err := publish(t, s, "example.com", "fns", v, data); err != nil {
			t.Fatal(err)
		}
	}
	c, err := s.GetCatalog(ctx, "fns")
	if err != nil {
		t.Fatal(err)
	}
	if c.Latest.Version != "2.1.0" || c.Versions != 5 || c.Latest.Functions != 5 {
		t.Errorf("latest = %+v, versions %d", c.Latest, c.Versions)
	}
	// the search view shows the functions of the latest version only
	res, err := s.SearchFunctions(ctx, store.SearchQuery{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if res.Total != 5 {
		t.Errorf("search total %d, want the 5 functions of the latest version", res.Total)
	}
}

func TestConcurrentPublishes(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	mustToken(t, s, "example.com")
	same := catalogtest.Catalog(catalogtest.Options{Name: "race", Functions: 5})
	var wg sync.WaitGroup
	results := make([]error, 20)
	createdCount := make([]bool, 20)
	for i := range 20 {
		wg.Go(func() {
			data := same
			if i%4 == 3 {
				data = append([]byte(fmt.Sprintf("# variant %d\n", i)), same...)
			}
			_, created, err := publish(t, s, "example.com", "race", "1.0.0", data)
			results[i], createdCount[i] = err, created
		})
	}
	wg.Wait()
	created := 0
	for i, err := range results {
		if createdCount[i] {
			created++
		}
		if err != nil && !errors.Is(err, store.ErrConflict) {
			t.Errorf("publish %d: %v", i, err)
		}
	}
	versions, err := s.ListCatalogVersions(context.Background(), "race")
	if err != nil {
		t.Fatal(err)
	}
	if created != 1 || len(versions) != 1 {
		t.Errorf("%d publishes created a version and %d versions are stored; want exactly 1", created, len(versions))
	}
}

func TestSearch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t)
	mustToken(t, s, "example.com")
	if _, _, err := publish(t, s, "example.com", "fns", "1.0.0", catalogtest.Catalog(catalogtest.Options{Name: "fns", Functions: 30})); err != nil {
		t.Fatal(err)
	}
	// Kind(1) is EnsureNamespace1, a function whose kind contains "Namespace"
	res, err := s.SearchFunctions(ctx, store.SearchQuery{Text: "namesp", Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	if res.Total == 0 || !strings.Contains(res.Functions[0].Kind, "Namespace") {
		t.Fatalf("a prefix of a word in the kind ranks it first: %+v", res.Functions)
	}
	all, err := s.SearchFunctions(ctx, store.SearchQuery{Limit: 7})
	if err != nil {
		t.Fatal(err)
	}
	if all.Total != 30 || len(all.Functions) != 7 || all.NextPageToken == "" {
		t.Fatalf("first page: total %d, %d results, token %q", all.Total, len(all.Functions), all.NextPageToken)
	}
	seen := map[string]bool{}
	token := ""
	for page := 0; page < 10; page++ {
		r, err := s.SearchFunctions(ctx, store.SearchQuery{Limit: 7, PageToken: token})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range r.Functions {
			if seen[f.Kind] {
				t.Errorf("%s on two pages", f.Kind)
			}
			seen[f.Kind] = true
		}
		if token = r.NextPageToken; token == "" {
			break
		}
	}
	if len(seen) != 30 {
		t.Errorf("paging visited %d functions, want 30", len(seen))
	}
	if _, err := s.SearchFunctions(ctx, store.SearchQuery{Text: "other", PageToken: all.NextPageToken}); !errors.Is(err, store.ErrBadPageToken) {
		t.Errorf("a token used for another query: %v", err)
	}

	byRuntime, err := s.SearchFunctions(ctx, store.SearchQuery{Runtime: "exec", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if byRuntime.Total != 10 {
		t.Errorf("exec functions: %d, want 10", byRuntime.Total)
	}
	// the runtime facet ignores its own filter, so the other runtimes stay visible with their counts
	want := []store.FacetCount{{Value: "container", Count: 10}, {Value: "exec", Count: 10}, {Value: "starlark", Count: 10}}
	if diff := cmp.Diff(want, byRuntime.Facets.Runtime); diff != "" {
		t.Errorf("runtime facet (-want +got):\n%s", diff)
	}
	if len(byRuntime.Facets.Publisher) != 1 || byRuntime.Facets.Publisher[0].Count != 10 {
		t.Errorf("publisher facet under the exec filter: %+v", byRuntime.Facets.Publisher)
	}
	for _, hostile := range []string{"'; DROP TABLE functions; --", "a & | ! :* (", "\x00"} {
		if _, err := s.SearchFunctions(ctx, store.SearchQuery{Text: hostile}); err != nil {
			t.Errorf("search %q: %v", hostile, err)
		}
	}
}

func TestResolveAndFunctions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t)
	mustToken(t, s, "example.com")
	for _, name := range []string{"alpha", "beta"} {
		if _, _, err := publish(t, s, "example.com", name, "1.0.0", catalogtest.Catalog(catalogtest.Options{Name: name, Functions: 2})); err != nil {
			t.Fatal(err)
		}
	}
	kind := catalogtest.Kind(0)
	res, err := s.Resolve(ctx, "fn.example.com/v1", kind, []string{"beta", "alpha"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Function.Source.Catalog != "beta" || res.Runtime == nil {
		t.Errorf("resolution = %+v; want the first catalog given, beta", res.Function.Source)
	}
	_, err = s.Resolve(ctx, "fn.example.com/v2", kind, []string{"alpha"})
	if !errors.Is(err, store.ErrNotFound) || !strings.Contains(err.Error(), "searched alpha") {
		t.Errorf("unknown version: %v", err)
	}
	d, err := s.GetFunction(ctx, "fn.example.com", kind)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"alpha", "beta"}, d.Catalogs); diff != "" || len(d.Entries) != 2 {
		t.Errorf("function catalogs (-want +got):\n%s; entries %d", diff, len(d.Entries))
	}
	def, err := s.DefinitionContent(ctx, "fn.example.com", kind)
	if err != nil || !def.Derived {
		t.Fatalf("derived definition: %+v %v", def, err)
	}
	v, err := catalog.NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	if _, fs := v.Validate("definition.yaml", def.Bytes, catalog.Options{}); fs.HasErrors() {
		t.Errorf("the derived definition does not validate: %v\n%s", fs, def.Bytes)
	}
}

const definitionV1 = `apiVersion: config.kubernetes.io/v1alpha1
kind: KRMFunctionDefinition
spec:
  group: fn.example.com
  names: {kind: SetThing}
  description: Sets a thing.
  publisher: example.com
  versions:
    - name: v1
      runtime:
        container: {image: "registry.example.com/set-thing@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}
`

func publishDefinition(t *testing.T, s *store.Store, publisher, text string) (store.DefinitionRevision, bool, error) {
	t.Helper()
	docs, fs := catalog.Decode("definition.yaml", []byte(text))
	if fs.HasErrors() {
		t.Fatal(fs)
	}
	def, err := catalog.DecodeDefinition(docs[0])
	if err != nil {
		t.Fatal(err)
	}
	return s.PublishDefinition(context.Background(), store.PublishDefinitionParams{Publisher: publisher, Content: []byte(text), Document: docs[0], Definition: def})
}

func TestDefinitionsAreAppendOnly(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	mustToken(t, s, "example.com")
	mustToken(t, s, "intruder.example")
	rev, created, err := publishDefinition(t, s, "example.com", definitionV1)
	if err != nil || !created || len(rev.Added) != 1 {
		t.Fatalf("first revision: %+v %v %v", rev, created, err)
	}
	if _, created, err := publishDefinition(t, s, "example.com", definitionV1); err != nil || created {
		t.Errorf("same bytes: created %v, %v", created, err)
	}
	withV2 := definitionV1 + `    - name: v2
      runtime:
        container: {image: "registry.example.com/set-thing@sha256:1123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}
`
	rev, created, err = publishDefinition(t, s, "example.com", withV2)
	if err != nil || !created || strings.Join(rev.Added, ",") != "v2" {
		t.Errorf("adding v2: %+v %v %v", rev, created, err)
	}
	changedV1 := strings.Replace(withV2, "0123456789abcdef0123", "9999456789abcdef0123", 1)
	if _, _, err := publishDefinition(t, s, "example.com", changedV1); !errors.Is(err, store.ErrConflict) {
		t.Errorf("changing v1: %v, want ErrConflict", err)
	}
	if _, _, err := publishDefinition(t, s, "example.com", definitionV1); !errors.Is(err, store.ErrConflict) {
		t.Errorf("dropping v2: %v, want ErrConflict", err)
	}
	intruder := strings.Replace(definitionV1, "publisher: example.com", "publisher: intruder.example", 1)
	if _, _, err := publishDefinition(t, s, "intruder.example", intruder); !errors.Is(err, store.ErrForbidden) {
		t.Errorf("another publisher: %v, want ErrForbidden", err)
	}
	content, err := s.DefinitionContent(context.Background(), "fn.example.com", "SetThing")
	if err != nil || string(content.Bytes) != withV2 || content.Derived {
		t.Errorf("definition content: %v, derived %v", err, content.Derived)
	}
}

func TestPublishPushesBeforeCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t)
	mustToken(t, s, "example.com")
	data := catalogtest.Catalog(catalogtest.Options{Name: "pushed", Functions: 1})
	doc, c := catalogtest.Decode(t, data)
	failing := store.PublishCatalogParams{Name: "pushed", Version: "1.0.0", Publisher: "example.com", Content: data, Document: doc, Catalog: c,
		Push: func(context.Context) (string, string, error) { return "", "", errors.New("registry down") }}
	if _, _, err := s.PublishCatalog(ctx, failing); err == nil || !strings.Contains(err.Error(), "registry down") {
		t.Fatalf("a failed push: %v", err)
	}
	if _, err := s.CatalogContent(ctx, "pushed", "1.0.0"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a failed push stored the version: %v", err)
	}
	ok := failing
	ok.Push = func(context.Context) (string, string, error) {
		return "127.0.0.1:5000/catalogs/pushed:1.0.0", "sha256:aa", nil
	}
	cv, _, err := s.PublishCatalog(ctx, ok)
	if err != nil || cv.OCIReference != "127.0.0.1:5000/catalogs/pushed:1.0.0" || cv.OCIDigest != "sha256:aa" {
		t.Fatalf("publish with push: %+v %v", cv, err)
	}
	versions, err := s.ListCatalogVersions(ctx, "pushed")
	if err != nil || versions[0].OCIDigest != "sha256:aa" {
		t.Errorf("versions = %+v %v", versions, err)
	}
}

// TestFacetTotalsStayExact publishes catalogs that share functions, concurrently, and checks that
// the facet totals kept by each publish equal counting the functions afresh, and that
// function_facets, which the counts read, holds the current functions as they are.
func TestFacetTotalsStayExact(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := storetest.NewDatabase(t)
	s := openStoreAt(t, url)
	db, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(ctx)
	mustToken(t, s, "example.com")
	var wg sync.WaitGroup
	for i, p := range []struct {
		name, version string
		n             int
	}{{"alpha", "1.0.0", 6}, {"beta", "1.0.0", 4}, {"alpha", "2.0.0", 2}, {"gamma", "1.0.0", 9}, {"beta", "1.1.0", 1}, {"gamma", "0.9.0", 3}} {
		wg.Go(func() {
			data := catalogtest.Catalog(catalogtest.Options{Name: p.name, Functions: p.n})
			if _, _, err := publish(t, s, "example.com", p.name, p.version, data); err != nil {
				t.Errorf("publish %d: %v", i, err)
			}
		})
	}
	wg.Go(func() { // a definition of a function the catalogs list too
		def := strings.Replace(strings.Replace(definitionV1, "SetThing", catalogtest.Kind(1), 1), "Sets a thing.", "From a definition.", 1)
		def = strings.Replace(def, "  publisher: example.com\n", "  publisher: example.com\n  tags: [from-definition]\n", 1)
		if _, _, err := publishDefinition(t, s, "example.com", def); err != nil {
			t.Errorf("publish definition: %v", err)
		}
	})
	wg.Wait()
	got, err := s.SearchFunctions(ctx, store.SearchQuery{})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := db.Query(ctx, `
SELECT 'publisher', publisher, count(*) FROM functions WHERE cardinality(versions) > 0 GROUP BY publisher
UNION ALL SELECT 'tag', t, count(*) FROM functions, unnest(tags) t WHERE cardinality(versions) > 0 GROUP BY t
UNION ALL SELECT 'runtime', r, count(*) FROM functions, unnest(runtimes) r WHERE cardinality(versions) > 0 GROUP BY r`)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{}
	for rows.Next() {
		var facet, value string
		var n int
		if err := rows.Scan(&facet, &value, &n); err != nil {
			t.Fatal(err)
		}
		want[facet+"/"+value] = n
	}
	rows.Close()
	have := map[string]int{}
	for facet, counts := range map[string][]store.FacetCount{"publisher": got.Facets.Publisher, "tag": got.Facets.Tag, "runtime": got.Facets.Runtime} {
		for _, c := range counts {
			have[facet+"/"+c.Value] = c.Count
		}
	}
	if diff := cmp.Diff(want, have); diff != "" {
		t.Errorf("facet totals (-counted +kept):\n%s", diff)
	}
	if got.Total != want["publisher/example.com"] {
		t.Errorf("total %d, want %d", got.Total, want["publisher/example.com"])
	}
	var stale, missing int
	if err := db.QueryRow(ctx, `
WITH current AS (SELECT id, lower(kind), publisher, tags, runtimes, search FROM functions WHERE cardinality(versions) > 0),
kept AS (SELECT id, kind_lower, publisher, tags, runtimes, search FROM function_facets)
SELECT (SELECT count(*) FROM (TABLE kept EXCEPT ALL TABLE current) k), (SELECT count(*) FROM (TABLE current EXCEPT ALL TABLE kept) c)`).Scan(&stale, &missing); err != nil {
		t.Fatal(err)
	}
	if stale != 0 || missing != 0 || want["publisher/example.com"] == 0 {
		t.Errorf("function_facets: %d rows not of a current function as it is, %d current functions missing (of %d)", stale, missing, want["publisher/example.com"])
	}
}

// rankedCatalog lists functions that each match the word "lantern" in one place only.
const rankedCatalog = `apiVersion: config.kubernetes.io/v1alpha1
kind: KRMFunctionCatalog
metadata:
  name: ranked
spec:
  krmFunctions:
` + rankedFn + rankedFn + rankedFn + rankedFn + rankedFn + rankedFn

const rankedFn = `    - group: %s
      names:
        kind: %s
      description: %s
      publisher: example.com
      tags: [%s]
      versions:
        - name: v1
          runtime:
            container:
              image: registry.example.com/fn/x@sha256:0000000000000000000000000000000000000000000000000000000000000000
`

// TestSearchTiers: the exact kind first, then a match in the name, then in the description, then
// anywhere (tags); by group and kind within each, across page boundaries.
func TestSearchTiers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t)
	mustToken(t, s, "example.com")
	data := fmt.Sprintf(rankedCatalog,
		"b.example.com", "TagOnly", "Nothing to see.", "lantern",
		"a.example.com", "DescribesIt", "Lights a lantern.", "x",
		"b.example.com", "LanternHolder", "Holds.", "x",
		"lantern.example.com", "Grouped", "Grouped.", "x",
		"a.example.com", "Lantern", "The exact kind.", "x",
		"a.example.com", "Unrelated", "Nothing.", "x")
	if _, _, err := publish(t, s, "example.com", "ranked", "1.0.0", []byte(data)); err != nil {
		t.Fatal(err)
	}
	want := []string{"4 a.example.com/Lantern", "3 b.example.com/LanternHolder", "3 lantern.example.com/Grouped", "2 a.example.com/DescribesIt", "1 b.example.com/TagOnly"}
	for _, limit := range []int{1, 2, 3, 10} {
		var got []string
		token := ""
		for range 10 {
			res, err := s.SearchFunctions(ctx, store.SearchQuery{Text: "lantern", Limit: limit, PageToken: token})
			if err != nil {
				t.Fatal(err)
			}
			if res.Total != 5 || res.TotalCapped {
				t.Errorf("limit %d: total %d (capped %v), want 5", limit, res.Total, res.TotalCapped)
			}
			for _, f := range res.Functions {
				got = append(got, fmt.Sprintf("%g %s/%s", f.Rank, f.Group, f.Kind))
			}
			if token = res.NextPageToken; token == "" {
				break
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("pages of %d (-want +got):\n%s", limit, diff)
		}
	}
	// the exact kind ignores case, spaces and punctuation
	res, err := s.SearchFunctions(ctx, store.SearchQuery{Text: "lantern-HOLDER"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Functions) != 1 || res.Functions[0].Kind != "LanternHolder" || res.Functions[0].Rank != 4 {
		t.Errorf("exact kind: %+v", res.Functions)
	}
	// the beginning of a kind typed as one word finds it in the name tier
	res, err = s.SearchFunctions(ctx, store.SearchQuery{Text: "LanternHol"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Functions) != 1 || res.Functions[0].Kind != "LanternHolder" || res.Functions[0].Rank != 3 || res.Total != 1 {
		t.Errorf("kind prefix: total %d, %+v", res.Total, res.Functions)
	}
}

// TestSearchCountsStopAtTheCap: a search matching more than store.CountCap functions counts up to
// the cap and says so, for the total and for the facets it counted; an empty search, and one
// filter alone, read the exact totals each publish keeps.
func TestSearchCountsStopAtTheCap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := storetest.NewDatabase(t)
	s := openStoreAt(t, url)
	mustToken(t, s, "example.com")
	// without statistics, every unfiltered text search takes the sample's path (see below)
	if err := execSQL(ctx, url, "ALTER TABLE function_facets SET (autovacuum_enabled = false)"); err != nil {
		t.Fatal(err)
	}
	const catalogs = 3 // 600 functions
	for c := range catalogs {
		name := fmt.Sprintf("cap-%d", c)
		data := catalogtest.Catalog(catalogtest.Options{Name: name, Functions: 200, Group: name + ".example.com"})
		if _, _, err := publish(t, s, "example.com", name, "1.0.0", data); err != nil {
			t.Fatal(err)
		}
	}
	const all = catalogs * 200
	tests := []struct {
		name   string
		q      store.SearchQuery
		total  int
		capped bool
		// the facets whose counts are capped
		cappedFacets []string
	}{
		{"everything, kept", store.SearchQuery{}, all, false, nil},
		{"one runtime, kept", store.SearchQuery{Runtime: "exec"}, 201, false, nil}, // i%3 == 1 of 200, in 3 catalogs
		{"one tag, kept", store.SearchQuery{Tags: []string{"security"}}, 150, false, nil},
		{"words in every description", store.SearchQuery{Text: "every matching"}, store.CountCap, true, []string{"publisher", "runtime", "tag"}},
		{"narrow words", store.SearchQuery{Text: "ensure secrets"}, 6, false, nil},
		{"broad words, narrowed by a filter", store.SearchQuery{Text: "every", Runtime: "exec"}, 201, false, []string{"runtime"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := s.SearchFunctions(ctx, tt.q)
			if err != nil {
				t.Fatal(err)
			}
			if res.Total != tt.total || res.TotalCapped != tt.capped {
				t.Errorf("total %d, capped %v; want %d, %v", res.Total, res.TotalCapped, tt.total, tt.capped)
			}
			var capped []string
			for name, counts := range map[string][]store.FacetCount{"publisher": res.Facets.Publisher, "tag": res.Facets.Tag, "runtime": res.Facets.Runtime} {
				if len(counts) == 0 {
					t.Errorf("facet %s is empty", name)
					continue
				}
				sum := 0
				for _, c := range counts {
					sum += c.Count
					if c.Capped != counts[0].Capped {
						t.Errorf("facet %s: capped differs between values: %+v", name, counts)
					}
				}
				if counts[0].Capped {
					capped = append(capped, name)
					if name == "publisher" && sum > store.CountCap {
						t.Errorf("capped publisher facet counted %d matches", sum)
					}
				}
			}
			slices.Sort(capped)
			want := slices.Clone(tt.cappedFacets)
			slices.Sort(want)
			if diff := cmp.Diff(want, capped); diff != "" {
				t.Errorf("capped facets (-want +got):\n%s", diff)
			}
			if (res.NextPageToken != "") != (tt.total > 20) {
				t.Errorf("next page token %q with %d results", res.NextPageToken, tt.total)
			}
		})
	}
	// A filtered text search reads its counts from a probe of the text's matches, and reads on
	// past it when the probe ends before a sample is full. The smallest probe takes that second
	// path wherever the default one (larger than these 600 functions) takes the first: the
	// results must not differ.
	small, err := store.OpenWith(ctx, url, store.Options{SearchProbe: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(small.Close)
	probed := []store.SearchQuery{
		{Text: "every", Tags: []string{"security"}},
		{Text: "every", Runtime: "exec"},
		{Text: "every", Publisher: "example.com"},
		{Text: "every", Tags: []string{"security"}, Runtime: "container"},
		{Text: "set", Tags: []string{"networking"}},
		{Text: "secrets", Tags: []string{"security"}, Publisher: "example.com"},
	}
	for _, want := range sameResults(t, s, small, "the smallest probe", probed) {
		if q := want.q; q.Text == "every" && len(q.Tags) == 1 && q.Runtime == "" && (want.Total != 150 || want.TotalCapped) {
			t.Errorf("%+v: total %d (capped %v), want 150", q, want.Total, want.TotalCapped)
		}
	}

	// An unfiltered text search that the statistics do not take for broad samples one row in
	// eight first, and all rows when that eighth holds too few matches, as it does here. Sampling
	// every row (a modulus of 1) takes the first path where the default takes the second: the
	// results must not differ.
	every, err := store.OpenWith(ctx, url, store.Options{SearchSample: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(every.Close)
	sameResults(t, s, every, "sampling every row", []store.SearchQuery{{Text: "every matching"}, {Text: "ensure secrets"}, {Text: "polic"}, {Text: "set lab"}})

	// kept totals are exact beyond the cap
	res, err := s.SearchFunctions(ctx, store.SearchQuery{})
	if err != nil {
		t.Fatal(err)
	}
	want := []store.FacetCount{{Value: "container", Count: 201}, {Value: "exec", Count: 201}, {Value: "starlark", Count: 198}}
	if diff := cmp.Diff(want, res.Facets.Runtime); diff != "" {
		t.Errorf("runtime facet of everything (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]store.FacetCount{{Value: "example.com", Count: all}}, res.Facets.Publisher); diff != "" {
		t.Errorf("publisher facet of everything (-want +got):\n%s", diff)
	}
}

// TestAuditCarriesActorAndOutcome: a change over HTTP records its token and address, and a refusal
// is recorded as one.
func TestAuditCarriesActorAndOutcome(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	mustToken(t, s, "example.com")
	ctx := store.WithActor(context.Background(), store.Actor{TokenID: 7, Address: "192.0.2.1"})
	data := catalogtest.Catalog(catalogtest.Options{Name: "audited", Functions: 1})
	doc, c := catalogtest.Decode(t, data)
	if _, _, err := s.PublishCatalog(ctx, store.PublishCatalogParams{Name: "audited", Version: "1.0.0", Publisher: "example.com", Content: data, Document: doc, Catalog: c}); err != nil {
		t.Fatal(err)
	}
	if err := s.AuditRefusal(store.WithActor(context.Background(), store.Actor{Address: "198.51.100.9"}), "", "catalog.publish", "/api/v1/catalogs/x/versions/1", 401, "invalid or revoked token"); err != nil {
		t.Fatal(err)
	}
	entries, err := s.AuditLog(context.Background(), 2)
	if err != nil || len(entries) != 2 {
		t.Fatalf("AuditLog = %d entries, %v", len(entries), err)
	}
	type seen struct {
		Action, Publisher, Outcome, Address string
		TokenID                             any
		Status                              any
	}
	var got []seen
	for _, e := range entries {
		got = append(got, seen{e.Action, e.Publisher, fmt.Sprint(e.Details["outcome"]), fmt.Sprint(e.Details["address"]), e.Details["tokenId"], e.Details["status"]})
	}
	want := []seen{
		{"catalog.publish", "", "refused", "198.51.100.9", nil, float64(401)},
		{"catalog.publish", "example.com", "ok", "192.0.2.1", float64(7), nil},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("audit entries (-want +got):\n%s", diff)
	}
}

// TestSearchPrefixExpansion: a search of several words matches each as a prefix whether the word
// becomes the index's words that begin with it (few) or stays a prefix (more than 32): the same
// functions either way; a stop word is dropped as to_tsquery drops it (stop words alone match
// nothing), and a word of the index with quotes or backslashes does not break the query.
func TestSearchPrefixExpansion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := storetest.NewDatabase(t)
	s := openStoreAt(t, url)
	mustToken(t, s, "example.com")
	if _, _, err := publish(t, s, "example.com", "zq", "1.0.0", catalogtest.Catalog(catalogtest.Options{Name: "zq", Functions: 3, Group: "zqx07.example.com"})); err != nil {
		t.Fatal(err)
	}
	// words no function has any longer stay in search_lexemes; 40 of them make "zqx" too broad to
	// expand, and "zqx0" expands to ten words, two of them with quoting
	if err := execSQL(ctx, url, `INSERT INTO search_lexemes SELECT 'zqx' || lpad(i::text, 2, '0') FROM generate_series(10, 49) AS i;
INSERT INTO search_lexemes VALUES ('zqx0''s'), ('zqx0\a');`); err != nil {
		t.Fatal(err)
	}
	// one word is left a prefix; two or more are expanded
	for _, text := range []string{"zqx0", "zqx07 example", "zqx0 exam", "zqx com", "zq example", "the zqx0 com", "ZQX07-EXAMPLE"} {
		t.Run(text, func(t *testing.T) {
			res, err := s.SearchFunctions(ctx, store.SearchQuery{Text: text})
			if err != nil {
				t.Fatal(err)
			}
			if res.Total != 3 || len(res.Functions) != 3 {
				t.Errorf("total %d, %d functions; want the 3 of group zqx07.example.com", res.Total, len(res.Functions))
			}
		})
	}
	for _, text := range []string{"zqx1 example", "the a"} {
		res, err := s.SearchFunctions(ctx, store.SearchQuery{Text: text})
		if err != nil {
			t.Fatal(err)
		}
		if res.Total != 0 {
			t.Errorf("%s: total %d, want 0", text, res.Total)
		}
	}
}

// execSQL runs statements on the database at url.
func execSQL(ctx context.Context, url, sql string) error {
	db, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer db.Close(ctx)
	_, err = db.Exec(ctx, sql)
	return err
}

type queryResult struct {
	q store.SearchQuery
	store.SearchResult
}

// sameResults runs each query on want and on got, which differ by what changes, and reports where
// their results differ; it returns want's results.
func sameResults(t *testing.T, want, got *store.Store, change string, qs []store.SearchQuery) []queryResult {
	t.Helper()
	ctx := context.Background()
	var results []queryResult
	for _, q := range qs {
		w, err := want.SearchFunctions(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		g, err := got.SearchFunctions(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(w, g); diff != "" {
			t.Errorf("%+v: %s changes the result (-before +after):\n%s", q, change, diff)
		}
		results = append(results, queryResult{q, w})
	}
	return results
}
