package fn

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// fastCorpus are documents the fast writer must write exactly as yaml.v3 does (fast=true), or leave
// to yaml.v3 (fast=false).
var fastCorpus = []struct {
	doc  string
	fast bool
}{
	{commented, true},
	{"apiVersion: v1\nkind: X\nflow: [a, 'b c', \"d,e\", '', x:y, 1, true, null, {k: v, 'q': [1, 2]}, []]\nm: {a: 1, b: '#x', c: a#b}\n", true},
	{"apiVersion: v1\nkind: X\nflow: [a, b] # after\n", true},
	{"apiVersion: v1\nkind: List\nitems:\n# the first\n- a: 1\n  b: 2\n# the second\n# in two lines\n- x\n- y: 1\n  s:\n  # an item of s\n  - 1\n", true},
	{"apiVersion: v1\nkind: X\nflow: [a, # inside\n  b]\n", false},
	{sampleList, true},
	{twoDocs, true},
	{`apiVersion: v1
kind: ConfigMap
metadata:
  name: strings
data:
  plain: hello world
  colon: "a: b"
  colon2: a:b
  hash: "a #b"
  hash2: a#b
  dash: "- x"
  dash2: -x
  question: "? x"
  lead: " x"
  trail: "x "
  empty: ""
  quote: "it's"
  dq: 'say "hi"'
  bool: "true"
  int: "42"
  float: "1.5"
  nullish: "null"
  tilde: "~"
  hex: "0x1F"
  octal: "0o17"
  date: "2001-12-14"
  star: "*x"
  amp: "&x"
  bang: "!x"
  pct: "%x"
  at: "@x"
  tick: "` + "`" + `x"
  brace: "{x}"
  bracket: "[x]"
  comma: ",x"
  pipe: "|x"
  gt: ">x"
  dots: "...x"
  dashes: "---x"
  backslash: 'a\b'
  single: 'single'
  double: "double"
  yes: "yes"
  on: "on"
  inf: ".inf"
  nan: ".NaN"
  exp: "1e3"
  under: "1_000"
  plus: "+1"
  colonend: "x:"
  "key with spaces": v
  "true": v
  "": empty key
  'quoted key': v
`, true},
	{`apiVersion: apps/v1
kind: Deployment
metadata:
  name: web # the name
  labels:
    app: web
  annotations: {}
spec:
  # how many
  # replicas
  replicas: 3 # one per zone
  paused: false
  ratio: 0.5
  nothing: null
  tilde: ~
  big: 12345678901234567890
  neg: -1
  template:
    spec:
      containers:
      - name: web
        image: nginx:1.25
        ports:
        - containerPort: 80
          protocol: TCP
        - containerPort: 443
        env: []
        resources:
          limits:
            cpu: 500m
      - name: side # a sidecar
        args:
        - --port=8080
        - -v
        - x # a comment on an item
      volumes:
      - {}
`, true},
	{"apiVersion: v1\nkind: List\nitems:\n- a\n- - nested\n", false},
	{"apiVersion: v1\nkind: List\nitems:\n- [a, b]\n", false},
	{"apiVersion: v1\nkind: X\ndata:\n  multi: |\n    line one\n    line two\n", false},
	{"apiVersion: v1\nkind: X\ndata:\n  u: é\n", false},
	{"apiVersion: v1\nkind: X\nbase: &b\n  x: 1\nuse: *b\n", false},
	{"apiVersion: v1\nkind: X\ntagged: !custom x\n", false},
	{"apiVersion: v1\nkind: X\nforced: !!str 1\n", false},
	{"apiVersion: v1\nkind: X\nspec: # trailing\n  a: 1\n", true},
	{"apiVersion: v1\nkind: X\nlist: # on the list\n- a\n", true},
	{"apiVersion: v1\nkind: X\nspec:\n  a: 1\n  # foot\n", false},
	{"# head\n\napiVersion: v1\nkind: X\n", false},
	{"apiVersion: v1\nkind: X\nspec:\n\n  # after a blank line\n  a: 1\n", true},
	{"apiVersion: v1\nkind: X\nitems:\n- # on the item\n  a: 1\n- # on two\n  # lines\n  b:\n  - # nested\n    c: 1\n    d: [x]\n", true},
	{"apiVersion: v1\nkind: X\nitems:\n- # on the item\n\n  # after a blank line\n  a: 1\n", false},
	{"apiVersion: v1\nkind: X\nitems:\n- a: 1\n  # second key\n  b: 2\n", true},
}

func encodeV3(t testing.TB, n *yaml.Node, wide bool) string {
	t.Helper()
	b, err := encodeYAMLv3(n, wide)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// lookAlikeDoc holds a YAML 1.1 look-alike plain, quoted both ways, as a key, in a block sequence and
// in flow collections.
func lookAlikeDoc(v string) string {
	return "apiVersion: v1\nkind: ConfigMap\ndata:\n  plain: " + v + "\n  double: \"" + v + "\"\n  single: '" + v + "'\n  " +
		v + ": key\n  \"" + v + "\": dq key\nlist:\n- " + v + "\n- \"" + v + "\"\nflow: [" + v + ", \"" + v + "\", {" + v + ": " + v + "}]\n"
}

// fullCorpus is fastCorpus and the YAML 1.1 look-alike documents.
func fullCorpus() []string {
	var docs []string
	for _, tc := range fastCorpus {
		docs = append(docs, tc.doc)
	}
	for _, v := range append(append([]string{}, yaml11LookAlikes...), notLookAlikes...) {
		docs = append(docs, lookAlikeDoc(v))
	}
	return docs
}

// The fast writer matches yaml.v3 on every YAML 1.1 look-alike, as read from a file and after the
// pipeline quoted it as new.
func TestFastYAMLMatchesYAMLv3OnLookAlikes(t *testing.T) {
	t.Parallel()
	for _, v := range append(append([]string{}, yaml11LookAlikes...), notLookAlikes...) {
		var doc yaml.Node
		if err := yaml.Unmarshal([]byte(lookAlikeDoc(v)), &doc); err != nil {
			t.Fatalf("%q: %v", v, err)
		}
		for _, quoted := range []bool{false, true} {
			if quoted {
				QuoteLookAlikes(&doc)
			}
			for _, wide := range []bool{false, true} {
				got, ok := appendFast(nil, &doc, wide)
				if !ok {
					continue // left to yaml.v3 (a key yaml.v3 writes with a tag)
				}
				if diff := cmp.Diff(encodeV3(t, &doc, wide), string(got)); diff != "" {
					t.Errorf("%q (quoted %v, wide %v) (-yaml.v3 +fast):\n%s", v, quoted, wide, diff)
				}
			}
		}
	}
}

func TestFastYAMLMatchesYAMLv3(t *testing.T) {
	t.Parallel()
	for i, tc := range fastCorpus {
		var doc yaml.Node
		if err := yaml.Unmarshal([]byte(tc.doc), &doc); err != nil {
			t.Fatalf("corpus %d: %v", i, err)
		}
		for _, wide := range []bool{false, true} {
			got, ok := appendFast(nil, &doc, wide)
			if ok != tc.fast {
				t.Errorf("corpus %d (wide %v): fast = %v, want %v", i, wide, ok, tc.fast)
			}
			if !ok {
				continue
			}
			if diff := cmp.Diff(encodeV3(t, &doc, wide), string(got)); diff != "" {
				t.Errorf("corpus %d (wide %v) (-yaml.v3 +fast):\n%s", i, wide, diff)
			}
		}
	}
}

// The JSON path builds nodes with explicit tags and no styles; the fast writer must quote what needs
// quoting exactly as yaml.v3 does.
func TestFastYAMLFromJSON(t *testing.T) {
	t.Parallel()
	n, err := DecodeJSONNode([]byte(`{"apiVersion":"v1","kind":"X","a":"true","b":"1","c":"","d":"x: y","e":" lead","f":"ok","g":1,"h":1.5,"i":true,"j":null,"k":[],"l":{},"m":["a",{"n":"o"}],"p":"#x"}`))
	if err != nil {
		t.Fatal(err)
	}
	got, ok := appendFast(nil, n, false)
	if !ok {
		t.Fatal("the fast writer refused a plain JSON document")
	}
	if diff := cmp.Diff(encodeV3(t, n, false), string(got)); diff != "" {
		t.Errorf("(-yaml.v3 +fast):\n%s", diff)
	}
}

func TestEncodeYAMLStreamMixesWriters(t *testing.T) {
	t.Parallel()
	var a, b yaml.Node
	_ = yaml.Unmarshal([]byte("apiVersion: v1\nkind: A\n"), &a)
	_ = yaml.Unmarshal([]byte("apiVersion: v1\nkind: B\nx: [1, 2]\n"), &b) // flow: yaml.v3
	got, err := EncodeYAML(&a, &b, &a)
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	enc := yaml.NewEncoder(&want)
	enc.SetIndent(2)
	enc.CompactSeqIndent()
	for _, n := range []*yaml.Node{&a, &b, &a} {
		_ = enc.Encode(n)
	}
	_ = enc.Close()
	if diff := cmp.Diff(want.String(), string(got)); diff != "" {
		t.Errorf("(-yaml.v3 stream +ours):\n%s", diff)
	}
}

// FuzzFastYAML holds the fast YAML writer to yaml.v3: for any document it accepts, the output must
// be byte for byte what yaml.v3 writes.
//
//	go test ./fn -run '^$' -fuzz FuzzFastYAML -fuzztime 60s
func FuzzFastYAML(f *testing.F) {
	for _, doc := range fullCorpus() {
		f.Add(doc, false)
		f.Add(doc, true)
	}
	f.Fuzz(func(t *testing.T, doc string, wide bool) {
		var n yaml.Node
		if err := yaml.Unmarshal([]byte(doc), &n); err != nil {
			return
		}
		checkFastYAML(t, &n, wide)
		checkPartialYAML(t, &n, wide)
		// and as the pipeline writes what a function added: look-alikes quoted
		QuoteLookAlikes(&n)
		checkFastYAML(t, &n, wide)
		checkPartialYAML(t, &n, wide)
	})
}

// checkPartialYAML holds the partial writer to yaml.v3 on n as it is, as an item of a list, and as
// a value in a mapping.
func checkPartialYAML(t *testing.T, n *yaml.Node, wide bool) {
	t.Helper()
	body := n
	if body.Kind == yaml.DocumentNode && len(body.Content) == 1 {
		body = body.Content[0]
	}
	str := func(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v} }
	for _, doc := range []*yaml.Node{n,
		{Kind: yaml.MappingNode, Content: []*yaml.Node{str("items"), {Kind: yaml.SequenceNode, Content: []*yaml.Node{body, body}}}},
		{Kind: yaml.MappingNode, Content: []*yaml.Node{str("a"), str("b"), str("functionConfig"), body}},
	} {
		got, ok := appendYAML(nil, doc, wide)
		if !ok {
			continue
		}
		want, err := encodeYAMLv3(doc, wide)
		if err != nil {
			continue
		}
		if string(want) != string(got) {
			t.Fatalf("partial writer differs from yaml.v3:\n--- yaml.v3\n%s\n--- partial\n%s", want, got)
		}
	}
}

func checkFastYAML(t *testing.T, n *yaml.Node, wide bool) {
	t.Helper()
	if got, ok := appendFast(nil, n, wide); ok {
		want, err := encodeYAMLv3(n, wide)
		if err != nil {
			t.Skip("yaml.v3 cannot write it either")
		}
		if string(want) != string(got) {
			t.Fatalf("fast writer differs from yaml.v3:\n--- yaml.v3\n%s\n--- fast\n%s", want, got)
		}
		if strings.Count(string(got), "\n") == 0 {
			t.Fatal("no output")
		}
		// with fast paths off, EncodeYAML is yaml.v3 itself; with them on, the same bytes
		all, err := encodeYAML(wide, n)
		if err != nil {
			t.Fatal(err)
		}
		if string(all) != string(want) {
			t.Fatalf("EncodeYAML (fast paths on: %v) differs from yaml.v3:\n--- yaml.v3\n%s\n--- EncodeYAML\n%s", FastPathsEnabled(), want, all)
		}
	}
}

func TestResolvedTagMatchesYAMLv3(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"", "a", "true", "True", "yes", "no", "on", "off", "Off", "null", "~", "nil", "1", "-1", "+1", "0x1f", "0o7", ".5", ".inf", "-.inf", "1e3", "2001-12-14", "1_000", "<<", "=", "0b1", "tomorrow", "false1", "NULL", ".NaN", "O",
		"0", "00", "007", "08", "8080", "123456789012345678", "1234567890123456789", "99999999999999999999", "500m", "256Mi", "1Gi",
		"30s", "1h30m", "1e", "1E5", "0x1p-2", "2001-12-14t21:59:43.10-05:00", "2001-12-14 21:59:43.10", "2001-12-14T21:59:43Z",
		"1.2.3", "1_0", "12:30", "1-2", "3abc", "0xG"} {
		want := (&yaml.Node{Kind: yaml.ScalarNode, Value: v}).ShortTag()
		if got := resolvedTag(v); got != want {
			t.Errorf("resolvedTag(%q) = %s, yaml.v3 says %s", v, got, want)
		}
	}
}

// FuzzResolvedTag holds resolvedTag to yaml.v3's resolution of plain scalars.
//
//	go test ./fn -run '^$' -fuzz FuzzResolvedTag -fuzztime 30s
func FuzzResolvedTag(f *testing.F) {
	for _, v := range []string{"8080", "500m", "2001-12-14t21:59:43.10-05:00", "0x1F", "1e3", "007", "-1", ".5"} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v string) {
		want := (&yaml.Node{Kind: yaml.ScalarNode, Value: v}).ShortTag()
		if got := resolvedTag(v); got != want {
			t.Errorf("resolvedTag(%q) = %s, yaml.v3 says %s", v, got, want)
		}
	})
}

// testdataDocuments returns every YAML document of the repository's test data that yaml.v3 reads,
// by file.
func testdataDocuments(t *testing.T) map[string][]*yaml.Node {
	t.Helper()
	docs := map[string][]*yaml.Node{}
	eachTestdataYAML(t, func(path string, data []byte) {
		dec := yaml.NewDecoder(bytes.NewReader(data))
		for {
			var n yaml.Node
			if err := dec.Decode(&n); err != nil {
				return // the end, or YAML that yaml.v3 refuses: nothing to write
			}
			docs[path] = append(docs[path], &n)
		}
	})
	return docs
}

// The partial writer (yaml.v3 for the mappings the fast writer cannot write) writes every document
// of the test data exactly as yaml.v3 does: each as it is, as an item of a list and as a value
// nested in a mapping, the places a resource has in a ResourceList.
func TestPartialYAMLMatchesYAMLv3OnTestdata(t *testing.T) {
	t.Parallel()
	total, fast, partial := 0, 0, 0
	for path, docs := range testdataDocuments(t) {
		for i, doc := range docs {
			body := doc
			if body.Kind == yaml.DocumentNode && len(body.Content) == 1 {
				body = body.Content[0]
			}
			str := func(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v} }
			shapes := []*yaml.Node{doc,
				{Kind: yaml.MappingNode, Content: []*yaml.Node{str("kind"), str("ResourceList"), str("items"), {Kind: yaml.SequenceNode, Content: []*yaml.Node{body, body}}}},
				{Kind: yaml.MappingNode, Content: []*yaml.Node{str("kind"), str("ResourceList"), str("functionConfig"), body}},
			}
			for s, n := range shapes {
				for _, wide := range []bool{false, true} {
					want, err := encodeYAMLv3(n, wide)
					if err != nil {
						continue
					}
					total++
					if _, ok := appendFast(nil, n, wide); ok {
						fast++
					}
					got, ok := appendYAML(nil, n, wide)
					if !ok {
						continue
					}
					partial++
					if diff := cmp.Diff(string(want), string(got)); diff != "" {
						t.Errorf("%s document %d, shape %d (wide %v) (-yaml.v3 +partial):\n%s", path, i, s, wide, diff)
					}
				}
			}
		}
	}
	t.Logf("of %d documents written, the fast writer took %d alone, %d with yaml.v3 for parts", total, fast, partial)
	if partial <= fast {
		t.Errorf("the partial writer took %d documents, the fast writer alone %d: yaml.v3 never wrote a part", partial, fast)
	}
}
