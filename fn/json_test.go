package fn

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

func TestDecodeJSONNodeMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in string
		// yamlLossy: YAML reads the value back differently (an integer beyond 64 bits)
		yamlLossy bool
	}{
		{"object order kept", `{"z":1,"a":{"y":[1,2.5,-3e2],"b":true},"m":null}`, false},
		{"escapes", `{"s":"a\"b\\c\/d\n\t\u00e9\ud83d\ude00"}`, false},
		{"lone surrogate", `{"s":"x\ud800y"}`, false},
		{"empty", `{"a":{},"b":[],"c":""}`, false},
		{"numbers", `[0,-0,1.0,1e10,12345678901234567890,-1.5E-3]`, true},
		{"strings that look typed", `{"a":"true","b":"1","c":"null","d":"0x10","e":"~","f":"- x","g":"a: b"}`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			n, err := DecodeJSONNode([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			// JSON -> node -> JSON must mean what encoding/json reads from the input
			out, err := AppendJSON(nil, n)
			if err != nil {
				t.Fatal(err)
			}
			var want, got any
			if err := json.Unmarshal([]byte(tc.in), &want); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("%s: %v", out, err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("JSON round trip (-want +got):\n%s", diff)
			}
			// and node -> YAML -> node must keep the values too (quoting of typed-looking strings)
			y, err := EncodeYAML(n)
			if err != nil {
				t.Fatal(err)
			}
			var fromYAML any
			if err := yaml.Unmarshal(y, &fromYAML); err != nil {
				t.Fatalf("%s: %v", y, err)
			}
			b, _ := json.Marshal(jsonable(fromYAML))
			var viaYAML any
			_ = json.Unmarshal(b, &viaYAML)
			if diff := cmp.Diff(want, viaYAML); diff != "" && !tc.yamlLossy {
				t.Errorf("YAML round trip (-want +got):\n%s\n%s", diff, y)
			}
		})
	}
}

func TestDecodeJSONNodeKeepsKeyOrder(t *testing.T) {
	t.Parallel()
	n, err := DecodeJSONNode([]byte(`{"zeta":1,"alpha":2,"mid":3}`))
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for i := 0; i < len(n.Content); i += 2 {
		keys = append(keys, n.Content[i].Value)
	}
	if diff := cmp.Diff([]string{"zeta", "alpha", "mid"}, keys); diff != "" {
		t.Error(diff)
	}
}

func TestDecodeJSONNodeErrors(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		``, `{`, `{"a"}`, `{"a":}`, `{"a":1,}`, `[1,]`, `{"a":1} x`, `tru`, `"\x"`, "\"a\x01\"", `01`, `1.`, `1e`, `-`,
		`{a:1}`, `[` + strings.Repeat("[", maxJSONDepth+5),
	} {
		if _, err := DecodeJSONNode([]byte(in)); err == nil {
			t.Errorf("DecodeJSONNode(%q) = nil error, want one", in)
		}
		if json.Valid([]byte(in)) {
			t.Errorf("test input %q is valid JSON; the test is wrong", in)
		}
	}
}

func TestAppendJSONFromYAML(t *testing.T) {
	t.Parallel()
	tests := []struct{ yaml, want string }{
		{"a: 1\nb: 0x10\nc: 1.5\nd: .inf\ne: yes\nf: true\ng: ~\nh: '1'\n", `{"a":1,"b":16,"c":1.5,"d":".inf","e":"yes","f":true,"g":null,"h":"1"}`},
		{"base: &b {x: 1}\nuse: *b\n", `{"base":{"x":1},"use":{"x":1}}`},
		{"s: \"<&>\"\n", `{"s":"\u003c\u0026\u003e"}`},
		{"t: 2001-12-14\n", `{"t":"2001-12-14"}`},
	}
	for _, tc := range tests {
		var n yaml.Node
		if err := yaml.Unmarshal([]byte(tc.yaml), &n); err != nil {
			t.Fatal(err)
		}
		got, err := AppendJSON(nil, &n)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.want, string(got)); diff != "" {
			t.Errorf("%q (-want +got):\n%s", tc.yaml, diff)
		}
	}
}

func TestAppendJSONRefusesAliasBomb(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 12; i++ {
		b.WriteString("a" + strconv.Itoa(i) + ": &a" + strconv.Itoa(i) + " [")
		for j := 0; j < 10; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("*a" + strconv.Itoa(i-1))
		}
		b.WriteString("]\n")
	}
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(b.String()), &n); err != nil {
		t.Fatal(err)
	}
	if _, err := AppendJSON(nil, &n); err == nil || !strings.Contains(err.Error(), "aliases expand") {
		t.Fatalf("AppendJSON(alias bomb) error = %v, want the expansion limit", err)
	}
}
