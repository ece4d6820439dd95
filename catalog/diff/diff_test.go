package diff

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/krm-catalog/krm-catalog/catalog"
	"github.com/krm-catalog/krm-catalog/catalog/catalogtest"
)

// base is the old catalog of every case; each case edits a copy of it.
const base = `apiVersion: config.kubernetes.io/v1alpha1
kind: KRMFunctionCatalog
metadata:
  name: platform
spec:
  krmFunctions:
  - group: fn.example.com
    names: {kind: SetNamespace}
    description: d
    publisher: example.com
    versions:
    - name: v1
      idempotent: true
      schema:
        openAPIV3Schema:
          type: object
          required: [namespace]
          properties:
            namespace: {type: string}
            mode: {type: string, enum: [fast, safe]}
            exclude:
              type: array
              items:
                type: object
                properties:
                  kind: {type: string}
      runtime:
        container:
          image: registry.example.com/fns/set-namespace:v1.3.0
          sha256: 0dccf88826d80f10f13332fbc81c34af84fad81718c2266c151efaabf7922120
        exec:
          platforms:
          - {bin: set-ns, os: linux, arch: amd64, uri: https://example.com/set-ns-linux, sha256: '1111111111111111111111111111111111111111111111111111111111111111'}
          - {bin: set-ns, os: darwin, arch: arm64, uri: https://example.com/set-ns-darwin, sha256: '2222222222222222222222222222222222222222222222222222222222222222'}
  - group: fn.example.com
    names: {kind: SetLabels}
    description: d
    publisher: example.com
    versions:
    - name: v1
      runtime:
        starlark:
          uri: https://example.com/set-labels.star
          sha256: '3333333333333333333333333333333333333333333333333333333333333333'
`

func load(t *testing.T, text string) *catalog.Catalog {
	_, c := catalogtest.Decode(t, []byte(text))
	return c
}

func TestCatalogs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// edits are old->new string replacements applied to base, in order
		edits [][2]string
		want  []Change
	}{
		{name: "identical"},
		{
			name:  "catalog renamed",
			edits: [][2]string{{"name: platform", "name: platform-2"}},
			want:  []Change{{Kind: CatalogRenamed, Old: "platform", New: "platform-2"}},
		},
		{
			name:  "function removed",
			edits: [][2]string{{"names: {kind: SetLabels}", "names: {kind: SetLabels2}"}},
			want: []Change{
				{Kind: FunctionRemoved, Function: "fn.example.com/SetLabels", Old: "v1", Breaking: true},
				{Kind: FunctionAdded, Function: "fn.example.com/SetLabels2", New: "v1"},
			},
		},
		{
			name: "version added and removed",
			edits: [][2]string{{`    - name: v1
      runtime:
        starlark:`, `    - name: v2
      runtime:
        starlark:`}},
			want: []Change{
				{Kind: VersionRemoved, Function: "fn.example.com/SetLabels", Version: "v1", Breaking: true},
				{Kind: VersionAdded, Function: "fn.example.com/SetLabels", Version: "v2"},
			},
		},
		{
			name:  "publisher changed",
			edits: [][2]string{{"    publisher: example.com\n    versions:\n    - name: v1\n      runtime:", "    publisher: example.org\n    versions:\n    - name: v1\n      runtime:"}},
			want:  []Change{{Kind: PublisherChanged, Function: "fn.example.com/SetLabels", Old: "example.com", New: "example.org", Breaking: true}},
		},
		{
			name:  "container digest changed",
			edits: [][2]string{{"sha256: 0dccf88826d80f10f13332fbc81c34af84fad81718c2266c151efaabf7922120", "sha256: 9dccf88826d80f10f13332fbc81c34af84fad81718c2266c151efaabf7922120"}},
			want: []Change{{Kind: DigestChanged, Function: "fn.example.com/SetNamespace", Version: "v1", Runtime: "container",
				Old: "sha256:0dccf88826d80f10f13332fbc81c34af84fad81718c2266c151efaabf7922120", New: "sha256:9dccf88826d80f10f13332fbc81c34af84fad81718c2266c151efaabf7922120"}},
		},
		{
			name: "image moved, digest pinned in the name instead of sha256",
			edits: [][2]string{{"image: registry.example.com/fns/set-namespace:v1.3.0\n          sha256: 0dccf88826d80f10f13332fbc81c34af84fad81718c2266c151efaabf7922120",
				"image: mirror.example.com/fns/set-namespace@sha256:0dccf88826d80f10f13332fbc81c34af84fad81718c2266c151efaabf7922120"}},
			want: []Change{{Kind: SourceChanged, Function: "fn.example.com/SetNamespace", Version: "v1", Runtime: "container",
				Old: "registry.example.com/fns/set-namespace:v1.3.0", New: "mirror.example.com/fns/set-namespace"}},
		},
		{
			name:  "exec platform removed",
			edits: [][2]string{{"          - {bin: set-ns, os: darwin, arch: arm64, uri: https://example.com/set-ns-darwin, sha256: '2222222222222222222222222222222222222222222222222222222222222222'}\n", ""}},
			want: []Change{{Kind: RuntimeRemoved, Function: "fn.example.com/SetNamespace", Version: "v1", Runtime: "exec darwin/arm64",
				Old: "https://example.com/set-ns-darwin", Breaking: true}},
		},
		{
			name:  "starlark digest changed and network required",
			edits: [][2]string{{"sha256: '3333", "sha256: 'aaaa"}, {"sha256: 0dccf88826d80f10f13332fbc81c34af84fad81718c2266c151efaabf7922120", "sha256: 0dccf88826d80f10f13332fbc81c34af84fad81718c2266c151efaabf7922120\n          requireNetwork: true"}},
			want: []Change{
				{Kind: DigestChanged, Function: "fn.example.com/SetLabels", Version: "v1", Runtime: "starlark",
					Old: "sha256:3333333333333333333333333333333333333333333333333333333333333333", New: "sha256:aaaa333333333333333333333333333333333333333333333333333333333333"},
				{Kind: RequirementAdded, Function: "fn.example.com/SetNamespace", Version: "v1", Runtime: "container", New: "network", Breaking: true},
			},
		},
		{
			name:  "idempotent unset",
			edits: [][2]string{{"      idempotent: true\n", ""}},
			want:  []Change{{Kind: IdempotentChanged, Function: "fn.example.com/SetNamespace", Version: "v1", Old: "true", New: "unset"}},
		},
		{
			name: "schema fields added, removed, made required",
			edits: [][2]string{
				{"required: [namespace]", "required: [namespace, mode, replicas]"},
				{"            namespace: {type: string}\n", "            namespace: {type: string}\n            replicas: {type: integer}\n            note: {type: string}\n"},
				{"                  kind: {type: string}", "                  name: {type: string}"},
			},
			want: []Change{
				{Kind: FieldRemoved, Function: "fn.example.com/SetNamespace", Version: "v1", Field: "exclude[].kind", Breaking: true},
				{Kind: FieldAdded, Function: "fn.example.com/SetNamespace", Version: "v1", Field: "exclude[].name"},
				{Kind: FieldRequired, Function: "fn.example.com/SetNamespace", Version: "v1", Field: "mode", Breaking: true},
				{Kind: FieldAdded, Function: "fn.example.com/SetNamespace", Version: "v1", Field: "note"},
				{Kind: FieldAdded, Function: "fn.example.com/SetNamespace", Version: "v1", Field: "replicas", New: "required", Breaking: true},
			},
		},
		{
			name:  "field made optional, type changed, enum narrowed",
			edits: [][2]string{{"required: [namespace]", "required: []"}, {"namespace: {type: string}", "namespace: {type: [string, 'null']}"}, {"enum: [fast, safe]", "enum: [safe]"}},
			want: []Change{
				{Kind: EnumNarrowed, Function: "fn.example.com/SetNamespace", Version: "v1", Field: "mode", Old: "fast", Breaking: true},
				{Kind: FieldOptional, Function: "fn.example.com/SetNamespace", Version: "v1", Field: "namespace"},
				{Kind: FieldTypeChanged, Function: "fn.example.com/SetNamespace", Version: "v1", Field: "namespace", Old: "string", New: "null|string", Breaking: true},
			},
		},
		{
			name: "schema added",
			edits: [][2]string{{"    - name: v1\n      runtime:\n        starlark:",
				"    - name: v1\n      schema:\n        openAPIV3Schema: {type: object}\n      runtime:\n        starlark:"}},
			want: []Change{{Kind: SchemaAdded, Function: "fn.example.com/SetLabels", Version: "v1", Breaking: true}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			text := base
			for _, e := range tt.edits {
				if !strings.Contains(text, e[0]) {
					t.Fatalf("edit %q does not apply", e[0])
				}
				text = strings.Replace(text, e[0], e[1], 1)
			}
			got := Catalogs(load(t, base), load(t, text))
			// every breaking change says why; the reasons' wording is not the test's business
			for _, c := range got {
				if c.Breaking != (c.Reason != "") {
					t.Errorf("%s: breaking %v with reason %q", c.Kind, c.Breaking, c.Reason)
				}
			}
			if d := cmp.Diff(tt.want, got, cmpopts.IgnoreFields(Change{}, "Reason"), cmpopts.EquateEmpty()); d != "" {
				t.Errorf("changes (-want +got):\n%s", d)
			}
		})
	}
}

func TestSchemaRemoved(t *testing.T) {
	t.Parallel()
	got := Schemas(map[string]any{"type": "object"}, nil)
	want := []Change{{Kind: SchemaRemoved}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

func TestNewReportCounts(t *testing.T) {
	t.Parallel()
	old := load(t, base)
	changed := load(t, strings.Replace(strings.Replace(base, "names: {kind: SetLabels}", "names: {kind: Other}", 1), "name: platform", "name: p2", 1))
	r := NewReport("a.yaml", "b.yaml", old, changed)
	if r.Breaking != 1 || len(r.Changes) != 3 {
		t.Errorf("breaking %d of %d changes, want 1 of 3: %+v", r.Breaking, len(r.Changes), r.Changes)
	}
	if r := NewReport("a", "a", old, old); r.Changes == nil || len(r.Changes) != 0 {
		t.Errorf("identical catalogs: %#v, want an empty, non-nil list (JSON [])", r.Changes)
	}
}

// TestSchemaFanOutIsBounded: aliases can make a small document a schema of 2^40 fields; the walk
// stops at its budget.
func TestSchemaFanOutIsBounded(t *testing.T) {
	t.Parallel()
	s := map[string]any{"type": "string"}
	for range 40 {
		s = map[string]any{"properties": map[string]any{"a": s, "b": s}}
	}
	other := map[string]any{"properties": map[string]any{}}
	if got := Schemas(s, s); len(got) != 0 {
		t.Errorf("identical schemas: %d changes", len(got))
	}
	if got := Schemas(other, s); len(got) != 2 {
		t.Errorf("fields added at the top: %d changes, want 2", len(got))
	}
}
