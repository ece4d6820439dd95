package yamlfast

import (
	"fmt"
	"testing"
)

// FuzzRead holds Read to yaml.v3 on arbitrary input: it declines, or yaml.v3 reads the same bytes
// without error into the same nodes. (fn's FuzzReadYAMLFast does the same from fn's cases and test
// data.)
//
//	go test ./pkg/krmfn/yamlfast -run '^$' -fuzz FuzzRead -fuzztime 60s
func FuzzRead(f *testing.F) {
	for _, seed := range []string{
		"# licence\n\n# head\na: 1 # line\nb:\n  # c\n  - x\n  - y: [1, 'two', \"3\"]\n",
		"---\na: |\n  text\n---\n- 1\n# h\n- 2\n",
		"a:\n  x: 1\n  # foot\nb: 2\n",
		"a: &x 1\nb: *x\n",
		"items:\n- # h\n  # i\n  a: 1\n- b: 2\n",
		"a: 1\n---\n# c\n",    // an empty document's comment, the document before's in yaml.v3
		"0: |\n 0\n---\n#000", // the same on the last line
		"... : 0",             // a document's end, not a key
		"0: 0 #0\n#\n",        // a foot below a line comment: the document's in yaml.v3
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var slab Slab
		got, _, ok := Read(data, Options{Budget: -1}, &slab)
		if !ok {
			return
		}
		want, err := ReadV3(data)
		if err != nil {
			t.Fatalf("read input yaml.v3 refuses (%v):\n%s", err, data)
		}
		if len(got) != len(want) {
			t.Fatalf("%d documents, yaml.v3 reads %d:\n%s", len(got), len(want), data)
		}
		for i := range want {
			if d := Diff(fmt.Sprintf("doc %d", i), want[i], got[i]); d != "" {
				t.Fatalf("differs from yaml.v3 at %s\ninput:\n%s", d, data)
			}
		}
	})
}
