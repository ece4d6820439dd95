package web

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"

	"github.com/krm-catalog/krm-catalog/catalog"
)

func TestParseSearch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		query   string
		want    searchParams
		wantErr string
	}{
		{"", searchParams{}, ""},
		{"q=%20set%09labels%20", searchParams{Text: "set labels"}, ""},
		{"tag=a&tag=&tag=b&tag=a&tag=%20b%20", searchParams{Tags: []string{"a", "b"}}, ""},
		{"publisher=example.com&runtime=exec", searchParams{Publisher: "example.com", Runtime: "exec"}, ""},
		{"page=abc_-9&prev=x&prev=y", searchParams{Page: "abc_-9", Prev: []string{"x", "y"}}, ""},
		{"prev=x", searchParams{}, ""}, // no way back from the first page
		{"runtime=docker", searchParams{}, "runtime filter"},
		{"q=" + strings.Repeat("a", maxSearchText+1), searchParams{}, "longer than"},
		{"q=%ff", searchParams{}, "UTF-8"},
		{"q=" + strings.Repeat("a+", 17), searchParams{}, "more than 16 words"},
		{"page=a%2Bb", searchParams{}, "damaged"},
		{"page=a&prev=", searchParams{}, "damaged"},
		{"page=a" + strings.Repeat("&prev=p", maxPrevPages), searchParams{}, "up to page"},
		{"tag=1&tag=2&tag=3&tag=4&tag=5&tag=6&tag=7&tag=8&tag=9&tag=10&tag=11", searchParams{}, "at most"},
		{"publisher=" + strings.Repeat("p", maxFilterLen+1), searchParams{}, "too long"},
	}
	for _, tc := range tests {
		v, err := url.ParseQuery(tc.query)
		if err != nil {
			t.Fatal(err)
		}
		got, err := parseSearch(v)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("parseSearch(%q) error = %v, want one with %q", tc.query, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("parseSearch(%q): %v", tc.query, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("parseSearch(%q) (-want +got):\n%s", tc.query, diff)
		}
	}
}

// FuzzParseSearch: any query string either fails with a message for people or gives a search whose
// URL reads back as the same search.
func FuzzParseSearch(f *testing.F) {
	for _, s := range []string{"", "q=set+labels&tag=mutator&tag=labels", "page=abc&prev=x&runtime=exec", "q=%ff", "tag=%20&publisher=%00", "q=a;b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		v, _ := url.ParseQuery(raw) // the net/http server reads what it can, and so do we
		p, err := parseSearch(v)
		if err != nil {
			if _, ok := err.(*badRequest); !ok {
				t.Fatalf("error %T %v, want *badRequest", err, err)
			}
			return
		}
		u, err := url.Parse(p.URL())
		if err != nil {
			t.Fatalf("URL %q: %v", p.URL(), err)
		}
		again, err := parseSearch(u.Query())
		if err != nil {
			t.Fatalf("URL %q of a valid search fails: %v", p.URL(), err)
		}
		if diff := cmp.Diff(p, again); diff != "" {
			t.Fatalf("round trip through %q (-first +again):\n%s", p.URL(), diff)
		}
	})
}

func TestSearchPaging(t *testing.T) {
	t.Parallel()
	p := searchParams{Text: "set", Tags: []string{"mutator"}}
	var pages []searchParams
	for i, tok := range []string{"t2", "t3", "t4"} {
		if got := p.pageNumber(); got != i+1 {
			t.Errorf("page number %d, want %d", got, i+1)
		}
		pages = append(pages, p)
		p = p.next(tok)
	}
	if p.URL() != "/?page=t4&prev=t2&prev=t3&q=set&tag=mutator" {
		t.Errorf("URL of page 4: %s", p.URL())
	}
	for i := len(pages) - 1; i >= 0; i-- {
		prev, ok := p.previous()
		if !ok {
			t.Fatalf("no previous page of page %d", i+2)
		}
		if diff := cmp.Diff(pages[i], prev); diff != "" {
			t.Errorf("previous of page %d (-want +got):\n%s", i+2, diff)
		}
		p = prev
	}
	if _, ok := p.previous(); ok {
		t.Error("the first page has a previous page")
	}
	// a new filter starts from the first page, and does not change the search it came from
	q := pages[2]
	if got := q.withTag("labels").URL(); got != "/?q=set&tag=mutator&tag=labels" {
		t.Errorf("withTag: %s", got)
	}
	if got := q.withoutTag("mutator").withRuntime("exec").withPublisher("p").URL(); got != "/?publisher=p&q=set&runtime=exec" {
		t.Errorf("filters: %s", got)
	}
	if diff := cmp.Diff([]string{"mutator"}, q.Tags); diff != "" {
		t.Errorf("the original search changed: %s", diff)
	}
}

func TestSchemaTable(t *testing.T) {
	t.Parallel()
	schema := map[string]any{
		"type":     "object",
		"required": []any{"spec"},
		"properties": map[string]any{
			"apiVersion": map[string]any{"type": "string"},
			"kind":       map[string]any{"type": "string"},
			"metadata":   map[string]any{"type": "object"},
			"spec": map[string]any{
				"type": "object", "required": []any{"value"}, "description": "What to change.",
				"properties": map[string]any{
					"value": map[string]any{"type": "string", "pattern": "^[a-z]+$", "maxLength": float64(63)},
					"mode":  map[string]any{"type": "string", "enum": []any{"merge", "replace"}, "default": "merge"},
					"selector": map[string]any{"type": "object", "properties": map[string]any{
						"labels": map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "string"}},
					}},
					"items": map[string]any{"type": "array", "items": map[string]any{
						"type": "object", "required": []any{"name"},
						"properties": map[string]any{"name": map[string]any{"type": "string"}, "count": map[string]any{"x-kubernetes-int-or-string": true}},
					}},
					"resources": map[string]any{"type": "array", "items": map[string]any{"type": "string", "enum": []any{"cpu", "memory"}}, "default": []any{"cpu"}},
					"sep":       map[string]any{"type": "string", "default": " "},
					"extra":     map[string]any{"nullable": true, "anyOf": []any{map[string]any{"type": "integer"}, map[string]any{"type": "string"}}},
				},
			},
		},
	}
	rows, truncated := schemaTable(schema)
	want := []schemaRow{
		{Path: "spec", Type: "object", Required: true, Description: "What to change."},
		{Path: "spec.value", Depth: 1, Type: "string", Required: true, Constraints: []string{"pattern ^[a-z]+$", "max length 63"}},
		{Path: "spec.extra", Depth: 1, Type: "integer or string", Constraints: []string{"may be null"}},
		{Path: "spec.items", Depth: 1, Type: "array of object"},
		{Path: "spec.items[].name", Depth: 2, Type: "string", Required: true},
		{Path: "spec.items[].count", Depth: 2, Type: "integer or string"},
		{Path: "spec.mode", Depth: 1, Type: "string", Default: "merge", Enum: []string{"merge", "replace"}},
		{Path: "spec.resources", Depth: 1, Type: "array of string", Default: `["cpu"]`, Enum: []string{"cpu", "memory"}},
		{Path: "spec.selector", Depth: 1, Type: "object"},
		{Path: "spec.selector.labels", Depth: 2, Type: "map of string"},
		{Path: "spec.sep", Depth: 1, Type: "string", Default: `" "`},
	}
	if diff := cmp.Diff(want, rows); diff != "" || truncated {
		t.Errorf("schemaTable (-want +got), truncated %v:\n%s", truncated, diff)
	}

	// a schema nested deeper than the table goes is cut, and says so
	deep := map[string]any{"type": "string"}
	for range maxSchemaDepth + 5 {
		deep = map[string]any{"type": "object", "properties": map[string]any{"a": deep}}
	}
	rows, truncated = schemaTable(deep)
	if !truncated || len(rows) != maxSchemaDepth {
		t.Errorf("deep schema: %d rows, truncated %v", len(rows), truncated)
	}
}

func TestSnippets(t *testing.T) {
	t.Parallel()
	schema := map[string]any{"type": "object", "required": []any{"namespace", "images", "labels", "replicas"}, "properties": map[string]any{
		"namespace": map[string]any{"type": "string", "description": "The namespace. More words here."},
		"images":    map[string]any{"type": "array", "items": map[string]any{"type": "object", "required": []any{"name"}, "properties": map[string]any{"name": map[string]any{"type": "string"}}}},
		"labels":    map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "string"}},
		"replicas":  map[string]any{"type": "integer", "default": float64(2)},
	}}
	container := catalog.Runtime{Container: &catalog.ContainerRuntime{Image: "registry.example.com/fn/set-namespace:v1.3.0", SHA256: strings.Repeat("a", 64)}}
	exec := catalog.Runtime{Exec: &catalog.ExecRuntime{Platforms: []catalog.ExecPlatform{
		{Bin: "fn", OS: "darwin", Arch: "arm64", URI: "https://downloads.example.com/fn-darwin.tar.gz", SHA256: strings.Repeat("b", 64)},
		{Bin: "fn", OS: "linux", Arch: "amd64", URI: "https://downloads.example.com/fn-linux.tar.gz", SHA256: strings.Repeat("c", 64)},
	}}}
	starlark := catalog.Runtime{Starlark: &catalog.StarlarkRuntime{URI: "https://downloads.example.com/fn.star", SHA256: strings.Repeat("d", 64)}}
	base := snippetInput{Base: "https://catalog.test", Group: "fn.example.com", Kind: "SetNamespace", Version: "v1", Schema: schema, Catalog: "team"}
	catalogURL := "https://catalog.test/catalogs/team/catalog.yaml"

	type doc = map[string]any
	tests := []struct {
		name string
		edit func(*snippetInput)
		want map[string]doc // snippet id → fields its YAML must have
		cmd  string
	}{
		{"container", func(in *snippetInput) { in.Runtime = container }, map[string]doc{
			"snippet-fn-config": {"apiVersion": "fn.example.com/v1", "kind": "SetNamespace", "metadata": doc{"name": "set-namespace"},
				"namespace": nil, "images": []any{}, "labels": doc{}, "replicas": 2},
			"snippet-composition":   {"apiVersion": "kustomize.config.k8s.io/v1alpha1", "kind": "Composition", "catalogs": []any{catalogURL}},
			"snippet-kustomization": {"kind": "Kustomization", "catalogs": []any{catalogURL}, "transformers": []any{"fn.yaml"}},
			"snippet-kptfile": {"apiVersion": "kpt.dev/v1", "pipeline": doc{"mutators": []any{doc{
				"image": "registry.example.com/fn/set-namespace:v1.3.0@sha256:" + strings.Repeat("a", 64), "configPath": "fn.yaml"}}}},
		}, "krm-catalog fn run app/ --fn-config fn.yaml \\\n  --catalog " + catalogURL + " \\\n  --trusted-catalog " + catalogURL + "\n"},
		{"exec validator", func(in *snippetInput) { in.Runtime = exec; in.Tags = []string{"validator"} }, map[string]doc{
			"snippet-kustomization": {"validators": []any{"fn.yaml"}},
			"snippet-kptfile":       {"pipeline": doc{"validators": []any{doc{"exec": "./bin/fn", "configPath": "fn.yaml"}}}},
		}, ""},
		{"starlark generator: no kpt step", func(in *snippetInput) { in.Runtime = starlark; in.Tags = []string{"generator"} }, map[string]doc{
			"snippet-kustomization": {"generators": []any{"fn.yaml"}},
		}, ""},
		{"only a definition: the config carries the runtime", func(in *snippetInput) {
			in.Runtime, in.Catalog = container, ""
			in.RawRuntime = map[string]any{"container": map[string]any{"image": "registry.example.com/fn/set-namespace:v1.3.0"}}
		}, map[string]doc{
			"snippet-fn-config": {"runtime": doc{"container": doc{"image": "registry.example.com/fn/set-namespace:v1.3.0"}}},
		}, "krm-catalog fn run app/ --fn-config fn.yaml\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := base
			tc.edit(&in)
			byID := map[string]snippet{}
			for _, s := range snippets(in) {
				byID[s.ID] = s
			}
			if _, ok := byID["snippet-kptfile"]; ok != (in.Runtime.Starlark == nil) {
				t.Errorf("Kptfile snippet present %v for runtimes %v", ok, in.Runtime.Kinds())
			}
			for id, fields := range tc.want {
				s, ok := byID[id]
				if !ok {
					t.Errorf("no snippet %s", id)
					continue
				}
				var got map[string]any
				if err := yaml.Unmarshal([]byte(s.Text), &got); err != nil {
					t.Fatalf("%s is not YAML: %v\n%s", id, err, s.Text)
				}
				for k, v := range fields {
					if diff := cmp.Diff(v, got[k]); diff != "" {
						t.Errorf("%s: %s (-want +got):\n%s\n%s", id, k, diff, s.Text)
					}
				}
			}
			if tc.cmd != "" && byID["snippet-fn-run"].Text != tc.cmd {
				t.Errorf("command:\n%s\nwant:\n%s", byID["snippet-fn-run"].Text, tc.cmd)
			}
			if in.Runtime.Exec != nil && !strings.Contains(byID["snippet-kptfile"].Note, strings.Repeat("c", 64)) {
				t.Errorf("the exec note does not name the linux/amd64 sha256: %q", byID["snippet-kptfile"].Note)
			}
		})
	}
	if got := byIDText(snippets(snippetInput{Base: "http://h", Group: "g.example.com", Kind: "K", Version: "v1", Runtime: container, Catalog: "c",
		Schema: map[string]any{"required": []any{"a", "b"}, "properties": map[string]any{"a": map[string]any{"type": "string", "description": "The value. Second sentence."}, "b": map[string]any{"type": "integer", "description": "A count."}}}}), "snippet-fn-config"); !strings.Contains(got, "# a: (required string, fill in) The value.\nb: 0 # A count.\n") || strings.Contains(got, `""`) {
		t.Errorf("a required string without a value to offer is not left out with a comment naming it and its description, before the next field:\n%s", got)
	}
	// a string's example or default is a value the schema accepts
	if got := byIDText(snippets(snippetInput{Base: "http://h", Group: "g.example.com", Kind: "K", Version: "v1", Runtime: container, Catalog: "c",
		Schema: map[string]any{"required": []any{"namespace"}, "properties": map[string]any{"namespace": map[string]any{"type": "string", "example": "shop"}}}}), "snippet-fn-config"); !strings.Contains(got, "namespace: shop\n") {
		t.Errorf("a string's example is not used:\n%s", got)
	}
}

func byIDText(ss []snippet, id string) string {
	for _, s := range ss {
		if s.ID == id {
			return s.Text
		}
	}
	return ""
}

func TestSortVersions(t *testing.T) {
	t.Parallel()
	got := sortVersions([]string{"v1alpha1", "v1", "custom", "v2beta1", "v1beta2", "v1beta1", "v2", "v10", "v1", "alpha"})
	want := []string{"v10", "v2", "v1", "v2beta1", "v1beta2", "v1beta1", "v1alpha1", "alpha", "custom"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sortVersions (-want +got):\n%s", diff)
	}
}

func TestBaseURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		host, proto, want string
	}{
		{"catalog.test:8080", "", "http://catalog.test:8080"},
		{"catalog.test", "https", "https://catalog.test"},
		{"[::1]:8080", "gopher", "http://[::1]:8080"},
		{"evil.test/<script>", "", "http://localhost"},
	}
	for _, tc := range tests {
		r := &http.Request{Host: tc.host, Header: http.Header{}}
		if tc.proto != "" {
			r.Header.Set("X-Forwarded-Proto", tc.proto)
		}
		if got := baseURL(r); got != tc.want {
			t.Errorf("baseURL(host %q, proto %q) = %q, want %q", tc.host, tc.proto, got, tc.want)
		}
	}
}

func TestBreakableURL(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"https://downloads.example.com/fn/v1.0.2/fn_linux.tar.gz?a=1&b=<x>",
			"https:/<wbr>/<wbr>downloads<wbr>.example<wbr>.com/<wbr>fn/<wbr>v1<wbr>.0<wbr>.2/<wbr>fn_linux<wbr>.tar<wbr>.gz?<wbr>a=1&amp;<wbr>b=&lt;x&gt;"},
		{"", ""},
	}
	for _, tc := range tests {
		if diff := cmp.Diff(tc.want, string(breakableURL(tc.in))); diff != "" {
			t.Errorf("breakableURL(%q) (-want +got):\n%s", tc.in, diff)
		}
	}
}
