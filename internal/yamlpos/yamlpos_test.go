package yamlpos

import (
	"errors"
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"
)

func TestLocate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		input string
		want  *SyntaxError // nil: Locate returns yaml.v3's error as it is
	}{
		{"flow sequence left open", "a: 1\nb: [x, y\nc: 3\n", &SyntaxError{Line: 3, Column: 2, Problem: "did not find expected ',' or ']'", Context: "while parsing a flow sequence", ContextLine: 2, ContextColumn: 4}},
		{"in a second document", "a: 1\n---\nb: 2\nc: [x\nd: 4\n", &SyntaxError{Line: 5, Column: 2, Problem: "did not find expected ',' or ']'", Context: "while parsing a flow sequence", ContextLine: 4, ContextColumn: 4}},
		{"mapping value in a plain scalar", "a: b: c\n", &SyntaxError{Line: 1, Column: 5, Problem: "mapping values are not allowed in this context"}},
		{"unknown anchor", "a: 1\nb: *nope\n", &SyntaxError{Line: 2, Column: 4, Problem: "unknown anchor 'nope' referenced"}},
		{"not a syntax error", "a: [1]\n", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := readAll(tc.input)
			if tc.want == nil {
				// a type error is no syntax error: Locate leaves it alone
				var v struct{ A string }
				err = yaml.Unmarshal([]byte(tc.input), &v)
			}
			if err == nil {
				t.Fatal("yaml.v3 read it")
			}
			got := Locate([]byte(tc.input), err)
			var se *SyntaxError
			if !errors.As(got, &se) {
				se = nil
			}
			if diff := cmp.Diff(tc.want, se); diff != "" {
				t.Errorf("%v (-want +got):\n%s", got, diff)
			}
		})
	}
}

// readAll reads every document of input with yaml.v3 and returns the first error.
func readAll(input string) error {
	dec := yaml.NewDecoder(strings.NewReader(input))
	for {
		var n yaml.Node
		if err := dec.Decode(&n); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

func TestSyntaxErrorText(t *testing.T) {
	t.Parallel()
	got := (&SyntaxError{Line: 3, Column: 2, Problem: "p", Context: "while c", ContextLine: 2, ContextColumn: 4}).Error()
	if diff := cmp.Diff("yaml: line 3, column 2: p (while c started at line 2, column 4)", got); diff != "" {
		t.Error(diff)
	}
}

// FuzzFind: an error found is on a line of the input, at a character of it or just after its last.
func FuzzFind(f *testing.F) {
	for _, s := range []string{"a: [b\nc: d\n", "a: \"b\n", "a: *b\n", "a:\n\tb: c\n", "a: 1\n---\n[\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		se := Find(data)
		if se == nil {
			return
		}
		// YAML's line breaks
		lines := strings.Split(strings.NewReplacer("\r\n", "\n", "\r", "\n", "\u0085", "\n", "\u2028", "\n", "\u2029", "\n").Replace(string(data)), "\n")
		if se.Line < 1 || se.Line > len(lines)+1 {
			t.Fatalf("line %d outside the input's %d lines (%v)", se.Line, len(lines), se)
		}
		if se.Line <= len(lines) {
			if n := utf8.RuneCountInString(lines[se.Line-1]); se.Column < 1 || se.Column > n+1 {
				t.Fatalf("column %d outside line %d of %d characters (%v)", se.Column, se.Line, n, se)
			}
		}
	})
}

func TestReplace(t *testing.T) {
	t.Parallel()
	se := &SyntaxError{Line: 6, Column: 12, Problem: "p"}
	tests := []struct {
		name, err, want string
	}{
		{"yaml.v3's error", "yaml: line 4: p", "yaml: line 6, column 12: p"},
		{"kustomize's", "accumulating resources from 'cm.yaml': MalformedYAMLError: yaml: line 4: p in File: cm.yaml",
			"accumulating resources from 'cm.yaml': MalformedYAMLError: yaml: line 6, column 12: p in File: cm.yaml"},
		{"a file name before it", "read package pkg: cm.yaml: yaml: line 4: p", "read package pkg: cm.yaml: yaml: line 6, column 12: p"},
		{"no yaml.v3 text", "something", "something: yaml: line 6, column 12: p"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := Replace(errors.New(tc.err), se)
			if diff := cmp.Diff(tc.want, got.Error()); diff != "" {
				t.Error(diff)
			}
			var found *SyntaxError
			if !errors.As(got, &found) {
				t.Error("errors.As finds no *SyntaxError")
			}
		})
	}
}

func TestIsSyntaxError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  string
		want bool
	}{
		{"yaml: line 4: did not find expected node content", true},
		{"MalformedYAMLError: yaml: found character that cannot start any token in File: a.yaml", true},
		{"yaml: unmarshal errors:\n  line 1: cannot unmarshal !!seq into string", false},
		{"open cm.yaml: no such file or directory", false},
		{"cm.yaml: not a mapping", false},
	}
	for _, tc := range tests {
		if got := IsSyntaxError(errors.New(tc.err)); got != tc.want {
			t.Errorf("IsSyntaxError(%q) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
