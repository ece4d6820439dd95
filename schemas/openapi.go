package schemas

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

// FunctionConfigSchema is a compiled `openAPIV3Schema` of a function version, used to check a
// functionConfig before the function runs.
type FunctionConfigSchema struct {
	schema *jsonschema.Schema
}

const functionConfigURL = "https://krm-catalog.invalid/function-config.json"

// CompileOpenAPIV3 compiles a CustomResourceDefinition-style OpenAPI v3 schema. OpenAPI v3.0 schemas are
// JSON Schema draft 4 with extensions, so the schema is compiled as draft 4 after translating the
// extensions that change validation (nullable, x-kubernetes-int-or-string). References may only
// point inside the schema: compiling never reads a file or the network. Violations point into the
// schema itself.
func CompileOpenAPIV3(openAPI map[string]any) (*FunctionConfigSchema, []Violation) {
	var problems []Violation
	translated := translateOpenAPI(openAPI, "", &problems)
	if len(problems) > 0 {
		return nil, problems
	}
	data, err := json.Marshal(translated)
	if err != nil {
		return nil, []Violation{{Message: fmt.Sprintf("schema is not representable as JSON: %v", err)}}
	}
	c := jsonschema.NewCompiler()
	c.Draft = jsonschema.Draft4
	c.LoadURL = refuseLoad
	if err := c.AddResource(functionConfigURL, bytes.NewReader(data)); err != nil {
		return nil, []Violation{{Message: fmt.Sprintf("schema does not compile: %v", err)}}
	}
	sch, err := c.Compile(functionConfigURL)
	if err != nil {
		return nil, compileViolations(err)
	}
	return &FunctionConfigSchema{schema: sch}, nil
}

func compileViolations(err error) []Violation {
	var ve *jsonschema.ValidationError
	if errors.As(err, &ve) {
		var out []Violation
		(&Set{}).collect(ve, nil, &out)
		return dedupe(out)
	}
	msg := err.Error()
	var se *jsonschema.SchemaError
	if errors.As(err, &se) && se.Err != nil {
		msg = se.Err.Error()
	}
	return []Violation{{Message: "schema does not compile: " + msg}}
}

// Validate checks a functionConfig (a JSON-compatible value) against the schema.
func (f *FunctionConfigSchema) Validate(instance any) []Violation {
	err := f.schema.Validate(instance)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []Violation{{Message: err.Error()}}
	}
	var out []Violation
	(&Set{}).collect(ve, instance, &out)
	return dedupe(out)
}

// translateOpenAPI copies an OpenAPI v3 schema, rewriting the Kubernetes extensions that change what
// validates into plain JSON Schema. Only schema positions are rewritten: a property that happens to
// be named "nullable" stays.
func translateOpenAPI(schema map[string]any, pointer string, problems *[]Violation) map[string]any {
	out := make(map[string]any, len(schema))
	for k, val := range schema {
		at := pointer + "/" + EscapeToken(k)
		switch k {
		case "nullable", "x-kubernetes-int-or-string", "x-kubernetes-preserve-unknown-fields", "x-kubernetes-embedded-resource":
			if _, ok := val.(bool); !ok {
				*problems = append(*problems, Violation{Pointer: at, Message: k + ": expected boolean, got " + jsonTypeName(val)})
			}
			continue
		case "$schema":
			continue
		case "properties", "patternProperties", "definitions":
			if m, ok := val.(map[string]any); ok {
				sub := make(map[string]any, len(m))
				for name, s := range m {
					sub[name] = translateSub(s, at+"/"+EscapeToken(name), problems)
				}
				val = sub
			}
		case "items", "additionalProperties", "additionalItems", "not":
			val = translateSub(val, at, problems)
		case "allOf", "anyOf", "oneOf":
			if list, ok := val.([]any); ok {
				sub := make([]any, len(list))
				for i, s := range list {
					sub[i] = translateSub(s, at+"/"+strconv.Itoa(i), problems)
				}
				val = sub
			}
		}
		out[k] = val
	}
	if schema["x-kubernetes-int-or-string"] == true {
		delete(out, "type")
		out["anyOf"] = []any{map[string]any{"type": "integer"}, map[string]any{"type": "string"}}
	}
	if schema["nullable"] == true {
		if typ, ok := out["type"].(string); ok {
			out["type"] = []any{typ, "null"}
		}
	}
	return out
}

// translateSub translates a value in a schema position: a schema, or a list of them (items).
func translateSub(v any, pointer string, problems *[]Violation) any {
	switch t := v.(type) {
	case map[string]any:
		return translateOpenAPI(t, pointer, problems)
	case []any:
		out := make([]any, len(t))
		for i, s := range t {
			out[i] = translateSub(s, pointer+"/"+strconv.Itoa(i), problems)
		}
		return out
	default:
		return v
	}
}

func jsonTypeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "number"
}
