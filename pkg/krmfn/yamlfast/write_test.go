package yamlfast

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"
)

// FuzzAppend holds the writer to yaml.v3 on any document yaml.v3 reads: what Append or AppendFast
// writes, in either sequence style, is byte for byte what yaml.v3 writes (EncodeV3). (fn's
// FuzzFastYAML does the same from fn's cases, quoting YAML 1.1 look-alikes too.)
//
//	go test ./pkg/krmfn/yamlfast -run '^$' -fuzz FuzzAppend -fuzztime 60s
func FuzzAppend(f *testing.F) {
	for _, seed := range []string{
		"apiVersion: v1\nkind: ConfigMap # k\nmetadata:\n  name: a\ndata:\n  s: \"1\"\n  t: 'it''s'\n  e: \"\"\n",
		"items:\n# the first\n- a: 1\n  l: [x, {k: v}]\n- b:\n  - c\n  - d: |\n      text\n",
		"a:\n  x: 1\n  # foot\nb: 2\n",
		"a: &x {k: v}\nb: *x\n",
	} {
		f.Add(seed, false)
		f.Add(seed, true)
	}
	f.Fuzz(func(t *testing.T, doc string, wide bool) {
		var n yaml.Node
		if err := yaml.Unmarshal([]byte(doc), &n); err != nil {
			return
		}
		want, err := EncodeV3(&n, wide)
		if err != nil {
			return
		}
		for name, write := range map[string]func([]byte, *yaml.Node, bool) ([]byte, bool){"Append": Append, "AppendFast": AppendFast} {
			if got, ok := write(nil, &n, wide); ok {
				if diff := cmp.Diff(string(want), string(got)); diff != "" {
					t.Fatalf("%s (wide %v) (-yaml.v3 +fast):\n%s\ninput:\n%s", name, wide, diff, doc)
				}
			}
		}
	})
}

// The writer takes the shapes it is for, so that the fuzz target above compares something.
func TestAppendTakes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		doc        string
		fast, part bool
	}{
		{"apiVersion: v1\nkind: K # k\nl:\n- a\n- b: [1, x]\n", true, true},
		{"apiVersion: v1\nkind: K\ndata:\n  s: |\n    text\n", false, true},
		{"a: &x 1\nb: *x\n", false, false},
	} {
		var n yaml.Node
		if err := yaml.Unmarshal([]byte(tc.doc), &n); err != nil {
			t.Fatal(err)
		}
		if _, ok := AppendFast(nil, &n, false); ok != tc.fast {
			t.Errorf("AppendFast takes %v, want %v:\n%s", ok, tc.fast, tc.doc)
		}
		if _, ok := Append(nil, &n, false); ok != tc.part {
			t.Errorf("Append takes %v, want %v:\n%s", ok, tc.part, tc.doc)
		}
	}
}
