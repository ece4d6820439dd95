package web

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/net/html"

	"github.com/krm-catalog/krm-catalog/internal/httpx"
	"github.com/krm-catalog/krm-catalog/store"
)

const wantCSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'"

func newSite(t *testing.T, cfg Config) http.Handler {
	t.Helper()
	site, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := chi.NewRouter()
	r.Use(httpx.HeadAsGet)
	site.Mount(r)
	return r
}

type result struct {
	status int
	header http.Header
	body   string
}

func get(t *testing.T, h http.Handler, target string, header ...string) result {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, target, nil)
	req.Host = "catalog.test:8080"
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	body, _ := io.ReadAll(rec.Result().Body)
	return result{status: rec.Code, header: rec.Header(), body: string(body)}
}

func TestPages(t *testing.T) {
	t.Parallel()
	h := newSite(t, Config{Store: newFakeStore(t)})
	tests := []struct {
		path   string
		status int
		want   []string
	}{
		{"/", 200, []string{"8 functions", `href="/functions/fn.example.com/SetNamespace"`, "facet-runtime", `href="/?runtime=exec"`, `href="/?tag=mutator"`}},
		{"/?q=namespace", 200, []string{"1 function matches “namespace”", "SetNamespace", `value="namespace"`, `href="/?q=namespace&amp;tag=mutator"`}},
		{"/?runtime=exec&tag=mutator", 200, []string{"2 functions", "ApplySetters", "EnsureNameSubstring", "Remove filter: </span>exec", `href="/?runtime=exec"`}},
		{"/?q=zzzz&tag=mutator", 200, []string{"Nothing matches “zzzz” with these filters", `href="/?q=zzzz"`, "Popular tags", `href="/?tag=mutator"`, "Publish a catalog", "no-facets"}},
		{"/functions/fn.example.com/SetNamespace", 200, []string{"<h1>SetNamespace</h1>", "fn.example.com/v1", "registry.example.com/krm-functions/set-namespace:v1.3.0@sha256:0dccf88826d80f10f13332fbc81c34af84fad81718c2266c151efaabf7922120", "exclude[].kind", "Apache-2.0", "platform-team@example.com"}},
		{"/functions/fn.example.com/SetNamespace?version=v1beta1", 200, []string{"fn.example.com/v1beta1", "set-namespace:v0.9.2@sha256:2e59591e"}},
		{"/functions/fn.example.com/ApplySetters", 200, []string{"Executable", "linux/arm64", "sha256:bed9bb3207559edd9a14d6ee21ee35e845bdb87bbe34e39416e57563e55eeb7a", "exec: ./bin/apply-setters"}},
		{"/functions/fn.example.com/SetImage", 200, []string{"Starlark script", "sha256:81053e8ee6d6eda0da8d71c8349bb3bd978c81f6a5b550cea8ea8fde727daa66"}},
		{"/functions/fn.example.com/RequireResourceLimits", 200, []string{"validators:", "integer or string", "[&#34;cpu&#34;,&#34;memory&#34;]"}},
		{"/catalogs", 200, []string{`href="/catalogs/example-functions"`, "<code>1.0.0</code>"}},
		{"/catalogs/example-functions", 200, []string{"curl -fsSL http://catalog.test:8080/catalogs/example-functions/catalog.yaml", "/catalogs/example-functions/1.0.0/catalog.yaml", "GenerateConfigMap"}},
		{"/publishers/example.com", 200, []string{"<h1>example.com</h1>", "8 functions in 1 catalog", `href="/catalogs/example-functions"`}},
		{"/functions/fn.example.com/Nope", 404, []string{"Page not found", "No function fn.example.com/Nope."}},
		{"/functions/fn.example.com/SetNamespace?version=v9", 404, []string{"has no version &#34;v9&#34;; it has v1, v1beta1"}},
		{"/catalogs/nope", 404, []string{"No catalog &#34;nope&#34;."}},
		{"/catalogs/example-functions?version=9.9.9", 404, []string{"has no version"}},
		{"/publishers/nobody", 404, []string{"No publisher &#34;nobody&#34;."}},
		{"/no/such/page", 404, []string{"There is no page at this address."}},
		{"/?runtime=docker", 400, []string{"The runtime filter must be container, exec or starlark."}},
		{"/?page=bad", 400, []string{"This page link has expired"}},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			t.Parallel()
			r := get(t, h, tc.path)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d\n%s", r.status, tc.status, r.body)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.body, w) {
					t.Errorf("page lacks %q", w)
				}
			}
			for name, want := range map[string]string{
				"Content-Type": "text/html; charset=utf-8", "Content-Security-Policy": wantCSP,
				"X-Content-Type-Options": "nosniff", "Referrer-Policy": "same-origin",
			} {
				if got := r.header.Get(name); got != want {
					t.Errorf("%s = %q, want %q", name, got, want)
				}
			}
			if problems := lintHTML(r.body); len(problems) > 0 {
				t.Errorf("HTML problems:\n%s", strings.Join(problems, "\n"))
			}
		})
	}
}

// TestCappedCounts: when the store stopped counting, the page says "at least" for the total and
// the facets, and numbers no last page.
func TestCappedCounts(t *testing.T) {
	t.Parallel()
	fs := newFakeStore(t)
	fs.countCap = 3
	h := newSite(t, Config{Store: fs})
	r := get(t, h, "/?q=e")
	if r.status != http.StatusOK {
		t.Fatalf("status %d\n%s", r.status, r.body)
	}
	for _, want := range []string{"3&#43; functions match “e”", `<span class="visually-hidden">at least </span>`} {
		if !strings.Contains(r.body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(r.body, " of 1</span>") {
		t.Error("a capped search numbers its last page")
	}
	if problems := lintHTML(r.body); len(problems) > 0 {
		t.Errorf("HTML problems:\n%s", strings.Join(problems, "\n"))
	}
	fs.countCap = 1000
	if r := get(t, h, "/?q=e"); !strings.Contains(r.body, "functions match “e”") || strings.Contains(r.body, "&#43; functions") {
		t.Errorf("an exact count is shown as capped")
	}
}

// lintHTML checks what the pages promise: landmarks, one h1, labelled controls, unique ids, ids
// that labels and copy buttons name, and nothing that the Content-Security-Policy would block.
func lintHTML(page string) []string {
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		return []string{err.Error()}
	}
	var (
		problems []string
		ids      = map[string]int{}
		refs     []string
		labelFor = map[string]bool{}
		controls []string
		count    = map[string]int{}
	)
	attr := func(n *html.Node, key string) (string, bool) {
		for _, a := range n.Attr {
			if a.Key == key {
				return a.Val, true
			}
		}
		return "", false
	}
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			count[n.Data]++
			if id, ok := attr(n, "id"); ok {
				ids[id]++
			}
			if _, ok := attr(n, "style"); ok {
				problems = append(problems, "inline style attribute on <"+n.Data+">")
			}
			for _, a := range n.Attr {
				if strings.HasPrefix(a.Key, "on") {
					problems = append(problems, "inline event handler "+a.Key)
				}
				if (a.Key == "href" || a.Key == "src" || a.Key == "action") && n.Data != "a" && strings.Contains(a.Val, "//") {
					problems = append(problems, "<"+n.Data+"> loads from another origin: "+a.Val)
				}
			}
			switch n.Data {
			case "script":
				if src, _ := attr(n, "src"); src == "" || n.FirstChild != nil {
					problems = append(problems, "inline script")
				}
			case "style":
				problems = append(problems, "inline <style>")
			case "label":
				if f, ok := attr(n, "for"); ok {
					labelFor[f] = true
					refs = append(refs, f)
				}
			case "input", "select", "textarea":
				if typ, _ := attr(n, "type"); typ != "hidden" {
					id, _ := attr(n, "id")
					if _, aria := attr(n, "aria-label"); !aria {
						controls = append(controls, id)
					}
				}
			case "button":
				if c, ok := attr(n, "data-copy"); ok {
					refs = append(refs, c)
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	for _, tag := range []string{"header", "main", "footer", "h1"} {
		if count[tag] != 1 {
			problems = append(problems, "want one <"+tag+">, found "+strings.Repeat("I", count[tag]))
		}
	}
	if count["nav"] == 0 {
		problems = append(problems, "no <nav>")
	}
	for id, n := range ids {
		if n > 1 {
			problems = append(problems, "duplicate id "+id)
		}
	}
	for _, ref := range refs {
		if ids[ref] == 0 {
			problems = append(problems, "reference to missing id "+ref)
		}
	}
	for _, id := range controls {
		if id == "" || !labelFor[id] {
			problems = append(problems, "form control without a label: id "+id)
		}
	}
	return problems
}

func TestCaching(t *testing.T) {
	t.Parallel()
	h := newSite(t, Config{Store: newFakeStore(t)})
	first := get(t, h, "/functions/fn.example.com/SetLabels")
	etag := first.header.Get("ETag")
	if first.status != 200 || !regexp.MustCompile(`^"[0-9a-f]{32}"$`).MatchString(etag) || first.header.Get("Cache-Control") != "no-cache" {
		t.Fatalf("first: %d, ETag %q, Cache-Control %q", first.status, etag, first.header.Get("Cache-Control"))
	}
	for _, inm := range []string{etag, `"x", ` + etag, "W/" + etag, "*"} {
		if r := get(t, h, "/functions/fn.example.com/SetLabels", "If-None-Match", inm); r.status != http.StatusNotModified || r.body != "" || r.header.Get("ETag") != etag {
			t.Errorf("If-None-Match %s: %d with %d bytes", inm, r.status, len(r.body))
		}
	}
	if r := get(t, h, "/functions/fn.example.com/SetLabels", "If-None-Match", `"other"`); r.status != 200 {
		t.Errorf("another ETag: %d, want 200", r.status)
	}
	// the snippets name the host the visitor used, so the page and its ETag follow it
	if r := get(t, h, "/functions/fn.example.com/SetLabels", "X-Forwarded-Proto", "https"); r.header.Get("ETag") == etag || !strings.Contains(r.body, "https://catalog.test:8080/catalogs/example-functions/catalog.yaml") {
		t.Errorf("X-Forwarded-Proto: https is not reflected")
	}
	if v := first.header.Values("Vary"); !slices.Contains(v, "X-Forwarded-Proto") {
		t.Errorf("a page whose bytes follow X-Forwarded-Proto: Vary %q, want it named", v)
	}
	if r := get(t, h, "/functions/fn.example.com/Nope"); r.header.Get("ETag") != "" || r.header.Get("Cache-Control") != "no-store" {
		t.Errorf("404: ETag %q, Cache-Control %q", r.header.Get("ETag"), r.header.Get("Cache-Control"))
	}

	// assets: fingerprinted, immutable; the page links each one
	home := get(t, h, "/")
	links := regexp.MustCompile(`(?:href|src)="(/static/[^"]+)"`).FindAllStringSubmatch(home.body, -1)
	if len(links) != 3 {
		t.Fatalf("home links %d assets, want 3 (css, icon, js)", len(links))
	}
	for _, l := range links {
		if !regexp.MustCompile(`^/static/site\.[0-9a-f]{12}\.(css|js)$|^/static/icon\.[0-9a-f]{12}\.svg$`).MatchString(l[1]) {
			t.Errorf("asset URL %s is not fingerprinted", l[1])
		}
		r := get(t, h, l[1])
		if r.status != 200 || r.header.Get("Cache-Control") != "public, max-age=31536000, immutable" || r.header.Get("X-Content-Type-Options") != "nosniff" || r.body == "" {
			t.Errorf("%s: %d, Cache-Control %q", l[1], r.status, r.header.Get("Cache-Control"))
		}
	}
	if r := get(t, h, "/static/site.000000000000.css"); r.status != 404 || r.header.Get("Cache-Control") != "no-store" {
		t.Errorf("unknown asset: %d %q", r.status, r.header.Get("Cache-Control"))
	}
}

func TestSignaturesArtifactsKeys(t *testing.T) {
	t.Parallel()
	plain := newFakeStore(t)
	without := newSite(t, Config{Store: plain})

	// the data the store returns carries a status, an OCI push and keys
	rich := newFakeStore(t)
	for i := range rich.functions {
		if rich.functions[i].Kind == "SetLabels" {
			rich.functions[i].Entries[0].Signature = "signed"
		}
	}
	rich.catalog.Latest.OCIReference = "registry.example.com/catalogs/example-functions:1.0.0"
	rich.catalog.Latest.OCIDigest = "sha256:" + strings.Repeat("ab", 32)
	rich.keys = []store.Key{{Publisher: "example.com", Fingerprint: strings.Repeat("0f", 32), CreatedAt: published}}
	fromData := newSite(t, Config{Store: rich})

	annotated := newSite(t, Config{Store: plain, Signatures: fakeSignatures{
		"fn.example.com/SetNamespace@v1": "verified", "fn.example.com/SetImage@v1": "unsigned",
		"fn.example.com/ApplySetters@v1": "bogus", "example-functions@1.0.0": "verified",
	}})
	tests := []struct {
		name    string
		h       http.Handler
		path    string
		want    []string
		notWant []string
	}{
		{"no status anywhere", without, "/functions/fn.example.com/SetNamespace", nil, []string{"data-signature", "Signature verified", "Unsigned"}},
		{"status in the store's data", fromData, "/functions/fn.example.com/SetLabels", []string{`data-signature="signed"`, "Signed, but not by a key or an identity registered for this publisher."}, nil},
		{"annotated: verified", annotated, "/functions/fn.example.com/SetNamespace", []string{`data-signature="verified"`, "Signature verified"}, nil},
		{"annotated: another version unknown", annotated, "/functions/fn.example.com/SetNamespace?version=v1beta1", nil, []string{"data-signature"}},
		{"annotated: unsigned", annotated, "/functions/fn.example.com/SetImage", []string{`data-signature="unsigned"`, "Unsigned"}, nil},
		{"annotated: a status the API does not define", annotated, "/functions/fn.example.com/ApplySetters", nil, []string{"data-signature", "bogus"}},
		{"catalog not pushed", without, "/catalogs/example-functions", nil, []string{"OCI artifact", "data-signature"}},
		{"catalog pushed", fromData, "/catalogs/example-functions", []string{"OCI artifact", "registry.example.com/catalogs/example-functions:1.0.0", "sha256:abab"}, nil},
		{"catalog signature", annotated, "/catalogs/example-functions", []string{`data-signature="verified"`}, nil},
		{"no keys", without, "/publishers/example.com", []string{"registered no signing key"}, []string{"data-key-fingerprint"}},
		{"keys", fromData, "/publishers/example.com", []string{"Signing keys", strings.Repeat("0f", 32)}, []string{"registered no signing key"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			checkPage(t, tc.h, tc.path, tc.want, tc.notWant)
		})
	}
}

// checkPage gets path, which must answer 200 with every text of want and none of notWant.
func checkPage(t *testing.T, h http.Handler, path string, want, notWant []string) {
	t.Helper()
	r := get(t, h, path)
	if r.status != http.StatusOK {
		t.Fatalf("status %d", r.status)
	}
	for _, w := range want {
		if !strings.Contains(r.body, w) {
			t.Errorf("page lacks %q", w)
		}
	}
	for _, w := range notWant {
		if strings.Contains(r.body, w) {
			t.Errorf("page shows %q", w)
		}
	}
}

func TestErrorPages(t *testing.T) {
	t.Parallel()
	fake := newFakeStore(t)
	fake.fail = errors.New("connection refused: host db.internal")
	h := newSite(t, Config{Store: fake})
	r := get(t, h, "/functions/fn.example.com/SetNamespace")
	if r.status != 500 || !strings.Contains(r.body, "Something went wrong") || strings.Contains(r.body, "db.internal") {
		t.Errorf("store failure: %d\n%s", r.status, r.body)
	}
	if r.header.Get("Content-Security-Policy") != wantCSP || r.header.Get("Cache-Control") != "no-store" {
		t.Errorf("error page headers: %v", r.header)
	}
	if problems := lintHTML(r.body); len(problems) > 0 {
		t.Errorf("HTML problems:\n%s", strings.Join(problems, "\n"))
	}
}

func TestUnavailablePage(t *testing.T) {
	t.Parallel()
	fake := newFakeStore(t)
	fake.fail = fmt.Errorf("get function: %w", store.ErrUnavailable)
	h := newSite(t, Config{Store: fake})
	r := get(t, h, "/functions/fn.example.com/SetNamespace")
	if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" || !strings.Contains(r.body, "unavailable") {
		t.Errorf("database outage: %d, Retry-After %q\n%s", r.status, r.header.Get("Retry-After"), r.body)
	}
}

func TestSearchPassesFilters(t *testing.T) {
	t.Parallel()
	fake := newFakeStore(t)
	h := newSite(t, Config{Store: fake})
	get(t, h, "/?q=+set++labels+&tag=mutator&tag=labels&tag=mutator&publisher=example.com&runtime=container&page=abc&prev=x&prev=y")
	want := struct {
		Text, Publisher, Runtime, PageToken string
		Tags                                []string
		Limit                               int
	}{"set labels", "example.com", "container", "abc", []string{"mutator", "labels"}, pageSize}
	q := fake.searched
	got := want
	got.Text, got.Publisher, got.Runtime, got.PageToken, got.Tags, got.Limit = q.Text, q.Publisher, q.Runtime, q.PageToken, q.Tags, q.Limit
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("store query (-want +got):\n%s", diff)
	}
}

// TestLintHTML makes sure the checker the page tests rely on finds what it looks for.
func TestLintHTML(t *testing.T) {
	t.Parallel()
	bad := `<!doctype html><html><body><header></header><nav></nav><main><h1>a</h1><h1>b</h1>
<p id="x" style="color:red">x</p><p id="x"></p><script>alert(1)</script><img src="https://cdn.example.com/a.png">
<input id="q" type="search"><button data-copy="missing">Copy</button></main><footer></footer></body></html>`
	got := lintHTML(bad)
	for _, want := range []string{"want one <h1>", "inline style", "duplicate id x", "inline script", "another origin", "without a label: id q", "missing id missing"} {
		found := false
		for _, p := range got {
			found = found || strings.Contains(p, want)
		}
		if !found {
			t.Errorf("lintHTML missed %q; reported %q", want, got)
		}
	}
}
