package fn

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

const editKptfile = `# the app's package
apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: app   # named after the team

pipeline:
    mutators:
      - image: registry.example.com/fns/set-labels:1.0.0 # labels first
        configPath: labels.yaml

      - name: ns
        image: "registry.example.com/fns/set-namespace:1.0.0"
        configMap: {namespace: prod, extra: 'x'}
    validators:
    - {image: 'registry.example.com/fns/require-limits:1.0.0', configPath: limits.yaml}
`

const editAnnotated = `apiVersion: fn.example.com/v1
kind: SetLabels
metadata:
  name: labels
  annotations:
    # runs as a container
    config.kubernetes.io/function: |
      container:
        # pinned
        image: registry.example.com/fns/set-labels:1.0.0
        network: false
labels:
  team: payments
---
apiVersion: fn.example.com/v1
kind: SetLabels
metadata:
  name: more
  annotations:
    config.kubernetes.io/function: "container: {image: registry.example.com/fns/set-labels:1.0.0}"
labels: {tier: web}
`

func TestEditScalars(t *testing.T) {
	t.Parallel()
	pinned := "registry.example.com/fns/set-labels:1.1.0@sha256:" + strings.Repeat("ab", 32)
	tests := []struct {
		name  string
		src   string
		edits []ScalarEdit
		want  string // the whole output; "" when want is an error
		err   string
	}{
		{
			name:  "a plain value in a block sequence indented wide, its comment kept",
			src:   editKptfile,
			edits: []ScalarEdit{{Path: []string{"pipeline", "mutators", "0", "image"}, Value: pinned}},
			want:  strings.Replace(editKptfile, "registry.example.com/fns/set-labels:1.0.0 #", pinned+" #", 1),
		},
		{
			name: "a double-quoted value and a single-quoted one in a flow mapping, together",
			src:  editKptfile,
			edits: []ScalarEdit{
				{Path: []string{"pipeline", "mutators", "1", "image"}, Value: "registry.example.com/fns/set-namespace:1.1.0"},
				{Path: []string{"pipeline", "validators", "0", "image"}, Value: "registry.example.com/fns/require-limits:2.0.0"},
			},
			want: strings.NewReplacer(`"registry.example.com/fns/set-namespace:1.0.0"`, `"registry.example.com/fns/set-namespace:1.1.0"`,
				`'registry.example.com/fns/require-limits:1.0.0'`, `'registry.example.com/fns/require-limits:2.0.0'`).Replace(editKptfile),
		},
		{
			name:  "a plain value in a flow mapping that would need quotes there",
			src:   editKptfile,
			edits: []ScalarEdit{{Path: []string{"pipeline", "mutators", "1", "configMap", "namespace"}, Value: "a,b"}},
			want:  strings.Replace(editKptfile, "{namespace: prod,", `{namespace: "a,b",`, 1),
		},
		{
			name:  "a value that would read as a number is quoted",
			src:   "a: x\nb: y # c\n",
			edits: []ScalarEdit{{Path: []string{"b"}, Value: "1.0"}},
			want:  "a: x\nb: \"1.0\" # c\n",
		},
		{
			name:  "a YAML 1.1 boolean is quoted",
			src:   "a: x\n",
			edits: []ScalarEdit{{Path: []string{"a"}, Value: "on"}},
			want:  "a: \"on\"\n",
		},
		{
			name:  "inside a literal block annotation, one line changed",
			src:   editAnnotated,
			edits: []ScalarEdit{{Path: []string{"metadata", "annotations", "config.kubernetes.io/function"}, Within: &ScalarEdit{Path: []string{"container", "image"}, Value: pinned}}},
			want:  strings.Replace(editAnnotated, "        image: registry.example.com/fns/set-labels:1.0.0\n", "        image: "+pinned+"\n", 1),
		},
		{
			name:  "inside a double-quoted annotation of the second document",
			src:   editAnnotated,
			edits: []ScalarEdit{{Doc: 1, Path: []string{"metadata", "annotations", "config.kubernetes.io/function"}, Within: &ScalarEdit{Path: []string{"container", "image"}, Value: pinned}}},
			want:  strings.Replace(editAnnotated, `"container: {image: registry.example.com/fns/set-labels:1.0.0}"`, `"container: {image: `+pinned+`}"`, 1),
		},
		{
			name:  "an inline resource in a list, and the annotation inside it",
			src:   "transformers:\n- |\n  apiVersion: fn.example.com/v1\n  kind: SetLabels\n  metadata:\n    name: x\n    annotations:\n      config.kubernetes.io/function: |\n        container:\n          image: a:1\n",
			edits: []ScalarEdit{{Path: []string{"transformers", "0"}, Within: &ScalarEdit{Path: []string{"metadata", "annotations", "config.kubernetes.io/function"}, Within: &ScalarEdit{Path: []string{"container", "image"}, Value: "a:2"}}}},
			want:  "transformers:\n- |\n  apiVersion: fn.example.com/v1\n  kind: SetLabels\n  metadata:\n    name: x\n    annotations:\n      config.kubernetes.io/function: |\n        container:\n          image: a:2\n",
		},
		{
			name:  "CRLF line endings and a wide character before the value",
			src:   "é: x\r\nimage: a:1 # c\r\n",
			edits: []ScalarEdit{{Path: []string{"image"}, Value: "a:2"}},
			want:  "é: x\r\nimage: a:2 # c\r\n",
		},
		{
			name:  "a non-ASCII key on the same line",
			src:   "m: {é: a:1, b: c}\n",
			edits: []ScalarEdit{{Path: []string{"m", "é"}, Value: "a:2"}},
			want:  "m: {é: a:2, b: c}\n",
		},
		{
			name:  "the value it has already: nothing changes",
			src:   editKptfile,
			edits: []ScalarEdit{{Path: []string{"pipeline", "mutators", "0", "image"}, Value: "registry.example.com/fns/set-labels:1.0.0"}},
			want:  editKptfile,
		},
		{
			name:  "documents are counted without empty ones",
			src:   "# only a comment\n---\na: 1x\n---\n---\na: 2x\n",
			edits: []ScalarEdit{{Doc: 1, Path: []string{"a"}, Value: "3x"}},
			want:  "# only a comment\n---\na: 1x\n---\n---\na: 3x\n",
		},
		{name: "a folded block", src: "a: >\n  x\n  y\n", edits: []ScalarEdit{{Path: []string{"a"}, Value: "z"}}, err: "folded"},
		{name: "a plain scalar over several lines", src: "a: x\n  y\n", edits: []ScalarEdit{{Path: []string{"a"}, Value: "z"}}, err: "several lines"},
		{name: "an anchored scalar", src: "a: &x v\nb: *x\n", edits: []ScalarEdit{{Path: []string{"a"}, Value: "z"}}, err: "anchor"},
		{name: "a tagged scalar", src: "a: !!str v\n", edits: []ScalarEdit{{Path: []string{"a"}, Value: "z"}}, err: "anchor or a tag"},
		{name: "a number", src: "a: 1\n", edits: []ScalarEdit{{Path: []string{"a"}, Value: "z"}}, err: "not a string"},
		{name: "a mapping", src: "a: {b: c}\n", edits: []ScalarEdit{{Path: []string{"a"}, Value: "z"}}, err: "not a scalar"},
		{name: "nothing there", src: "a: b\n", edits: []ScalarEdit{{Path: []string{"x", "y"}, Value: "z"}}, err: "nothing at x"},
		{name: "no such document", src: "a: b\n", edits: []ScalarEdit{{Doc: 1, Path: []string{"a"}, Value: "z"}}, err: "the stream has 1"},
		{name: "two values for one scalar", src: "a: b\n", edits: []ScalarEdit{{Path: []string{"a"}, Value: "y"}, {Path: []string{"a"}, Value: "z"}}, err: "two values"},
		{name: "not YAML", src: "a: [\n", edits: []ScalarEdit{{Path: []string{"a"}, Value: "z"}}, err: "did not find"},
		{
			name:  "a literal block whose new line would end it",
			src:   "a: |\n  x: 1\n  y: 2\nb: c\n",
			edits: []ScalarEdit{{Path: []string{"a"}, Value: "x: 1\n\n\n"}},
			err:   "how it ends",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := EditScalars([]byte(tc.src), tc.edits...)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one saying %q\n%s", err, tc.err, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
			// a second time changes nothing
			again, err := EditScalars(got, tc.edits...)
			if err != nil || string(again) != string(got) {
				t.Errorf("the edit made again: %v\n%s", err, again)
			}
		})
	}
}

func TestEditScalarsRefusesWhatWouldChangeMore(t *testing.T) {
	t.Parallel()
	// a literal block whose first line starts with spaces has its indentation read from it: a new
	// first line with more of them would change what the whole block says
	_, err := EditScalars([]byte("a: |\n  x\n  y\n"), ScalarEdit{Path: []string{"a"}, Value: "  x\ny\n"})
	if !errors.Is(err, ErrNotEditable) {
		t.Fatalf("error %v, want ErrNotEditable", err)
	}
}

// FuzzEditScalars edits the first string scalar of arbitrary YAML: it must never panic, and an edit
// it makes must read back as the document it was with that value, whatever the value.
//
//	go test ./fn -run '^$' -fuzz FuzzEditScalars -fuzztime 30s
func FuzzEditScalars(f *testing.F) {
	for _, seed := range []struct{ src, value string }{
		{editKptfile, "registry.example.com/x:1@sha256:" + strings.Repeat("0", 64)},
		{editAnnotated, "a: b"},
		{"a: |\n  x\n  y\n", "x\nz\n"},
		{"a: 'it''s'\n", "it's \"q\""},
		{"a: [b, c]\n", "d, e"},
		{"a: \"x\\ny\"\n", "\x00\t"},
		{"- a\n- b # c\n", "#"},
		{"a: b\r\n", "- c"},
	} {
		f.Add([]byte(seed.src), seed.value)
	}
	f.Fuzz(func(t *testing.T, src []byte, value string) {
		docs, err := decodeYAMLv3(src)
		if err != nil || len(docs) == 0 {
			return
		}
		path, ok := firstString(docs[0].Content[0], nil, 0)
		if !ok {
			return
		}
		out, err := EditScalars(src, ScalarEdit{Path: path, Value: value})
		if err != nil {
			return
		}
		after, err := decodeYAMLv3(out)
		if err != nil {
			t.Fatalf("the edited file does not read: %v\n%s", err, out)
		}
		n, _, err := locate(after, ScalarEdit{Path: path})
		if err != nil {
			t.Fatalf("the edited scalar is gone: %v\n%s", err, out)
		}
		if n.Value != value {
			t.Fatalf("value %q, want %q\n%s", n.Value, value, out)
		}
	})
}

// firstString is the path of the first string scalar of n that an edit could name.
func firstString(n *yaml.Node, path []string, depth int) ([]string, bool) {
	if depth > 20 {
		return nil, false
	}
	switch n.Kind {
	case yaml.ScalarNode:
		return path, n.ShortTag() == "!!str" && n.Anchor == "" && n.Style&yaml.TaggedStyle == 0 && len(path) > 0
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if k := n.Content[i]; k.Kind == yaml.ScalarNode {
				if p, ok := firstString(n.Content[i+1], append(path, k.Value), depth+1); ok {
					return p, true
				}
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			if p, ok := firstString(c, append(path, strconv.Itoa(i)), depth+1); ok {
				return p, true
			}
		}
	}
	return nil, false
}
