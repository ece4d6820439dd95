// Package schemas holds the embedded JSON Schemas (draft 2020-12) of the documents krm-catalog reads,
// and the validator built on them. It reports violations as JSON pointers into the instance; turning
// those into file positions is the caller's job.
package schemas

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v5"
)

//go:embed *.json
var files embed.FS

// Kind names a document kind that has a schema.
type Kind string

// The document kinds with a schema.
const (
	Definition   Kind = "KRMFunctionDefinition"
	Catalog      Kind = "KRMFunctionCatalog"
	ResourceList Kind = "ResourceList"
	Composition  Kind = "Composition"
)

// fileOf names the embedded schema file of a kind, "" for a kind without one.
func fileOf(kind Kind) string {
	switch kind {
	case Definition:
		return "krm-function-definition.json"
	case Catalog:
		return "krm-function-catalog.json"
	case ResourceList:
		return "resource-list.json"
	case Composition:
		return "composition.json"
	}
	return ""
}

// Kinds lists every kind with a schema, in a stable order.
func Kinds() []Kind { return []Kind{Catalog, Definition, ResourceList, Composition} }

// Violation is one way an instance fails its schema.
type Violation struct {
	Pointer string // JSON pointer into the instance
	Message string
	// Warning marks a violation that is advice rather than an error: an unknown field.
	Warning bool
}

// Set is the compiled set of schemas. It is safe for concurrent use.
type Set struct {
	compiled map[Kind]*jsonschema.Schema
	// raw holds each schema file parsed, by $id, so that violations can consult the keywords
	// around the one that failed (the property list, the x-message annotation).
	raw map[string]any
}

// New compiles the embedded schemas.
func New() (*Set, error) {
	s := &Set{compiled: map[Kind]*jsonschema.Schema{}, raw: map[string]any{}}
	c := jsonschema.NewCompiler()
	c.LoadURL = refuseLoad
	for _, kind := range Kinds() {
		name := fileOf(kind)
		data, err := files.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("read schema %s: %w", name, err)
		}
		var doc map[string]any
		if err := json.Unmarshal(data, &doc); err != nil {
			return nil, fmt.Errorf("parse schema %s: %w", name, err)
		}
		id, _ := doc["$id"].(string)
		s.raw[id] = doc
		if err := c.AddResource(id, bytes.NewReader(data)); err != nil {
			return nil, fmt.Errorf("add schema %s: %w", name, err)
		}
	}
	for _, kind := range Kinds() {
		name := fileOf(kind)
		sch, err := c.Compile(IDOf(kind))
		if err != nil {
			return nil, fmt.Errorf("compile schema %s: %w", name, err)
		}
		s.compiled[kind] = sch
	}
	return s, nil
}

// IDOf returns the $id of a kind's schema.
func IDOf(kind Kind) string {
	base := "https://krm-catalog.invalid/schemas/v1alpha1/"
	if kind == ResourceList {
		base = "https://krm-catalog.invalid/schemas/v1/"
	}
	return base + fileOf(kind)
}

func refuseLoad(url string) (io.ReadCloser, error) {
	return nil, fmt.Errorf("schema reference %q: only references inside the document are allowed", url)
}

// Validate checks a JSON-compatible value (maps, slices, strings, float64/int64/json.Number, bools, nil)
// against the schema of kind. Violations come sorted by pointer.
func (s *Set) Validate(kind Kind, instance any) []Violation {
	sch, ok := s.compiled[kind]
	if !ok {
		return []Violation{{Message: fmt.Sprintf("no schema for kind %q", kind)}}
	}
	err := sch.Validate(instance)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []Violation{{Message: err.Error()}}
	}
	var out []Violation
	s.collect(ve, instance, &out)
	return dedupe(out)
}

// collect turns the leaves of a validation error tree into violations with readable messages.
func (s *Set) collect(ve *jsonschema.ValidationError, instance any, out *[]Violation) {
	if len(ve.Causes) > 0 {
		for _, c := range relevantCauses(ve) {
			s.collect(c, instance, out)
		}
		return
	}
	schemaURL, frag, _ := strings.Cut(ve.AbsoluteKeywordLocation, "#")
	parentPtr, keyword := splitLast(frag)
	parent, _ := Lookup(s.raw[schemaURL], parentPtr).(map[string]any)
	at := ve.InstanceLocation
	if parent == nil {
		// Not one of our schemas (a meta-schema, when compiling a user's schema): the library's words.
		*out = append(*out, Violation{Pointer: at, Message: Subject(at) + ": " + strings.Replace(ve.Message, ", but got ", ", got ", 1)})
		return
	}
	switch keyword {
	case "additionalProperties":
		obj, _ := Lookup(instance, at).(map[string]any)
		props, _ := parent["properties"].(map[string]any)
		for _, name := range sortedKeys(obj) {
			if _, known := props[name]; !known {
				*out = append(*out, Violation{
					Pointer: at + "/" + EscapeToken(name),
					Message: fmt.Sprintf("unknown field %q", name),
					Warning: true,
				})
			}
		}
		return
	case "required":
		obj, _ := Lookup(instance, at).(map[string]any)
		req, _ := parent["required"].([]any)
		for _, r := range req {
			name, _ := r.(string)
			if _, present := obj[name]; !present {
				*out = append(*out, Violation{Pointer: at, Message: fmt.Sprintf("missing required field %q", name)})
			}
		}
		return
	}
	msg := ve.Message
	switch custom, hasCustom := parent["x-message"].(string); {
	case hasCustom && keyword != "type" && keyword != "enum":
		msg = Subject(at) + " " + custom
	case keyword == "type":
		msg = Subject(at) + ": " + strings.Replace(msg, ", but got ", ", got ", 1)
	default:
		msg = Subject(at) + ": " + msg
	}
	*out = append(*out, Violation{Pointer: at, Message: msg})
}

// Subject names the value at a JSON pointer for a message: its field name, or list[index].
func Subject(pointer string) string {
	if pointer == "" {
		return "the document"
	}
	parent, last := splitLast(pointer)
	if _, err := strconv.Atoi(last); err == nil {
		_, name := splitLast(parent)
		return name + "[" + last + "]"
	}
	return last
}

// relevantCauses drops, from a failed anyOf or oneOf, the branches that failed only on "type" when
// another branch accepted the type and failed on something else: that branch is what the author
// meant ("type: strng" is a misspelt type name, not a list of types).
func relevantCauses(ve *jsonschema.ValidationError) []*jsonschema.ValidationError {
	_, keyword := splitLast(ve.KeywordLocation)
	if keyword != "anyOf" && keyword != "oneOf" {
		return ve.Causes
	}
	var kept []*jsonschema.ValidationError
	for _, c := range ve.Causes {
		if !failedOnTypeOnly(c) {
			kept = append(kept, c)
		}
	}
	if len(kept) == 0 {
		return ve.Causes
	}
	return kept
}

func failedOnTypeOnly(ve *jsonschema.ValidationError) bool {
	if len(ve.Causes) == 0 {
		_, keyword := splitLast(ve.KeywordLocation)
		return keyword == "type"
	}
	for _, c := range ve.Causes {
		if !failedOnTypeOnly(c) {
			return false
		}
	}
	return true
}

func dedupe(vs []Violation) []Violation {
	sort.SliceStable(vs, func(i, j int) bool { return vs[i].Pointer < vs[j].Pointer })
	out := vs[:0]
	for i, v := range vs {
		if i > 0 && v == vs[i-1] {
			continue
		}
		out = append(out, v)
	}
	return out
}

func splitLast(ptr string) (parent, last string) {
	i := strings.LastIndexByte(ptr, '/')
	if i < 0 {
		return "", ptr
	}
	return ptr[:i], UnescapeToken(ptr[i+1:])
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Lookup resolves a JSON pointer in a JSON-compatible value; nil when it does not resolve.
func Lookup(v any, pointer string) any {
	if pointer == "" {
		return v
	}
	for _, tok := range strings.Split(strings.TrimPrefix(pointer, "/"), "/") {
		tok = UnescapeToken(tok)
		switch t := v.(type) {
		case map[string]any:
			v = t[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(t) {
				return nil
			}
			v = t[i]
		default:
			return nil
		}
	}
	return v
}

// EscapeToken escapes one JSON pointer reference token (RFC 6901).
func EscapeToken(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// UnescapeToken reverses EscapeToken.
func UnescapeToken(s string) string {
	if !strings.Contains(s, "~") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
}
