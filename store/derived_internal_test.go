package store

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
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

// TestDerivedItemBound: the bound of a version's part of its generated definition is never below
// the part, whatever the version holds.
func TestDerivedItemBound(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	strs := []string{"", "a", "yes", "0", "with: colon", "line\nbreaks\n\n", "\x00\x01\u202e", "😀 emoji", "  lead", "#", strings.Repeat("long words ", 40), "\"quoted\"", "- dash"}
	var value func(depth int) any
	value = func(depth int) any {
		switch k := r.IntN(8); {
		case depth > 5 || k < 3:
			switch r.IntN(5) {
			case 0:
				return int64(r.IntN(1 << 30))
			case 1:
				return r.Float64() * 1e300
			case 2:
				return nil
			case 3:
				return json.Number(strings.Repeat("9", r.IntN(60)+1))
			}
			return strs[r.IntN(len(strs))]
		case k < 5:
			l := make([]any, r.IntN(5))
			for i := range l {
				l[i] = value(depth + 1)
			}
			return l
		default:
			m := map[string]any{}
			for range r.IntN(5) {
				m[strs[r.IntN(len(strs))]+fmt.Sprint(r.IntN(3))] = value(depth + 1)
			}
			return m
		}
	}
	for range 2000 {
		v := map[string]any{"name": "v1", "schema": value(0), "runtime": value(1)}
		size, ok := derivedItemSize(v, MaxDerivedBytes)
		if !ok {
			t.Fatal("over the limit")
		}
		if b := derivedItemBound(v); b < size {
			t.Fatalf("bound %d below the size %d of %#v", b, size, v)
		}
	}
}
