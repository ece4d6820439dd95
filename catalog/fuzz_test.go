package catalog

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"
)

// addCorpusSeeds seeds a fuzz target with every document of the validation corpus and the examples.
func addCorpusSeeds(f *testing.F) {
	f.Helper()
	var files []string
	for _, pattern := range []string{"testdata/reference/*.yaml", "testdata/valid/*", "testdata/invalid/*", "../examples/*.yaml"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			f.Fatal(err)
		}
		files = append(files, m...)
	}
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("{\"kind\": \"A\"}{\"kind\": \"B\"}"))
	f.Add([]byte("a: &x [*x]\n"))
	f.Add([]byte("%YAML 1.2\n---\nkind: A\n...\n"))
}

func FuzzDecode(f *testing.F) {
	addCorpusSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		docs, findings := Decode("fuzz.yaml", data)
		for _, d := range docs {
			if !bytes.Contains(data, d.Raw) {
				t.Fatalf("document %d's raw bytes are not part of the input", d.Index)
			}
			if d.Value == nil {
				t.Fatalf("document %d has no value", d.Index)
			}
		}
		for _, fd := range findings {
			if fd.Line < 1 || fd.Severity != SeverityError || fd.Message == "" {
				t.Fatalf("malformed finding %+v", fd)
			}
		}
		if len(docs) == 0 && len(findings) == 0 {
			t.Fatal("neither a document nor a finding")
		}
	})
}

func FuzzValidate(f *testing.F) {
	addCorpusSeeds(f)
	v := newTestValidator(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		input := bytes.Clone(data)
		_, first := v.Validate("fuzz.yaml", input, Options{})
		if !bytes.Equal(input, data) {
			t.Fatal("validation changed its input")
		}
		for _, fd := range first {
			if fd.Line < 1 || fd.Column < 0 || fd.File != "fuzz.yaml" || fd.Message == "" {
				t.Fatalf("malformed finding %+v", fd)
			}
		}
		_, second := v.Validate("fuzz.yaml", input, Options{})
		if diff := cmp.Diff(first, second); diff != "" {
			t.Fatalf("validation is not deterministic (-first +second):\n%s", diff)
		}
	})
}

// FuzzYAMLErrorPosition: a YAML syntax error is placed on a character of the input, or just after
// the last one of its line.
func FuzzYAMLErrorPosition(f *testing.F) {
	addCorpusSeeds(f)
	f.Add([]byte("a: [b\nc: d\n"))
	f.Add([]byte("a: \"b\n"))
	f.Add([]byte("a: *b\n"))
	f.Add([]byte("a:\n\tb: c\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var n yaml.Node
		err := yaml.Unmarshal(data, &n)
		if err == nil {
			return
		}
		line, col, msg := yamlErrorAt(data, 0, err)
		if msg == "" {
			t.Fatalf("no message for %v", err)
		}
		lines := strings.Split(string(data), "\n")
		if line < 1 || line > len(lines) {
			t.Fatalf("line %d outside the input's %d lines (%v)", line, len(lines), err)
		}
		if n := utf8.RuneCountInString(lines[line-1]); col < 1 || col > n+1 {
			t.Fatalf("column %d outside line %d of %d characters (%v)", col, line, n, err)
		}
	})
}
