package schemas

import (
	"fmt"
	"math"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// CheckOpenAPIV3 reports why an OpenAPI v3 (CustomResourceDefinition-style) schema would not compile,
// without compiling it: it checks every keyword's shape the way the draft 4 meta-schema does, that
// patterns are regular expressions and that references stay inside the schema and resolve.
// Validating a catalog checks every version's schema, and compiling each one through the generic
// JSON Schema machinery costs more than decoding the catalog; CompileOpenAPIV3, which builds the
// validator, agrees with this check (see FuzzOpenAPIAgreement).
func CheckOpenAPIV3(schema map[string]any) []Violation {
	c := &openAPIChecker{root: schema, edges: map[string][]string{}}
	c.schema(schema, "", 0)
	c.loops()
	return c.out
}

type openAPIChecker struct {
	root map[string]any
	out  []Violation
	// edges link a schema to the schemas that apply to the same value ($ref, allOf, anyOf, oneOf,
	// not, dependencies): a cycle among them never reaches a value, and does not compile.
	edges map[string][]string
}

// loops reports a cycle of schemas applying to the same value, such as {"$ref": "#"}.
func (c *openAPIChecker) loops() {
	const (
		unseen = iota
		open
		done
	)
	state := map[string]int{}
	var visit func(p string) bool
	visit = func(p string) bool {
		switch state[p] {
		case open:
			c.fail(p, "the schema applies itself to the same value (an endless loop of references)")
			return true
		case done:
			return false
		}
		state[p] = open
		for _, next := range c.edges[p] {
			if visit(next) {
				return true
			}
		}
		state[p] = done
		return false
	}
	for _, p := range sortedKeys(toAnyMap(c.edges)) {
		if visit(p) {
			return
		}
	}
}

func toAnyMap(m map[string][]string) map[string]any {
	out := make(map[string]any, len(m))
	for k := range m {
		out[k] = nil
	}
	return out
}

// maxSchemaDepth bounds recursion on hostile input; decoding already bounds nesting far below it.
const maxSchemaDepth = 512

// simpleTypes are the JSON Schema type names, as draft 4's meta-schema lists them.
func simpleTypes() []string {
	return []string{"array", "boolean", "integer", "null", "number", "object", "string"}
}

func (c *openAPIChecker) fail(pointer, format string, args ...any) {
	c.out = append(c.out, Violation{Pointer: pointer, Message: Subject(pointer) + ": " + fmt.Sprintf(format, args...)})
}

// want checks the JSON type of a keyword's value and reports it when wrong.
func (c *openAPIChecker) want(v any, pointer string, types ...string) bool {
	got := jsonTypeName(v)
	if got == "number" && isInteger(v) && slices.Contains(types, "integer") {
		return true
	}
	if slices.Contains(types, got) {
		return true
	}
	c.fail(pointer, "expected %s, got %s", strings.Join(types, " or "), got)
	return false
}

func (c *openAPIChecker) schema(v any, pointer string, depth int) {
	if depth > maxSchemaDepth {
		c.fail(pointer, "schema nests too deeply")
		return
	}
	s, ok := v.(map[string]any)
	if !ok {
		c.want(v, pointer, "object")
		return
	}
	for _, k := range sortedKeys(s) {
		val, at := s[k], pointer+"/"+EscapeToken(k)
		switch k {
		case "type":
			c.typeKeyword(val, at)
		case "title", "description", "format":
			c.want(val, at, "string")
		case "enum":
			if c.want(val, at, "array") {
				c.nonEmptyUnique(val.([]any), at)
			}
		case "id":
			c.fail(at, "id would change how references resolve; it is not supported in a functionConfig schema")
		case "maximum", "minimum":
			c.want(val, at, "number")
		case "multipleOf":
			if c.want(val, at, "number") && toFloat(val) <= 0 {
				c.fail(at, "must be > 0 but found %v", val)
			}
		case "exclusiveMaximum", "exclusiveMinimum":
			if c.want(val, at, "boolean") {
				bound := strings.ToLower(k[len("exclusive"):len("exclusive")+1]) + k[len("exclusive")+1:] // exclusiveMaximum: maximum
				if _, ok := s[bound]; !ok {
					c.fail(at, "%s needs %s", k, bound)
				}
			}
		case "uniqueItems", "nullable", "readOnly", "writeOnly", "deprecated",
			"x-kubernetes-int-or-string", "x-kubernetes-preserve-unknown-fields", "x-kubernetes-embedded-resource":
			c.want(val, at, "boolean")
		case "maxLength", "minLength", "maxItems", "minItems", "maxProperties", "minProperties":
			if c.want(val, at, "integer") && toFloat(val) < 0 {
				c.fail(at, "must be >= 0 but found %v", val)
			}
		case "pattern":
			if c.want(val, at, "string") {
				c.regexp(val.(string), at)
			}
		case "required":
			c.stringSet(val, at)
		case "items":
			if list, isList := val.([]any); isList {
				if len(list) == 0 {
					c.fail(at, "minimum 1 items required, but found 0 items")
				}
				for i, item := range list {
					c.schema(item, at+"/"+strconv.Itoa(i), depth+1)
				}
			} else {
				c.schema(val, at, depth+1)
			}
		case "additionalItems", "additionalProperties":
			if _, isBool := val.(bool); !isBool {
				c.schema(val, at, depth+1)
			}
		case "properties", "patternProperties", "definitions":
			if !c.want(val, at, "object") {
				continue
			}
			props := val.(map[string]any)
			for _, name := range sortedKeys(props) {
				if k == "patternProperties" {
					c.regexp(name, at+"/"+EscapeToken(name))
				}
				c.schema(props[name], at+"/"+EscapeToken(name), depth+1)
			}
		case "dependencies":
			if !c.want(val, at, "object") {
				continue
			}
			deps := val.(map[string]any)
			for _, name := range sortedKeys(deps) {
				if _, isList := deps[name].([]any); isList {
					c.stringSet(deps[name], at+"/"+EscapeToken(name))
				} else {
					c.edges[pointer] = append(c.edges[pointer], at+"/"+EscapeToken(name))
					c.schema(deps[name], at+"/"+EscapeToken(name), depth+1)
				}
			}
		case "allOf", "anyOf", "oneOf":
			if !c.want(val, at, "array") {
				continue
			}
			list := val.([]any)
			if len(list) == 0 {
				c.fail(at, "minimum 1 items required, but found 0 items")
			}
			for i, item := range list {
				c.edges[pointer] = append(c.edges[pointer], at+"/"+strconv.Itoa(i))
				c.schema(item, at+"/"+strconv.Itoa(i), depth+1)
			}
		case "not":
			c.edges[pointer] = append(c.edges[pointer], at)
			c.schema(val, at, depth+1)
		case "$ref":
			if c.want(val, at, "string") && c.ref(val.(string), at) {
				target, _ := url.PathUnescape(strings.TrimPrefix(val.(string), "#"))
				c.edges[pointer] = append(c.edges[pointer], target)
			}
		}
	}
}

func (c *openAPIChecker) typeKeyword(v any, at string) {
	check := func(t any, p string) {
		name, _ := t.(string)
		if types := simpleTypes(); !slices.Contains(types, name) {
			c.fail(p, "value must be one of %s", quoteAll(types))
		}
	}
	switch t := v.(type) {
	case string:
		check(t, at)
	case []any:
		if len(t) == 0 {
			c.fail(at, "minimum 1 items required, but found 0 items")
		}
		for i, item := range t {
			check(item, at+"/"+strconv.Itoa(i))
		}
		c.unique(t, at)
	default:
		c.want(v, at, "string", "array")
	}
}

// stringSet checks a non-empty list of unique strings (required, dependencies).
func (c *openAPIChecker) stringSet(v any, at string) {
	if !c.want(v, at, "array") {
		return
	}
	list := v.([]any)
	for i, item := range list {
		c.want(item, at+"/"+strconv.Itoa(i), "string")
	}
	c.nonEmptyUnique(list, at)
}

func (c *openAPIChecker) unique(list []any, at string) {
	seen := map[string]int{}
	for i, item := range list {
		key := canonicalJSON(item)
		if j, dup := seen[key]; dup {
			c.fail(at, "items at index %d and %d are equal", j, i)
			return
		}
		seen[key] = i
	}
}

func (c *openAPIChecker) nonEmptyUnique(list []any, at string) {
	if len(list) == 0 {
		c.fail(at, "minimum 1 items required, but found 0 items")
	}
	c.unique(list, at)
}

// canonicalJSON renders a value so that equal JSON values render alike (numbers by value, object
// keys sorted), which is how JSON Schema compares enum and uniqueItems entries.
func canonicalJSON(v any) string {
	switch t := v.(type) {
	case map[string]any:
		var b strings.Builder
		b.WriteByte('{')
		for i, k := range sortedKeys(t) {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Quote(k) + ":" + canonicalJSON(t[k]))
		}
		return b.String() + "}"
	case []any:
		parts := make([]string, len(t))
		for i, item := range t {
			parts[i] = canonicalJSON(item)
		}
		return "[" + strings.Join(parts, ",") + "]"
	case string:
		return strconv.Quote(t)
	case nil:
		return "null"
	case bool:
		return strconv.FormatBool(t)
	}
	return strconv.FormatFloat(toFloat(v), 'g', -1, 64)
}

func (c *openAPIChecker) regexp(expr, at string) {
	if _, err := regexp.Compile(expr); err != nil {
		msg := err.Error()
		if i := strings.LastIndex(msg, ": "); i >= 0 {
			msg = msg[:i]
		}
		c.fail(at, "%q is not a valid regular expression: %s", expr, strings.TrimPrefix(msg, "error parsing regexp: "))
	}
}

// ref accepts only references inside the schema ("#/definitions/x") that resolve: compiling never
// reads a file or the network.
func (c *openAPIChecker) ref(ref, at string) bool {
	frag, ok := strings.CutPrefix(ref, "#")
	if !ok {
		c.fail(at, "schema reference %q: only references inside the document are allowed", ref)
		return false
	}
	decoded, err := url.PathUnescape(frag)
	if err != nil || (frag != "" && (!strings.HasPrefix(decoded, "/") || Lookup(c.root, decoded) == nil)) {
		c.fail(at, "schema reference %q does not resolve", ref)
		return false
	}
	return true
}

func quoteAll(s []string) string {
	q := make([]string, len(s))
	for i, v := range s {
		q[i] = strconv.Quote(v)
	}
	return strings.Join(q, ", ")
}

func toFloat(v any) float64 {
	switch n := v.(type) {
	case int64:
		return float64(n)
	case int:
		return float64(n)
	case float64:
		return n
	case interface{ Float64() (float64, error) }:
		f, _ := n.Float64()
		return f
	}
	return math.NaN()
}

func isInteger(v any) bool {
	f := toFloat(v)
	return !math.IsNaN(f) && f == math.Trunc(f)
}
