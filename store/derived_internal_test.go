package store

import (
	"strings"
	"testing"
)

// TestDerivedSizeAddsUp: a generated definition's size is its header's and its versions' (each
// measured alone), as refreshFunctions counts it without holding the decoded sources.
func TestDerivedSizeAddsUp(t *testing.T) {
	t.Parallel()
	deep := map[string]any{"default": []any{[]any{0, 1}, []any{map[string]any{"a": "b: c"}}}}
	specs := []versionSpec{
		{Meta: functionMeta{Description: "first source", Publisher: "example.com", Home: "https://example.com", Tags: []string{"a", "b"}},
			Version: map[string]any{"name": "v1", "schema": map[string]any{"openAPIV3Schema": deep}}},
		{Meta: functionMeta{Description: "later"}, Version: map[string]any{"name": "v2", "license": "Apache-2.0", "examples": []any{"https://x/" + strings.Repeat("y", 200)}}},
		{Version: map[string]any{"name": "v1", "ignored": "a later entry of v1"}},
		{Version: map[string]any{"name": "v3", "usage": "multi\nline: text\n"}},
	}
	want, ok := derivedSize("fn.example.com", "SetThing", specs, MaxDerivedBytes)
	if !ok {
		t.Fatal("over the limit")
	}
	src := make([]derivedSource, len(specs))
	for i, s := range specs {
		size, ok := derivedItemSize(s.Version, MaxDerivedBytes)
		if !ok {
			t.Fatal("over the limit")
		}
		name, _ := s.Version["name"].(string)
		src[i] = derivedSource{id: int64(i), version: name, meta: s.Meta, size: size}
	}
	if got := derivedSizeOf("fn.example.com", "SetThing", src); got != want {
		t.Errorf("the parts add up to %d bytes; the generated definition is %d", got, want)
	}
	b, _ := derivedDefinition("fn.example.com", "SetThing", specs)
	if len(b) != want {
		t.Errorf("derivedSize %d, the definition %d bytes", want, len(b))
	}
}

// derivedSizeOf is the size of the definition generated from a function's sources, from their
// parts.
func derivedSizeOf(group, kind string, src []derivedSource) int {
	return derivedVersionsSize(src) + derivedHeaderSize(group, kind, src[0].meta) - emptyList
}
