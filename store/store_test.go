package store_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/krm-catalog/krm-catalog/catalog"
	"github.com/krm-catalog/krm-catalog/internal/testcatalog"
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

// decodeCatalog decodes generated catalog bytes the way the service does.
func decodeCatalog(t *testing.T, data []byte) (*catalog.Document, *catalog.Catalog) {
	t.Helper()
	docs, fs := catalog.Decode("catalog.yaml", data)
	if fs.HasErrors() || len(docs) != 1 {
		t.Fatalf("decode: %v", fs)
	}
	c, err := catalog.DecodeCatalog(docs[0])
	if err != nil {
		t.Fatal(err)
	}
	return docs[0], c
}

func publish(t *testing.T, s *store.Store, publisher, name, version string, data []byte) (store.CatalogVersion, bool, error) {
	t.Helper()
	doc, c := decodeCatalog(t, data)
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
	if err != nil || pub != "example.com" {
		t.Fatalf("Authenticate = %q, %v", pub, err)
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
	entries, err := s.AuditLog(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, e := range entries {
		actions = append(actions, e.Action)
	}
	if diff := cmp.Diff([]string{"token.revoke", "token.create"}, actions); diff != "" {
		t.Errorf("audit log (-want +got):\n%s", diff)
	}
}

func TestPublishCatalog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t)
	mustToken(t, s, "example.com")
	mustToken(t, s, "intruder.example")
	v1 := testcatalog.Catalog(testcatalog.Options{Name: "fns", Functions: 3})

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
	if _, _, err := publish(t, s, "intruder.example", "copy", "1.0.0", testcatalog.Catalog(testcatalog.Options{Name: "copy", Functions: 1, Publisher: "intruder.example"})); !errors.Is(err, store.ErrForbidden) {
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
		data := testcatalog.Catalog(testcatalog.Options{Name: "fns", Functions: i + 1})
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
	same := testcatalog.Catalog(testcatalog.Options{Name: "race", Functions: 5})
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
	if _, _, err := publish(t, s, "example.com", "fns", "1.0.0", testcatalog.Catalog(testcatalog.Options{Name: "fns", Functions: 30})); err != nil {
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
		if _, _, err := publish(t, s, "example.com", name, "1.0.0", testcatalog.Catalog(testcatalog.Options{Name: name, Functions: 2})); err != nil {
			t.Fatal(err)
		}
	}
	kind := testcatalog.Kind(0)
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

func TestKeysAndSignatureChecks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t)
	mustToken(t, s, "example.com")
	k, created, err := s.AddKey(ctx, "example.com", "ab12", "-----BEGIN PUBLIC KEY-----\n...")
	if err != nil || !created || k.Fingerprint != "ab12" {
		t.Fatalf("AddKey = %+v %v %v", k, created, err)
	}
	if _, created, err := s.AddKey(ctx, "example.com", "ab12", "-----BEGIN PUBLIC KEY-----\n..."); err != nil || created {
		t.Errorf("adding the same key again: created %v, %v", created, err)
	}
	if _, _, err := s.AddKey(ctx, "nobody.example", "cd34", "x"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a key for an unknown publisher: %v", err)
	}
	check := store.SignatureCheck{Subject: "127.0.0.1:5000/x@sha256:00", Status: "verified", KeyFingerprint: "ab12"}
	if err := s.SaveSignatureCheck(ctx, "example.com", check); err != nil {
		t.Fatal(err)
	}
	got, err := s.SignatureChecks(ctx, "example.com", []string{check.Subject, "other"}, time.Minute)
	if err != nil || got[check.Subject].Status != "verified" || len(got) != 1 {
		t.Fatalf("SignatureChecks = %+v %v", got, err)
	}
	if got, _ := s.SignatureChecks(ctx, "example.com", []string{check.Subject}, 0); len(got) != 0 {
		t.Errorf("a check older than maxAge is returned: %+v", got)
	}
	// removing a key forgets the checks made with the old set of keys
	if err := s.DeleteKey(ctx, "example.com", "ab12"); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.SignatureChecks(ctx, "example.com", []string{check.Subject}, time.Hour); len(got) != 0 {
		t.Errorf("checks survive a key change: %+v", got)
	}
	if err := s.DeleteKey(ctx, "example.com", "ab12"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("deleting a deleted key: %v", err)
	}
	keys, err := s.ListKeys(ctx, "example.com")
	if err != nil || len(keys) != 0 {
		t.Errorf("ListKeys = %v %v", keys, err)
	}
}

func TestPublishPushesBeforeCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t)
	mustToken(t, s, "example.com")
	data := testcatalog.Catalog(testcatalog.Options{Name: "pushed", Functions: 1})
	doc, c := decodeCatalog(t, data)
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
// the facet totals kept by each publish equal counting the functions afresh.
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
			data := testcatalog.Catalog(testcatalog.Options{Name: p.name, Functions: p.n})
			if _, _, err := publish(t, s, "example.com", p.name, p.version, data); err != nil {
				t.Errorf("publish %d: %v", i, err)
			}
		})
	}
	wg.Go(func() { // a definition of a function the catalogs list too
		def := strings.Replace(strings.Replace(definitionV1, "SetThing", testcatalog.Kind(1), 1), "Sets a thing.", "From a definition.", 1)
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
}
