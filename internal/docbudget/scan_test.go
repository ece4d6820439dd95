package docbudget

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// parsed counts the nodes yaml.v3 builds for a stream (documents included, aliases one each),
// and the deepest nesting of collections; ok is false when it refuses the stream.
func parsed(data []byte) (nodes, depth int, ok bool) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return nodes, depth, true
		}
		if err != nil {
			return nodes, depth, false
		}
		var walk func(n *yaml.Node, d int)
		walk = func(n *yaml.Node, d int) {
			nodes++
			if n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode {
				d++
				depth = max(depth, d)
			}
			for _, c := range n.Content {
				walk(c, d)
			}
		}
		walk(&doc, 0)
	}
}

// scanCases are constructs where a scanner that only looked at lines or brackets would miscount.
var scanCases = []string{
	"a: b\n",
	"a:\n  b: c\n  d: [1, 2, {e: f}]\n",
	"key:\n- a\n- b\nother: c\n",
	"- - - a\n  - b\n- c: d\n  e: f\n",
	"- a: b\n  c:\n    - d\n",
	"a:\nb:\n",
	"a: &x\nb: *x\n",
	"a: !!str\nb: !t [1]\n",
	"? a\n: b\n? c\n",
	"{a, b: , : c, :, ? d}\n",
	"[a: b, : c, d:, :, ? e]\n",
	"[[0],[0],[0]]\n",
	`{"a":1,"b":[true,null,"x"],"c":{"d":"e\/f"}}`,
	"a: 'it''s: [1, 2]'\nb: \"x\\\" [1, 2]\"\n",
	"a: it's [1, 2]\nb: c\n",
	"a: |\n  [1, 2]\n  - x: y\nb: >-\n    folded: [3]\n\n    more\nc: d\n",
	"- |\n  text: [1]\n- b\n",
	"a:\n  b: |\n\n      deep\n  c: d\n",
	"top: |2\n    indented: [1]\n  x\n",
	"--- |\n  [1, 2]\n--- >\n a\n...\n--- [1]\n",
	"a: one\n  two: [1, 2]\n",
	"a: one\n  'two'\nb: [1]\n",
	"[a\n b, c,\n d]\n",
	"{\"a\nb\": 1, c\n d: 2}\n",
	"a: b # c: [1, 2]\n# [3, 4]\nd: e#f\n",
	"[a,#b, c]\nd, e]\n",
	"a: \"multi\n  line\" \nb: [1]\n",
	"- a\n-\n- c\n",
	"a:\n  # comment\n  b: c\n",
	"%YAML 1.2\n---\na: b\n",
	"\ufeffa: b\n",
	"a: b\r\nc: [1,\r\n 2]\r\n",
	"a: b\u2028c: d\n",
	"a:\tb\nc: [\t1]\n",
	"? - a\n  - b\n: - c\n",
	"a: *x\n",
	"[&a 1, *a, &b, *b: c]\n",
	"a: {b: [c, {d: e}], f: g}\n",
	"- - - - -\n",
	"- [a, b]: c\n",
	"[a]: b\n{c: d}: e\n",
	"a: -1\nb: -\nc: - d\n",
	"a: ?x\nb: :y\n",
	"\"a\":1\n",
	"'a' : b\n",
	"a: b\n...\n---\nc: d\n",
}

func TestScanBoundsYAMLv3(t *testing.T) {
	t.Parallel()
	for _, in := range scanCases {
		nodes, depth, ok := parsed([]byte(in))
		got := Scan([]byte(in))
		if got.Nodes < nodes || got.Depth < depth {
			t.Errorf("Scan(%q) = %d nodes, depth %d; yaml.v3 (ok %v) builds %d, depth %d", in, got.Nodes, got.Depth, ok, nodes, depth)
		}
	}
}

// TestScanCorpus holds Scan to yaml.v3 on every YAML and JSON file of the repository: never
// below, and close above (the slack Meter.Scan allows), so that a document under the limit is
// not refused unparsed.
func TestScanCorpus(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	n := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		ext := filepath.Ext(path)
		if d.IsDir() || ext != ".yaml" && ext != ".yml" && ext != ".json" {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil || len(data) > 4<<20 {
			return err
		}
		nodes, _, ok := parsed(data)
		if !ok {
			return nil
		}
		n++
		got := Scan(data)
		if got.Nodes < nodes {
			t.Errorf("%s: Scan counts %d nodes, yaml.v3 builds %d", path, got.Nodes, nodes)
		}
		if nodes > 50 && got.Nodes > nodes+nodes/scanSlack {
			t.Errorf("%s: Scan counts %d nodes, more than %d%% above the %d yaml.v3 builds", path, got.Nodes, 100/scanSlack, nodes)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 50 {
		t.Fatalf("only %d files read; the corpus was not found", n)
	}
}

func FuzzScan(f *testing.F) {
	for _, c := range scanCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4096 {
			return
		}
		got := Scan(data)
		nodes, depth, ok := parsed(data)
		if !ok {
			return
		}
		if got.Nodes < nodes || got.Depth < depth {
			t.Errorf("Scan(%q) = %d nodes, depth %d; yaml.v3 builds %d, depth %d", data, got.Nodes, got.Depth, nodes, depth)
		}
	})
}

func TestScanDense(t *testing.T) {
	t.Parallel()
	dense := "default: [" + strings.Repeat("[0],", 100_000) + "[0]]\n"
	got := Scan([]byte(dense))
	nodes, _, _ := parsed([]byte(dense))
	if got.Nodes < nodes || got.Nodes > nodes+10 {
		t.Errorf("Scan counts %d nodes of the dense document; yaml.v3 builds %d", got.Nodes, nodes)
	}
	deep := strings.Repeat("- ", 100_000) + "a\n"
	if d := Scan([]byte(deep)).Depth; d <= maxScanDepth {
		t.Errorf("Scan of 100,000 nested lists: depth %d", d)
	}
}
