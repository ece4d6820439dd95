package fn

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// setAnnotationCases are resources of every shape metadata and annotations come in.
var setAnnotationCases = []string{
	"apiVersion: v1\nkind: A\nmetadata:\n  name: a\n",
	"apiVersion: v1\nkind: A\nmetadata:\n  name: a\n  annotations:\n    x: y\n",
	"apiVersion: v1\nkind: A\nmetadata:\n  name: a\n  annotations:\n    k: \"old\" # why\n    x: y\n",
	"apiVersion: v1\nkind: A\nmetadata:\n  name: a\n  annotations:\n    k: |\n      old\n",
	"apiVersion: v1\nkind: A\nmetadata:\n  name: a\n  annotations: {}\n",
	"apiVersion: v1\nkind: A\nmetadata:\n  name: a\n  annotations:\n",
	"apiVersion: v1\nkind: A\nmetadata:\n  name: a\n  annotations: [x]\n",
	"apiVersion: v1\nkind: A\nmetadata:\n  name: a\n  annotations: {k: v}\n",
	"apiVersion: v1\nkind: A\nmetadata: {}\n",
	"apiVersion: v1\nkind: A\nmetadata:\n",
	"apiVersion: v1\nkind: A\nmetadata: x\n",
	"apiVersion: v1\nkind: A\n",
	"# head\napiVersion: v1\nkind: A\nmetadata: # line\n  name: a # name\n  annotations: # anns\n    k: v # k\n# foot\n",
	"- a\n- b\n",
	"just a scalar\n",
}

// setAnnotation does what kyaml's yaml.SetAnnotation does: the same nodes, the same errors.
func TestSetAnnotationAsKyaml(t *testing.T) {
	t.Parallel()
	for _, doc := range setAnnotationCases {
		for _, kv := range [][2]string{{"k", "v"}, {"k", "true"}, {"x", "multi\nline"}, {"k", ""}, {"k", "\xff\xfe"}, {"config.kubernetes.io/index", "0"}} {
			checkSetAnnotation(t, doc, kv[0], kv[1])
		}
	}
	for path, docs := range testdataDocuments(t) {
		for _, d := range docs {
			b, err := yaml.Marshal(d)
			if err != nil {
				continue
			}
			if !checkSetAnnotation(t, string(b), "internal.config.kubernetes.io/id", "krm-catalog-0") {
				t.Logf("in %s", path)
			}
		}
	}
}

// checkSetAnnotation compares setAnnotation with kyaml's on doc, and reports whether they agreed.
func checkSetAnnotation(t *testing.T, doc, key, value string) bool {
	t.Helper()
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(doc), &n); err != nil || n.Kind == 0 {
		return true
	}
	ours, theirs := yaml.NewRNode(yaml.CopyYNode(&n)), yaml.NewRNode(yaml.CopyYNode(&n))
	errOurs := setAnnotation(ours, key, value)
	errTheirs := theirs.PipeE(yaml.SetAnnotation(key, value))
	if (errOurs == nil) != (errTheirs == nil) {
		t.Errorf("%q, %s=%q: error %v, kyaml's %v", doc, key, value, errOurs, errTheirs)
		return false
	}
	if d := nodeDiff("doc", theirs.Document(), ours.Document()); d != "" {
		t.Errorf("%q, %s=%q: setAnnotation differs from kyaml's at %s", doc, key, value, d)
		return false
	}
	return true
}

// FuzzSetAnnotation holds setAnnotation to kyaml's yaml.SetAnnotation on any document.
//
//	go test ./fn -run '^$' -fuzz FuzzSetAnnotation -fuzztime 60s
func FuzzSetAnnotation(f *testing.F) {
	for _, doc := range setAnnotationCases {
		f.Add(doc, "k", "v")
	}
	f.Add(commented, "config.kubernetes.io/path", "a/b.yaml")
	f.Fuzz(func(t *testing.T, doc, key, value string) {
		checkSetAnnotation(t, doc, key, value)
	})
}

// checkWithoutAnnotations holds withoutAnnotations to a whole copy with the keys cleared, and
// requires the node it was given to be left as it was.
func checkWithoutAnnotations(t *testing.T, doc string, keys ...string) {
	t.Helper()
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(doc), &n); err != nil || n.Kind != yaml.DocumentNode || len(n.Content) != 1 {
		return
	}
	item := yaml.NewRNode(n.Content[0])
	before := item.MustString()
	want := item.Copy()
	errWant := clearAnnotations(want, keys...)
	got, err := withoutAnnotations(item, keys...)
	if (err == nil) != (errWant == nil) {
		t.Fatalf("%q without %q: error %v, a whole copy's %v", doc, keys, err, errWant)
	}
	if err != nil {
		return
	}
	if diff := cmp.Diff(want.MustString(), got.MustString()); diff != "" {
		t.Errorf("%q without %q (-whole copy +ours):\n%s", doc, keys, diff)
	}
	if after := item.MustString(); after != before {
		t.Errorf("%q without %q changed the item:\n%s", doc, keys, after)
	}
}

func TestWithoutAnnotations(t *testing.T) {
	t.Parallel()
	docs := append(setAnnotationCases,
		"apiVersion: v1\nkind: A\nmetadata:\n  name: a\n  annotations:\n    k: v\n",
		"apiVersion: v1\nkind: A\nmetadata:\n  annotations:\n    k: v\n    x: y\n  name: a\nspec: {a: 1}\n",
		"apiVersion: v1\nkind: A\nmetadata:\n  annotations: {k: v}\n",
		"apiVersion: v1\nkind: A\nmetadata:\n  annotations: 3\n",
		"apiVersion: v1\nkind: A\nmetadata: []\n",
		"- a\n- b\n",
	)
	for _, doc := range docs {
		for _, keys := range [][]string{nil, {"k"}, {"k", "x"}, {"absent"}} {
			checkWithoutAnnotations(t, doc, keys...)
		}
	}
}

func FuzzWithoutAnnotations(f *testing.F) {
	for _, doc := range setAnnotationCases {
		f.Add(doc, "k", "x")
	}
	f.Fuzz(func(t *testing.T, doc, k1, k2 string) {
		checkWithoutAnnotations(t, doc, k1, k2)
	})
}
