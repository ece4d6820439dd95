package schemas

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestEverySchemaCompiles(t *testing.T) {
	t.Parallel()
	s, err := New()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range Kinds() {
		if _, ok := s.compiled[k]; !ok {
			t.Errorf("no compiled schema for %s", k)
		}
		if src, err := files.ReadFile(fileOf(k)); err != nil || len(src) == 0 {
			t.Errorf("the schema file of %s: %v", k, err)
		}
	}
}

func TestValidateMessages(t *testing.T) {
	t.Parallel()
	s, err := New()
	if err != nil {
		t.Fatal(err)
	}
	doc := map[string]any{
		"apiVersion": "config.kubernetes.io/v1alpha1",
		"kind":       "KRMFunctionDefinition",
		"colour":     "blue",
		"spec": map[string]any{
			"group":       "Example.COM",
			"names":       map[string]any{"kind": "SetX"},
			"description": "d",
			"publisher":   "p",
			"versions": []any{map[string]any{
				"name":    "v1",
				"runtime": map[string]any{"container": map[string]any{"image": "x", "requireNetwork": "yes"}},
			}},
		},
	}
	got := s.Validate(Definition, doc)
	want := []Violation{
		{Pointer: "/colour", Message: `unknown field "colour"`, Warning: true},
		{Pointer: "/spec/group", Message: "group must be a lower-case DNS subdomain such as example.com"},
		{Pointer: "/spec/versions/0/runtime/container/requireNetwork", Message: "requireNetwork: expected boolean, got string"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("violations (-want +got):\n%s", diff)
	}
}

func TestCompileOpenAPIV3(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		schema      map[string]any
		config      any
		wantCompile string // fragment of the first compile violation, "" when it compiles
		wantValid   string // fragment of the first validation violation, "" when the config is valid
	}{
		{name: "object with required field", schema: map[string]any{"type": "object", "required": []any{"ns"}, "properties": map[string]any{"ns": map[string]any{"type": "string"}}},
			config: map[string]any{}, wantValid: `missing properties: 'ns'`},
		{name: "nullable", schema: map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "string", "nullable": true}}},
			config: map[string]any{"n": nil}},
		{name: "a property named nullable is a property", schema: map[string]any{"type": "object", "properties": map[string]any{"nullable": map[string]any{"type": "integer"}}},
			config: map[string]any{"nullable": "x"}, wantValid: "expected integer"},
		{name: "int-or-string", schema: map[string]any{"type": "object", "properties": map[string]any{"port": map[string]any{"x-kubernetes-int-or-string": true}}},
			config: map[string]any{"port": "http"}},
		{name: "draft 4 exclusiveMaximum", schema: map[string]any{"type": "integer", "maximum": 5, "exclusiveMaximum": true},
			config: int64(5), wantValid: "must be < 5"},
		{name: "misspelt type", schema: map[string]any{"type": "strng"}, wantCompile: `type: value must be one of`},
		{name: "bad pattern", schema: map[string]any{"type": "string", "pattern": "("}, wantCompile: "pattern"},
		{name: "nullable not a boolean", schema: map[string]any{"type": "string", "nullable": "yes"}, wantCompile: "nullable: expected boolean, got string"},
		{name: "remote reference refused", schema: map[string]any{"$ref": "https://example.com/schema.json"}, wantCompile: "only references inside the document"},
		{name: "file reference refused", schema: map[string]any{"$ref": "file:///etc/passwd"}, wantCompile: "only references inside the document"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fs, viols := CompileOpenAPIV3(tc.schema)
			if tc.wantCompile != "" {
				if len(viols) == 0 || !strings.Contains(viols[0].Message, tc.wantCompile) {
					t.Fatalf("compile violations %v; want one containing %q", viols, tc.wantCompile)
				}
				return
			}
			if len(viols) > 0 {
				t.Fatalf("unexpected compile violations %v", viols)
			}
			got := fs.Validate(tc.config)
			switch {
			case tc.wantValid == "" && len(got) > 0:
				t.Errorf("unexpected violations %v", got)
			case tc.wantValid != "" && (len(got) == 0 || !strings.Contains(got[0].Message, tc.wantValid)):
				t.Errorf("violations %v; want one containing %q", got, tc.wantValid)
			}
		})
	}
}

// FuzzOpenAPIAgreement holds CheckOpenAPIV3, which validation uses, to CompileOpenAPIV3, which the
// runner uses: a schema the check accepts must compile.
func FuzzOpenAPIAgreement(f *testing.F) {
	for _, seed := range []string{
		`{"type":"object","properties":{"spec":{"type":"object","required":["a"],"properties":{"a":{"type":"string","pattern":"^a+$"}}}}}`,
		`{"type":["string","null"],"enum":["a",null],"maxLength":3}`,
		`{"definitions":{"x":{"type":"integer","minimum":1,"exclusiveMinimum":true}},"items":{"$ref":"#/definitions/x"}}`,
		`{"anyOf":[{"type":"string"},{"type":"integer"}],"not":{"enum":[3]}}`,
		`{"patternProperties":{"^x-":{"type":"string"}},"additionalProperties":false,"dependencies":{"a":["b"],"c":{"required":["d"]}}}`,
		`{"type":"object","x-kubernetes-preserve-unknown-fields":true,"nullable":true}`,
		`{"type":"strng"}`, `{"required":"a"}`, `{"pattern":"("}`, `{"$ref":"#/nope"}`, `{"minLength":-1}`, `{"items":[{"type":"string"}],"additionalItems":{"type":"number"}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var schema map[string]any
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		if dec.Decode(&schema) != nil || schema == nil {
			return
		}
		if viols := CheckOpenAPIV3(schema); len(viols) > 0 {
			return
		}
		if _, viols := CompileOpenAPIV3(schema); len(viols) > 0 {
			t.Fatalf("the check accepts a schema that does not compile: %v\n%s", viols, data)
		}
	})
}
