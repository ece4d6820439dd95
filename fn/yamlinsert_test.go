package fn

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

func TestInsertScalar(t *testing.T) {
	t.Parallel()
	img := "registry.example.com/fns/set-namespace:v1@sha256:" + "ab"
	for _, tc := range []struct {
		name, src string
		path      []string
		want      string // "" for ErrNotEditable
	}{
		{"block step", "pipeline:\n  mutators:\n  - configPath: ns.yaml # the namespace\n    name: ns\n", []string{"pipeline", "mutators", "0"},
			"pipeline:\n  mutators:\n  - image: " + img + "\n    configPath: ns.yaml # the namespace\n    name: ns\n"},
		{"second step, comments around", "# head\npipeline:\n  mutators:\n  - image: a\n  # next\n  - configPath: b.yaml\n", []string{"pipeline", "mutators", "1"},
			"# head\npipeline:\n  mutators:\n  - image: a\n  # next\n  - image: " + img + "\n    configPath: b.yaml\n"},
		{"flow step", "pipeline:\n  mutators: [{configPath: ns.yaml}]\n", []string{"pipeline", "mutators", "0"},
			"pipeline:\n  mutators: [{image: " + img + ", configPath: ns.yaml}]\n"},
		{"unindented sequence, CRLF", "pipeline:\r\n  validators:\r\n  - name: v\r\n    configPath: v.yaml\r\n", []string{"pipeline", "validators", "0"},
			"pipeline:\r\n  validators:\r\n  - image: " + img + "\r\n    name: v\r\n    configPath: v.yaml\r\n"},
		{"key there already", "pipeline:\n  mutators:\n  - image: a\n", []string{"pipeline", "mutators", "0"}, ""},
		{"not a mapping", "pipeline:\n  mutators:\n  - a\n", []string{"pipeline", "mutators", "0"}, ""},
		{"no such step", "pipeline:\n  mutators: []\n", []string{"pipeline", "mutators", "0"}, ""},
		{"comment before the first key", "pipeline:\n  mutators:\n  -\n    # why\n    configPath: a.yaml\n", []string{"pipeline", "mutators", "0"}, ""},
	} {
		got, err := InsertScalar([]byte(tc.src), ScalarEdit{Path: tc.path, Value: img}, "image")
		if tc.want == "" {
			if !errors.Is(err, ErrNotEditable) {
				t.Errorf("%s: %q, %v; want ErrNotEditable", tc.name, got, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if diff := cmp.Diff(tc.want, string(got)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}

// FuzzInsertScalar: whatever the file, an insertion either fails or gives a file that reads, with
// the new entry first in the mapping at the root (InsertScalar proves the rest unchanged).
func FuzzInsertScalar(f *testing.F) {
	for _, seed := range []struct{ src, value string }{
		{"configPath: a.yaml\n", "registry.example.com/x:1@sha256:" + strings.Repeat("0", 64)},
		{"{configPath: a.yaml}\n", "a, b"},
		{"a: b # c\r\nd: e\r\n", "- c"},
		{"  a: b\n  c: |\n    x\n", "#"},
		{"? a\n: b\n", "\x00"},
	} {
		f.Add([]byte(seed.src), seed.value)
	}
	f.Fuzz(func(t *testing.T, src []byte, value string) {
		out, err := InsertScalar(src, ScalarEdit{Value: value}, "image")
		if err != nil {
			return
		}
		after, err := decodeYAMLv3(out)
		if err != nil {
			t.Fatalf("the edited file does not read: %v\n%s", err, out)
		}
		m := after[0].Content[0]
		if m.Kind != yaml.MappingNode || len(m.Content) < 2 || m.Content[0].Value != "image" || m.Content[1].Value != value {
			t.Fatalf("no image: %q first\n%s", value, out)
		}
	})
}
