package fn

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	y11 "go.yaml.in/yaml/v2"
	y12 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// yaml11LookAlikes are strings that a YAML 1.1 reader (kubectl's) or yaml.v3 reads as something
// other than a string when they are written plain.
var yaml11LookAlikes = []string{
	"y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO",
	"on", "On", "ON", "off", "Off", "OFF",
	"true", "True", "TRUE", "false", "False", "FALSE",
	"null", "Null", "NULL", "~",
	"12:30", "1:20:00", "-1:30", "+190:20:30.15", "1_0:30",
	"0x1F", "0o17", "0777", "1e3", ".5", "-.5", ".inf", "-.Inf", ".NaN", "1_000", "+1", "-0", "0b101",
}

// readAsStructure are strings that YAML 1.1 reads as something else written plain (a sequence, a
// document marker), and that yaml.v3's emitter never writes plain: it quotes them itself, single
// quotes where it can, as yaml.v3's Marshal (and so kpt's starlark function) writes them.
var readAsStructure = []string{"- x", "-", "---", "- a: b", "-  y"}

// notLookAlikes stay plain.
var notLookAlikes = []string{"yesterday", "onion", "nope", "Off-by-one", "12:60", "1.2.3", "v1", "a:b", "n/a", "truth", "0x", "12:30pm"}

func TestIsYAML11LookAlike(t *testing.T) {
	t.Parallel()
	for _, v := range append(append([]string{}, yaml11LookAlikes...), readAsStructure...) {
		if !IsYAML11LookAlike(v) {
			t.Errorf("IsYAML11LookAlike(%q) = false", v)
		}
	}
	for _, v := range notLookAlikes {
		if IsYAML11LookAlike(v) {
			t.Errorf("IsYAML11LookAlike(%q) = true", v)
		}
	}
}

// A string a function sets (here through the JSON wire: a !!str node without a style) is written as
// yaml.v3's Marshal writes the Go string, by both writers, and reads back as a string in YAML 1.1.
func TestNewLookAlikesAreQuotedAsYAMLv3Marshals(t *testing.T) {
	t.Parallel()
	for _, v := range append(append(append([]string{}, yaml11LookAlikes...), notLookAlikes...), readAsStructure...) {
		doc := `{"apiVersion":"v1","kind":"ConfigMap","data":{"k":` + jsonQuote(v) + `,` + jsonQuote(v) + `:"key"},"list":[` + jsonQuote(v) + `]}`
		n, err := DecodeJSONNode([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		QuoteLookAlikes(n)
		fast, ok := appendFast(nil, n, false)
		if !ok {
			t.Fatalf("%q: the fast writer refused the document", v)
		}
		slow := encodeV3(t, n, false)
		if diff := cmp.Diff(slow, string(fast)); diff != "" {
			t.Errorf("%q (-yaml.v3 +fast):\n%s", v, diff)
		}
		want, err := y12.Marshal(map[string]string{"k": v})
		if err != nil {
			t.Fatal(err)
		}
		wantValue := strings.TrimSuffix(strings.TrimPrefix(string(want), "k: "), "\n")
		if !strings.Contains(slow, "  k: "+wantValue+"\n") || !strings.Contains(slow, "- "+wantValue+"\n") {
			t.Errorf("%q: written as\n%s\nyaml.v3 Marshal writes the value as %s", v, slow, wantValue)
		}
		var back map[string]any
		if err := y11.Unmarshal(fast, &back); err != nil {
			t.Fatalf("%q: YAML 1.1 cannot read our output: %v\n%s", v, err, fast)
		}
		data, _ := back["data"].(map[any]any)
		if got, ok := data["k"].(string); !ok || got != v {
			t.Errorf("%q: YAML 1.1 reads the value back as %#v\n%s", v, data["k"], fast)
		}
		if got, ok := data[v].(string); !ok || got != "key" {
			t.Errorf("%q: YAML 1.1 does not read the key back as the string %q: %#v\n%s", v, v, data, fast)
		}
		list, _ := back["list"].([]any)
		if len(list) != 1 || list[0] != v {
			t.Errorf("%q: YAML 1.1 reads the list item back as %#v", v, list)
		}
	}
}

// Restore keeps the style of strings the function left unchanged (a file with `enabled: yes` keeps
// its bytes) and quotes the look-alikes it added or changed.
func TestRestoreQuotesOnlyNewLookAlikes(t *testing.T) {
	t.Parallel()
	in := parseDoc(t, "apiVersion: v1\nkind: ConfigMap\ndata:\n  kept: yes\n  changed: maybe\n  list: [on, x]\n")
	out, err := DecodeJSONNode([]byte(`{"apiVersion":"v1","kind":"ConfigMap","data":{"kept":"yes","changed":"no","added":"off","list":["on","off","12:30"]},"new":{"k":"Y"}}`))
	if err != nil {
		t.Fatal(err)
	}
	got, err := EncodeYAML(Restore(in, yaml.NewRNode(out)).Document())
	if err != nil {
		t.Fatal(err)
	}
	want := "apiVersion: v1\nkind: ConfigMap\ndata:\n  kept: yes\n  changed: \"no\"\n  list: [on, \"off\", \"12:30\"]\n  added: \"off\"\nnew:\n  k: \"Y\"\n"
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func parseDoc(t *testing.T, s string) *yaml.RNode {
	t.Helper()
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(s), &doc); err != nil {
		t.Fatal(err)
	}
	return yaml.NewRNode(&doc)
}

func jsonQuote(s string) string { return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"` }

// lookAlikeByParsing is IsYAML11LookAlike deciding every string the slow way, by a YAML 1.1 parse.
func lookAlikeByParsing(v string) bool {
	if v == "" || !strings.ContainsRune("+-0123456789yYnNtTfFoO~.<=", rune(v[0])) {
		return false
	}
	switch v {
	case "y", "Y", "yes", "Yes", "YES", "on", "On", "ON", "n", "N", "no", "No", "NO", "off", "Off", "OFF":
		return true
	}
	if strings.IndexByte(v, ':') >= 0 && base60Float().MatchString(v) {
		return true
	}
	return (&yaml.Node{Kind: yaml.ScalarNode, Value: v}).ShortTag() != "!!str" || yaml.IsValueNonString(v)
}

// FuzzLookAlikeShortcuts holds the shortcuts of IsYAML11LookAlike (plainWord, resolvedTag's) to
// the parses they spare.
//
//	go test ./fn -run '^$' -fuzz FuzzLookAlikeShortcuts -fuzztime 30s
func FuzzLookAlikeShortcuts(f *testing.F) {
	for _, v := range append(append([]string{"500m", "256Mi", "--port=8080", "-x", "-_1", "+e5", "TCP", "1_000m", "0xfz", "2001-12-14t2"}, yaml11LookAlikes...), notLookAlikes...) {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if got, want := IsYAML11LookAlike(v), lookAlikeByParsing(v); got != want {
			t.Errorf("IsYAML11LookAlike(%q) = %v, parsing says %v", v, got, want)
		}
	})
}
