package fn

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzDecodeResourceList feeds arbitrary input to the ResourceList reader, which reads what
// functions write and what users pipe in: it must never panic, and a list it accepts must survive
// JSON encoding and decoding unchanged.
//
//	go test ./fn -run '^$' -fuzz FuzzDecodeResourceList -fuzztime 30s
func FuzzDecodeResourceList(f *testing.F) {
	for _, seed := range []string{
		sampleList,
		twoDocs,
		commented,
		`{"apiVersion":"config.kubernetes.io/v1","kind":"ResourceList","items":[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}]}`,
		`{"apiVersion":"v1","kind":"ConfigMap"}`,
		"kind: ResourceList\nitems:\n- &a {apiVersion: v1, kind: X}\n- *a\n",
		"kind: ResourceList\nitems: [\n",
		"kind: ResourceList\nresults:\n- message: m\n  field: {path: a, currentValue: [1, {b: 2}]}\n",
		"---\n---\n",
		"a: &a [*a]\n",
		"\xff\xfe",
	} {
		f.Add([]byte(seed))
	}
	for _, v := range yaml11LookAlikes {
		f.Add([]byte(lookAlikeDoc(v)))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rl, in, err := DecodeInput(data)
		if err != nil {
			return
		}
		j1, err := rl.Encode(JSON)
		if err != nil {
			return // YAML that JSON cannot express (a non-scalar key, an alias bomb)
		}
		rl2, _, err := DecodeResourceList(j1)
		if err != nil {
			t.Fatalf("re-reading our own JSON failed: %v\n%s", err, j1)
		}
		j2, err := rl2.Encode(JSON)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(j1, j2) {
			t.Fatalf("JSON not stable:\n%s\n%s", j1, j2)
		}
		if _, err := rl.EncodeOutput(in); err != nil && in.Format == JSON {
			t.Fatalf("JSON input cannot be written back: %v", err)
		}
	})
}

// FuzzDecodeJSONNode checks the JSON parser against encoding/json: both accept the same inputs
// (below the nesting limit), and what it parses writes back to the same JSON value.
//
//	go test ./fn -run '^$' -fuzz FuzzDecodeJSONNode -fuzztime 30s
func FuzzDecodeJSONNode(f *testing.F) {
	for _, seed := range []string{`{"a":[1,2.5e3,true,null,"x\u00e9"]}`, `[]`, `"\ud800"`, `{"a":1,}`, `01`, `-`, `1e+`, "\"\x01\""} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := DecodeJSONNode(data)
		if bytes.Count(data, []byte("["))+bytes.Count(data, []byte("{")) > maxJSONDepth {
			return
		}
		if valid := json.Valid(data); valid != (err == nil) {
			t.Fatalf("json.Valid = %v, DecodeJSONNode error = %v", valid, err)
		}
		if err != nil {
			return
		}
		out, err := AppendJSON(nil, n)
		if err != nil {
			t.Fatal(err)
		}
		var a, b any
		if err := json.Unmarshal(data, &a); err != nil {
			return // numbers beyond float64 and similar: encoding/json refuses what it validates
		}
		if err := json.Unmarshal(out, &b); err != nil {
			t.Fatalf("our output is not JSON: %v\n%s", err, out)
		}
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if !bytes.Equal(ja, jb) {
			t.Fatalf("value changed:\n%s\n%s", ja, jb)
		}
	})
}
