package web

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// schemaRow is one field of a functionConfig schema as the configuration table shows it.
type schemaRow struct {
	Path        string
	Depth       int
	Type        string
	Required    bool
	Default     string
	Enum        []string
	Description string
	Constraints []string
}

// Limits on how much of a schema the table shows: a schema is the publisher's input.
const (
	maxSchemaDepth = 16
	maxSchemaRows  = 400
)

// schemaTable flattens an openAPIV3Schema into rows: nested objects become dotted paths
// (spec.selector.labels), array items get "[]" (spec.items[].name) and map values "*". It reports
// whether rows were left out because of the limits.
func schemaTable(root map[string]any) (rows []schemaRow, truncated bool) {
	w := &schemaWalker{}
	w.properties(root, "", 0, true)
	return w.rows, w.truncated
}

type schemaWalker struct {
	rows      []schemaRow
	truncated bool
}

// properties adds a row for each property of an object schema, then the rows of its children.
func (w *schemaWalker) properties(obj map[string]any, prefix string, depth int, root bool) {
	props, _ := obj["properties"].(map[string]any)
	if len(props) == 0 {
		return
	}
	if depth >= maxSchemaDepth {
		w.truncated = true
		return
	}
	required := map[string]bool{}
	if req, ok := obj["required"].([]any); ok {
		for _, r := range req {
			if s, ok := r.(string); ok {
				required[s] = true
			}
		}
	}
	names := make([]string, 0, len(props))
	for name := range props {
		// every functionConfig has these; the table is about what is particular to the function
		if root && (name == "apiVersion" || name == "kind" || name == "metadata") {
			continue
		}
		names = append(names, name)
	}
	// required fields first: they are the ones a reader must fill in
	slices.SortFunc(names, func(a, b string) int {
		if required[a] != required[b] {
			if required[a] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	for _, name := range names {
		prop, _ := props[name].(map[string]any)
		w.field(prop, prefix+name, depth, required[name])
	}
}

func (w *schemaWalker) field(prop map[string]any, path string, depth int, required bool) {
	if len(w.rows) >= maxSchemaRows {
		w.truncated = true
		return
	}
	row := schemaRow{Path: path, Depth: depth, Type: typeOf(prop), Required: required, Description: str(prop["description"])}
	if d, ok := prop["default"]; ok {
		row.Default = display(d)
	}
	enum, _ := prop["enum"].([]any)
	items, _ := prop["items"].(map[string]any)
	if len(enum) == 0 && items != nil {
		enum, _ = items["enum"].([]any) // a list of enumerated values: show them on the list
	}
	for _, e := range enum {
		row.Enum = append(row.Enum, display(e))
	}
	row.Constraints = constraints(prop)
	w.rows = append(w.rows, row)

	w.properties(prop, path+".", depth+1, false)
	if items != nil {
		w.properties(items, path+"[].", depth+1, false)
	}
	if ap, ok := prop["additionalProperties"].(map[string]any); ok {
		w.properties(ap, path+".*.", depth+1, false)
	}
}

// typeOf names a schema's type for people: "array of string", "map of string", "integer or string".
func typeOf(s map[string]any) string {
	if s == nil {
		return "any"
	}
	if b, _ := s["x-kubernetes-int-or-string"].(bool); b {
		return "integer or string"
	}
	for _, k := range []string{"oneOf", "anyOf"} {
		if alts, ok := s[k].([]any); ok && len(alts) > 0 {
			var names []string
			for _, a := range alts {
				am, _ := a.(map[string]any)
				if t := typeOf(am); !slices.Contains(names, t) {
					names = append(names, t)
				}
			}
			return strings.Join(names, " or ")
		}
	}
	t, _ := s["type"].(string)
	switch t {
	case "":
		if _, ok := s["properties"]; ok {
			return "object"
		}
		return "any"
	case "array":
		items, _ := s["items"].(map[string]any)
		if items == nil {
			return "array"
		}
		return "array of " + typeOf(items)
	case "object":
		if ap, ok := s["additionalProperties"].(map[string]any); ok {
			if _, hasProps := s["properties"]; !hasProps {
				return "map of " + typeOf(ap)
			}
		}
	}
	return t
}

// constraints lists the validations beyond type and enum, as short phrases.
func constraints(s map[string]any) []string {
	var out []string
	for _, c := range []struct{ key, label string }{
		{"format", "format"}, {"pattern", "pattern"},
		{"minLength", "min length"}, {"maxLength", "max length"},
		{"minimum", "minimum"}, {"maximum", "maximum"},
		{"exclusiveMinimum", "more than"}, {"exclusiveMaximum", "less than"},
		{"multipleOf", "multiple of"},
		{"minItems", "min items"}, {"maxItems", "max items"},
		{"minProperties", "min entries"}, {"maxProperties", "max entries"},
	} {
		if v, ok := s[c.key]; ok {
			out = append(out, c.label+" "+display(v))
		}
	}
	if b, _ := s["uniqueItems"].(bool); b {
		out = append(out, "unique items")
	}
	if b, _ := s["nullable"].(bool); b {
		out = append(out, "may be null")
	}
	return out
}

// display writes a schema value the way YAML would read it back: strings bare unless that would
// hide something, everything else as JSON.
func display(v any) string {
	if s, ok := v.(string); ok {
		if s == "" || strings.TrimSpace(s) != s {
			return fmt.Sprintf("%q", s)
		}
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func str(v any) string {
	s, _ := v.(string)
	return s
}
