package krmfn

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDecodeResourceListRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, in, want string }{
		{"empty", "", "got 0 documents"},
		{"two documents", input + "---\n" + input, "got 2 documents"},
		{"another kind", "apiVersion: v1\nkind: List\n", `kind is "List"`},
		{"another apiVersion", "apiVersion: config.kubernetes.io/v2\nkind: ResourceList\n", `apiVersion "config.kubernetes.io/v2"`},
		{"items not a list", "kind: ResourceList\nitems: {a: b}\n", "items is not a list"},
		{"an item without kind", "kind: ResourceList\nitems:\n- apiVersion: v1\n", "item 0 has no kind"},
		{"an item not an object", "kind: ResourceList\nitems: [x]\n", "item 0 is not an object"},
		{"functionConfig not an object", "kind: ResourceList\nfunctionConfig: [x]\n", "functionConfig is not an object"},
		{"bad JSON", `{"kind": "ResourceList",}`, "invalid"},
		{"JSON with trailing data", `{"kind": "ResourceList"} {}`, "data after the JSON value"},
		{"JSON nested too deep", `{"kind":"ResourceList","x":` + strings.Repeat("[", 1100) + strings.Repeat("]", 1100) + "}", "nested more than"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := DecodeResourceList([]byte(tc.in))
			if !errors.Is(err, ErrInvalidResourceList) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want ErrInvalidResourceList saying %q", err, tc.want)
			}
		})
	}
	big := bytes.Repeat([]byte(" "), MaxResourceListBytes+1)
	if _, _, err := DecodeResourceList(big); !errors.Is(err, ErrInvalidResourceList) {
		t.Errorf("a list above the limit: %v", err)
	}
}

// TestJSONKeepsOrderAndTypes: a JSON list comes back as JSON with its members in their order and
// every scalar of the type it had; YAML scalars become the JSON types they resolve to.
func TestJSONKeepsOrderAndTypes(t *testing.T) {
	t.Parallel()
	const in = `{"apiVersion":"config.kubernetes.io/v1","kind":"ResourceList","items":[{"kind":"K","apiVersion":"v1","z":1,"a":"x \u003c y","n":null,"b":true,"f":1.5,"s":"1","l":[2,"2"]}]}` + "\n"
	rl, format, err := DecodeResourceList([]byte(in))
	if err != nil || format != JSON {
		t.Fatalf("%v, format %v", err, format)
	}
	out, err := rl.Encode(JSON)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(in, `\u003c`, "<", 1)
	if diff := cmp.Diff(want, string(out)); diff != "" {
		t.Errorf("JSON round trip (-want +got):\n%s", diff)
	}

	y, _, err := DecodeResourceList([]byte("kind: ResourceList\nitems:\n- apiVersion: v1\n  kind: K\n  n: ~\n  b: yes\n  i: 0x1F\n  inf: .inf\n  base: &b {x: 1}\n  m:\n    <<: *b\n    y: 2\n"))
	if err != nil {
		t.Fatal(err)
	}
	out, err = y.Encode(JSON)
	if err != nil {
		t.Fatal(err)
	}
	const wantY = `{"apiVersion":"config.kubernetes.io/v1","kind":"ResourceList","items":[{"apiVersion":"v1","kind":"K","n":null,"b":"yes","i":31,"inf":".inf","base":{"x":1},"m":{"x":1,"y":2}}]}` + "\n"
	if diff := cmp.Diff(wantY, string(out)); diff != "" {
		t.Errorf("YAML as JSON (-want +got):\n%s", diff)
	}
}

// FuzzDecodeResourceList: any input is a list or an error naming ErrInvalidResourceList; a list
// encodes in both formats, and each encoding reads back as a list of as many items.
func FuzzDecodeResourceList(f *testing.F) {
	f.Add([]byte(input))
	f.Add([]byte(`{"kind":"ResourceList","items":[{"apiVersion":"v1","kind":"K","a":[1,2.5,null,true]}]}`))
	f.Add([]byte("kind: ResourceList\nitems:\n- &a {apiVersion: v1, kind: K}\n- *a\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rl, _, err := DecodeResourceList(data)
		if err != nil {
			if !errors.Is(err, ErrInvalidResourceList) {
				t.Fatalf("error %v is not ErrInvalidResourceList", err)
			}
			return
		}
		for _, format := range []Format{YAML, JSON} {
			out, err := rl.Encode(format)
			if err != nil {
				continue // aliases that JSON cannot hold, for one
			}
			again, _, err := DecodeResourceList(out)
			if err != nil {
				t.Fatalf("format %d: the encoding does not read back: %v\n%s", format, err, out)
			}
			if len(again.Items) != len(rl.Items) {
				t.Fatalf("format %d: %d items, then %d", format, len(rl.Items), len(again.Items))
			}
		}
	})
}

func TestFormatOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in     string
		want   Format
		wantOK bool
	}{
		{"", YAML, true}, {"*/*", YAML, true}, {"text/yaml", YAML, true}, {"application/json", JSON, true},
		{"application/json; charset=utf-8", JSON, true}, {"text/plain", YAML, false}, {"???", YAML, false},
	}
	for _, tc := range tests {
		got, ok := formatOf(tc.in)
		if got != tc.want || ok != tc.wantOK {
			t.Errorf("formatOf(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.wantOK)
		}
	}
}

// FuzzEncodeByItem: a list written item by item is, byte for byte, the list written whole, for
// every list byItem lets through.
func FuzzEncodeByItem(f *testing.F) {
	f.Add([]byte(input))
	f.Add([]byte("kind: ResourceList\nitems:\n- apiVersion: v1\n  kind: ConfigMap # kind\n  data:\n    a: |\n      one\n\n      two\n    b: |+\n      kept\n\n  # foot of data\n- apiVersion: v1\n  kind: K\n  l:\n  - x\n  - {a: b}\n  # the end\nfunctionConfig:\n  kind: C\n"))
	f.Add([]byte("kind: ResourceList\nitems:\n- kind: A\n  s: \"a very long string that goes well past eighty columns, which an encoder could wrap somewhere along the way\"\n  ? a very long key that is longer than one hundred and twenty eight characters, which yaml.v3 writes as a complex key rather than a simple one, oh yes\n  : v\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rl, _, err := DecodeResourceList(data)
		if err != nil {
			return
		}
		n, err := rl.node()
		if err != nil || !byItem(n) {
			return
		}
		var whole, items bytes.Buffer
		if err := encodeYAML(&whole, n); err != nil {
			return
		}
		if err := encodeByItem(&items, n); err != nil {
			t.Fatalf("by item: %v, whole: ok", err)
		}
		if diff := cmp.Diff(whole.String(), items.String()); diff != "" {
			t.Fatalf("written by item (-whole +by item):\n%s", diff)
		}
	})
}

// The lists functions write are written item by item: plain resources, and resources with
// comments inside them; a list with an anchor is written whole.
func TestEncodeByItemTakes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		list string
		want bool
	}{
		{input, true},
		{"kind: ResourceList\nitems:\n- apiVersion: v1\n  kind: ConfigMap # kind\n  data:\n    a: b # c\n", true},
		{"kind: ResourceList\nitems:\n- apiVersion: v1\n  kind: K\n  a: &x 1\n  b: *x\n", false},
		{"kind: ResourceList\nitems: []\n", false},
	} {
		rl, _, err := DecodeResourceList([]byte(tc.list))
		if err != nil {
			t.Fatal(err)
		}
		n, err := rl.node()
		if err != nil {
			t.Fatal(err)
		}
		if got := byItem(n); got != tc.want {
			t.Errorf("byItem = %v, want %v, for\n%s", got, tc.want, tc.list)
		}
	}
}
