package catalog

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDecodeRejectsHostileInput(t *testing.T) {
	t.Parallel()
	bomb := `a: &a ["x","x","x","x","x","x","x","x","x"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
`
	tests := []struct {
		name     string
		input    []byte
		wantLine int
		want     string
	}{
		{"empty", nil, 1, "empty input"},
		{"only white space", []byte("  \n\n\t\n"), 1, "empty input"},
		{"only comments", []byte("# nothing here\n---\n# still nothing\n"), 1, "empty input"},
		{"binary", []byte("apiVersion: v1\x00\x01\x02"), 1, "binary input: NUL byte at offset 14"},
		{"latin-1", []byte("kind: caf\xe9\n"), 1, "not UTF-8 text: invalid byte 0xe9"},
		{"too large", bytes.Repeat([]byte("a: b\n"), MaxInputBytes/5+1), 1, "above the 16 MiB limit"},
		{"alias bomb", []byte(bomb), 6, "too many values through aliases"},
		{"alias cycle", []byte("a: &x\n  b: *x\n"), 2, "refers to a value that contains it"},
		{"deep block nesting", []byte(deepBlock(200)), 130, "nests more than 128 levels"},
		{"deep flow nesting", []byte(strings.Repeat("[", 100_000)), 1, "nests more than 128 levels"},
		{"deep JSON nesting", []byte("{\"a\":" + strings.Repeat("[", 20_000) + strings.Repeat("]", 20_000) + "}"), 1, "nests more than 128 levels"},
		{"a list", []byte("- a\n- b\n"), 1, "must be a mapping of fields, found a list"},
		{"a scalar", []byte("hello\n"), 1, `found the value "hello"`},
		{"syntax error", []byte("a: b\n  c: d\n"), 2, "invalid YAML: mapping values are not allowed"},
		{"JSON syntax error", []byte("{\"a\": 1,\n \"b\": }\n"), 2, "invalid JSON: invalid character '}'"},
		{"infinity", []byte("a: .inf\n"), 1, "no JSON representation"},
		{"complex key", []byte("? [a, b]\n: c\n"), 1, "a key must be a plain value"},
		{"merge of a scalar", []byte("a: &s hi\nb:\n  <<: *s\n"), 3, "a merge (<<) takes a mapping"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, fs := Decode("in.yaml", tc.input)
			if len(fs) == 0 {
				t.Fatal("no finding")
			}
			f := fs[0]
			if f.Severity != SeverityError || f.Line != tc.wantLine || !strings.Contains(f.Message, tc.want) {
				t.Errorf("got %s; want an error at line %d containing %q", f, tc.wantLine, tc.want)
			}
		})
	}
}

func deepBlock(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(strings.Repeat(" ", i) + "a:\n")
	}
	b.WriteString(strings.Repeat(" ", n) + "b: 1\n")
	return b.String()
}

func TestDecodeStreams(t *testing.T) {
	t.Parallel()
	type doc struct {
		Index int
		Kind  string
		Raw   string
		Line  int // where the document's "kind" key stands in the file
	}
	tests := []struct {
		name  string
		input string
		want  []doc
	}{
		{
			name:  "single YAML document",
			input: "kind: A\n",
			want:  []doc{{0, "A", "kind: A\n", 1}},
		},
		{
			name:  "leading marker and comments",
			input: "# header\n---\nkind: A\n",
			want:  []doc{{0, "A", "---\nkind: A\n", 3}},
		},
		{
			name:  "three documents with an empty one between",
			input: "kind: A\n---\n---\n# c\nkind: B\n...\nkind: C\n",
			want: []doc{
				{0, "A", "kind: A\n", 1},
				{1, "B", "---\n# c\nkind: B\n...\n", 5},
				{2, "C", "kind: C\n", 7},
			},
		},
		{
			name:  "marker-like text inside a block scalar is indented, so not a marker",
			input: "kind: A\ntext: |\n  ---\n  x\n---\nkind: B\n",
			want: []doc{
				{0, "A", "kind: A\ntext: |\n  ---\n  x\n", 1},
				{1, "B", "---\nkind: B\n", 6},
			},
		},
		{
			name:  "JSON",
			input: "{\"kind\": \"A\", \"path\": \"a\\/b\"}\n",
			want:  []doc{{0, "A", "{\"kind\": \"A\", \"path\": \"a\\/b\"}", 1}},
		},
		{
			name:  "concatenated JSON",
			input: "{\"kind\": \"A\"}\n\n{\n  \"kind\": \"B\"\n}\n",
			want: []doc{
				{0, "A", "{\"kind\": \"A\"}", 1},
				{1, "B", "{\n  \"kind\": \"B\"\n}", 4},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			docs, fs := Decode("in", []byte(tc.input))
			if len(fs) > 0 {
				t.Fatalf("unexpected findings: %v", fs)
			}
			var got []doc
			for _, d := range docs {
				line, _ := d.Position("/kind")
				got = append(got, doc{d.Index, d.Kind, string(d.Raw), line})
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("documents (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecodeValues(t *testing.T) {
	t.Parallel()
	in := `base: &base
  image: x
  network: false
item:
  <<: *base
  network: true
nums: [1, -2, 3.5, 0x10, 99999999999999999999]
when: 2024-01-02
empty:
`
	docs, fs := Decode("in", []byte(in))
	if len(fs) > 0 {
		t.Fatalf("unexpected findings: %v", fs)
	}
	got := docs[0].Value
	want := map[string]any{
		"base":  map[string]any{"image": "x", "network": false},
		"item":  map[string]any{"image": "x", "network": true},
		"nums":  []any{int64(1), int64(-2), 3.5, int64(16), 1e20},
		"when":  "2024-01-02",
		"empty": nil,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
	if line, col := docs[0].Position("/item/image"); line != 2 || col != 3 {
		t.Errorf("a merged key is placed at its source: got %d:%d, want 2:3", line, col)
	}
}

func TestDecodeDuplicateKeys(t *testing.T) {
	t.Parallel()
	docs, fs := Decode("in", []byte("a: 1\nb: 2\na: 3\n"))
	if len(docs) != 1 || len(fs) != 1 {
		t.Fatalf("got %d documents and findings %v; want the document and one finding", len(docs), fs)
	}
	if f := fs[0]; f.Line != 3 || f.Pointer != "/a" || !strings.Contains(f.Message, `duplicate key "a" (first at line 1)`) {
		t.Errorf("got %s", f)
	}
}

// Syntax errors are reported at the offending token, or where a construct left open at the end of
// the input starts, with the line and column of the file whatever document they are in.
func TestDecodeSyntaxErrorPosition(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		input     string
		line, col int
		want      string
	}{
		{"unclosed flow sequence before a key", "a: 1\nb: [x, y\nc: 3\n", 3, 2, "did not find expected ',' or ']' (while parsing a flow sequence started at 2:4)"},
		{"block entry in a flow sequence", "a:\n  b: [\n    - c: d\n", 3, 5, "did not find expected node content"},
		{"flow sequence open at the end", "a: 1\nb: [x, y\n", 2, 4, "at the end of the input (while parsing a flow sequence started here)"},
		{"unterminated quote", "a: 1\nb: \"open\nc: 3\n", 2, 4, "found unexpected end of stream at the end of the input (while scanning a quoted scalar started here)"},
		{"mapping value in a plain scalar", "a: b: c\n", 1, 5, "mapping values are not allowed in this context"},
		{"indented key", "a: 1\n  b: 2\n", 2, 4, "mapping values are not allowed in this context"},
		{"tab indentation", "a:\n  b: 1\n\tc: 2\n", 3, 1, "found a tab character that violates indentation"},
		{"sequence then key", "a:\n  - x\n  y: 2\n", 3, 3, "did not find expected '-' indicator"},
		{"unknown anchor", "a: 1\nb: *nope\n", 2, 4, "unknown anchor 'nope' referenced"},
		{"in a second document", "a: 1\n---\nb: 2\nc: [x\nd: 4\n", 5, 2, "(while parsing a flow sequence started at 4:4)"},
		{"bad escape", "a: \"x\\qy\"\n", 1, 6, "found unknown escape character"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, fs := Decode("in.yaml", []byte(tc.input))
			if len(fs) == 0 {
				t.Fatal("no finding")
			}
			f := fs[len(fs)-1]
			if f.Line != tc.line || f.Column != tc.col || !strings.Contains(f.Message, tc.want) {
				t.Errorf("got %s; want in.yaml:%d:%d: ...%s...", f, tc.line, tc.col, tc.want)
			}
		})
	}
}
