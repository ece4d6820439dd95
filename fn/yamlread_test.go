package fn

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/fn/fntest"
	"github.com/krm-catalog/krm-catalog/pkg/krmfn/yamlfast"
)

// nodeDiff says where two node trees differ in anything yaml.v3 records, or "" (yamlfast.Diff).
func nodeDiff(path string, a, b *yaml.Node) string { return yamlfast.Diff(path, a, b) }

// checkFastRead holds readYAMLFast to yaml.v3 on data: what it reads is what yaml.v3 reads, and it
// reads nothing yaml.v3 refuses. It returns whether the fast reader took the input.
func checkFastRead(t *testing.T, name string, data []byte) bool {
	t.Helper()
	got, ok := readYAMLFast(data)
	want, err := decodeYAMLv3(data)
	if !ok {
		return false
	}
	if err != nil {
		t.Fatalf("%s: the fast reader took input yaml.v3 refuses (%v):\n%s", name, err, data)
	}
	if len(got) != len(want) {
		t.Fatalf("%s: %d documents, yaml.v3 reads %d:\n%s", name, len(got), len(want), data)
	}
	for i := range want {
		if d := nodeDiff(fmt.Sprintf("doc %d", i), want[i], got[i]); d != "" {
			t.Fatalf("%s: the fast reader differs from yaml.v3 at %s\ninput:\n%s", name, d, data)
		}
	}
	return true
}

var readCases = []struct {
	name string
	doc  string
	fast bool
}{
	{"comments at line ends", "a: b # c1  \nd: # c2\n  e: [x, y] # c3\nf:\n- g # c4\n- h: i # c5\n  j: k\n", true},
	{"literal blocks", "l: |\n  line1\n\n  line2\nm: |-\n  x\nk: |+\n  y\n\n\nz: 1\n", true},
	{"literal block more indented lines", "l: |\n  a\n    b\n  c\nn: 2\n", true},
	{"literal block in a sequence", "s:\n- |\n  a\n- b\n", true},
	{"literal with indentation indicator", "l: |2\n   a\n", false},
	{"literal with comment", "l: | # c\n  a\n", false},
	{"folded", "l: >\n  a\n", false},
	{"documents", "---\na: 1\n---\n\nb: 2\n", true},
	{"empty documents", "---\n---\na: 1\n---\n", true},
	{"leading blank lines", "\n\na: 1\n", true},
	{"no final line break", "a: 1", true},
	{"sequence at the root", "- a\n- b: c\n  d: [1, {e: f}]\n", true},
	{"indentless sequence then key", "a:\n- 1\n- 2\nb: 3\n", true},
	{"nested sequences in mappings", "a:\n  - b: 1\n    c:\n    - x\n    - y\n  - d\ne: f\n", true},
	{"quoted", "a: \"x \\\" y \\\\ z\"\nb: 'it''s'\nc: \"\"\nd: ''\n", true},
	{"quoted with other escapes", "a: \"x\\ny\"\n", false},
	{"scalars", "a: 1\nb: 1.5\nc: true\nd: null\ne: ~\nf: 0x1F\ng: 2001-12-14\nh: -1\ni: --port=8080\nj: a#b\nk: x[0]\nl: .5\nm: yes\n", true},
	{"head comment", "# header\na: 1\n", true},
	{"head comments", "a: 1 # l\n# h1\n# h2  \nb:\n  # h3\n  c: 2\n\n  # h4\n  d: 3\n# h5\ne: 4\n", true},
	{"head comments in sequences", "s:\n# h1\n- a: 1\n  # h2\n  b: 2\n# h3\n- x\n- |\n  l\n# h4\nt:\n  - 1\n# h5\nu: 2\n", true},
	{"head comment of the root sequence", "# h\n- a\n- b\n", true},
	{"document head comment", "# licence\n\n# h\na: 1\n", true},
	{"document head comment alone", "\n# licence\n# more\n\n\na: 1\n", true},
	{"document head comment blocks", "# a\n\n# b\n\na: 1\n", false},
	{"comment after the document marker", "---\n# h\n\na: 1\n", false},
	{"head comment after the document marker", "---\n# h\na: 1\n---\n# i\nb: 2\n", true},
	{"comment before the document marker", "a: 1\n# h\n---\nb: 2\n", false},
	{"foot comment", "a: 1\n# f\n", true},
	{"foot comments of the key and the document", "a:\n  b: [1]\n# f\n# g\n\n# h\n", true},
	{"foot comment of the document", "a: 1\n\n# f\n", true},
	{"foot comment of the document, then blank lines", "a: 1\n\n# f\n\n", false},
	{"foot comment, then blank lines", "a: 1\n# f\n\n\n", true},
	{"foot comment after a literal block", "a: |\n  x\n# f\n", false},
	{"foot comment after an indentless sequence", "a:\n- x\n# f\n", false},
	{"foot comment of a root sequence", "- a\n# f\n", false},
	{"foot comment indented", "a:\n  b: 1\n  # f\n", false},
	{"foot comment blocks", "a: 1\n# f\n\n# g\n\n# h\n", false},
	{"foot comment on the last line", "a: 1\n# f", false},
	{"foot comment before a blank line", "a: 1\n# f\n\nb: 2\n", false},
	{"foot comment indented", "a:\n  x: 1\n  # f\nb: 2\n", false},
	{"comment indented otherwise", "a:\n# h\n  x: 1\n", false},
	{"comment block indented unevenly", "a: 1\n# h\n  # i\nb: 2\n", false},
	{"comment after a literal block", "a: |\n  x\n# h\nb: 1\n", true},
	{"comment line in a literal block", "a: |\n  x\n  # not a comment\nb: 1\n", true},
	{"anchor", "a: &x 1\nb: *x\n", false},
	{"tag", "a: !!str 1\n", false},
	{"merge key", "a: {x: 1}\n<<: {y: 2}\n", false},
	{"empty value", "a:\nb: 1\n", false},
	{"multi-line plain", "a: b\n  c\n", false},
	{"tab", "a:\tb\n", false},
	{"carriage return", "a: b\r\n", false},
	{"non-ASCII", "a: é\n", false},
	{"value with colon", "a: b: c\n", false},
	{"flow over lines", "a: [b,\n  c]\n", false},
	{"bad indentation", "a:\n  b: 1\n c: 2\n", false},
	{"key after sequence in item", "- a: 1\n  b:\n  - x\n  c: 2\n- d\n", true},
	{"unterminated flow", "a: [b\n", false},
	{"unterminated quote", "a: \"b\n", false},
	{"document end", "a: 1\n...\n", false},
	{"indented root", "  a: 1\n", false},
	{"sequence entry with spaces", "-   a: 1\n    b: 2\n-  c\n", true},
	{"trailing spaces", "a: b   \nc:   d\n", true},
	{"key with spaces", "a b: c\n", true},
	{"comment after an entry's dash", "items:\n- # h1\n  a: 1\n  b:\n  - # h2\n    # h3\n    c: 2\n- # h4\n  d: 3\n", true},
	{"comment after an entry's dash in a root sequence", "-   # h\n  a: 1\n", true},
	{"comment after an entry's dash, then a blank line", "s:\n- # h\n\n  a: 1\n", false},
	{"comment after an entry's dash, then a line of spaces", "s:\n- # h\n \n  a: 1\n", false},
	{"comment after an entry's dash, then comment lines and a line of spaces", "s:\n- # h\n  # i\n   \n  a: 1\n", false},
	{"comment after an entry's dash, then lines at another column", "s:\n- # h\n    # i\n  a: 1\n", false},
	{"comment after an entry's dash, entry deeper", "s:\n- # h\n    a: 1\n", false},
	{"comment after an entry's dash, then a scalar", "s:\n- # h\n  a\n", false},
	{"comment after an entry's dash, then a sequence", "s:\n- # h\n  - a\n", false},
	{"comment after an entry's dash and above it", "s:\n# g\n- # h\n  a: 1\n", false},
	{"comment after an entry's dash with trailing spaces", "s:\n- # h  \n  a: 1\n", false},
	{"comment after an entry's dash on the last line", "s:\n- # h", false},
}

func TestReadYAMLFast(t *testing.T) {
	t.Parallel()
	for _, c := range readCases {
		if got := checkFastRead(t, c.name, []byte(c.doc)); got != c.fast {
			t.Errorf("%s: fast reader took it: %v, want %v", c.name, got, c.fast)
		}
	}
}

// TestReadYAMLFastOnTestdata holds the fast reader to yaml.v3 on every YAML file of the repository's
// test data (the real functions' examples among them) and on the generated Deployments, and says
// how many it took.
func TestReadYAMLFastOnTestdata(t *testing.T) {
	t.Parallel()
	if !checkFastRead(t, "Deployments", fntest.Deployments(50, "ns")) {
		t.Error("the fast reader did not take the generated Deployments")
	}
	files, took := 0, 0
	eachTestdataYAML(t, func(path string, data []byte) {
		files++
		if checkFastRead(t, path, data) {
			took++
		}
	})
	t.Logf("the fast reader took %d of %d test data files", took, files)
}

// eachTestdataYAML calls fn with every YAML file of the repository's test data (the real kpt
// functions' examples among them).
func eachTestdataYAML(t *testing.T, fn func(path string, data []byte)) {
	t.Helper()
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.Contains(path, "testdata") || (!strings.HasSuffix(path, ".yaml") && !strings.HasSuffix(path, ".yml")) {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fn(path, data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// FuzzReadYAMLFast holds the fast reader to yaml.v3 on arbitrary input: whatever it reads, it
// reads as yaml.v3 does, and it reads nothing yaml.v3 refuses.
//
//	go test ./fn -run '^$' -fuzz FuzzReadYAMLFast -fuzztime 60s
func FuzzReadYAMLFast(f *testing.F) {
	for _, c := range readCases {
		f.Add([]byte(c.doc))
	}
	f.Add([]byte(commented))
	f.Add([]byte(sampleList))
	f.Add([]byte(twoDocs))
	f.Add(fntest.Deployments(2, "ns"))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkFastRead(t, "fuzz", data)
	})
}

// TestReadYAMLFastOnPeers holds the fast reader to yaml.v3 on the YAML files of kyaml's module
// (its test data) and of the directories KRM_CATALOG_PEER_YAML lists (colon-separated: a checkout
// of kptdev/krm-functions-catalog, whose examples are what the public functions read and write),
// and says how many it took. Without either it skips.
func TestReadYAMLFastOnPeers(t *testing.T) {
	t.Parallel()
	var dirs []string
	if out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/kustomize/kyaml").Output(); err == nil {
		if d := strings.TrimSpace(string(out)); d != "" {
			dirs = append(dirs, d)
		}
	}
	if env := os.Getenv("KRM_CATALOG_PEER_YAML"); env != "" {
		dirs = append(dirs, filepath.SplitList(env)...)
	}
	if len(dirs) == 0 {
		t.Skip("no peer YAML: set KRM_CATALOG_PEER_YAML to a checkout of kptdev/krm-functions-catalog")
	}
	for _, dir := range dirs {
		files, took := 0, 0
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == ".git" {
				return filepath.SkipDir
			}
			if d.IsDir() || (!strings.HasSuffix(path, ".yaml") && !strings.HasSuffix(path, ".yml")) {
				return nil
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			files++
			if checkFastRead(t, path, data) {
				took++
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: the fast reader took %d of %d YAML files", dir, took, files)
	}
}
