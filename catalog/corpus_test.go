package catalog

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// expectation is one "# want:" line of an invalid corpus document:
//
//	# want: LINE POINTER MESSAGE FRAGMENT
//
// POINTER is "-" for the whole document. Each expectation must be met by an error finding.
type expectation struct {
	line     int
	pointer  string
	fragment string
}

func parseExpectations(t *testing.T, data []byte) []expectation {
	t.Helper()
	var out []expectation
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "# want:")
		if !ok {
			continue
		}
		fields := strings.SplitN(strings.TrimSpace(rest), " ", 3)
		if len(fields) != 3 {
			t.Fatalf("malformed expectation %q: want LINE POINTER FRAGMENT", sc.Text())
		}
		line, err := strconv.Atoi(fields[0])
		if err != nil {
			t.Fatalf("malformed expectation %q: %v", sc.Text(), err)
		}
		ptr := fields[1]
		if ptr == "-" {
			ptr = ""
		}
		out = append(out, expectation{line: line, pointer: ptr, fragment: fields[2]})
	}
	return out
}

func corpus(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", dir, "*"))
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestCorpusValid(t *testing.T) {
	t.Parallel()
	v := newTestValidator(t)
	files := corpus(t, "valid")
	if len(files) < 15 {
		t.Errorf("the valid corpus has %d documents, want at least 15", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			docs, findings := v.Validate(f, data, Options{})
			if len(docs) == 0 {
				t.Fatal("no document decoded")
			}
			for _, fd := range findings {
				if fd.Severity == SeverityError {
					t.Errorf("unexpected %s", fd)
				}
			}
		})
	}
}

func TestCorpusInvalid(t *testing.T) {
	t.Parallel()
	v := newTestValidator(t)
	files := corpus(t, "invalid")
	if len(files) < 40 {
		t.Errorf("the invalid corpus has %d documents, want at least 40", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			wants := parseExpectations(t, data)
			if len(wants) == 0 {
				t.Fatal("no '# want: LINE POINTER FRAGMENT' line")
			}
			_, findings := v.Validate(f, data, Options{})
			if !findings.HasErrors() {
				t.Fatalf("no error found; findings: %v", findings)
			}
			for _, w := range wants {
				if !hasFinding(findings, w) {
					t.Errorf("no error at line %d, pointer %q, containing %q; got:\n%s", w.line, w.pointer, w.fragment, formatFindings(findings))
				}
			}
		})
	}
}

func hasFinding(fs Findings, w expectation) bool {
	for _, f := range fs {
		if f.Severity == SeverityError && f.Line == w.line && f.Pointer == w.pointer && strings.Contains(f.Message, w.fragment) {
			return true
		}
	}
	return false
}

func formatFindings(fs Findings) string {
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "  %s\n", f)
	}
	return b.String()
}

func newTestValidator(t testing.TB) *Validator {
	t.Helper()
	v, err := NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	return v
}
