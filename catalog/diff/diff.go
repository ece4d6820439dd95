// Package diff compares two versions of a function catalog the way a reviewer of a catalog update
// reads it: which functions and versions came and went, which runtimes and digests changed, and how
// each version's functionConfig schema moved (fields added, removed, made required). Each change
// says whether it breaks users of the old catalog, and why; docs/catalog-diff.md explains the rules.
package diff

import (
	"fmt"
	"slices"
	"strings"

	"github.com/krm-catalog/krm-catalog/catalog"
)

// Kind names a change. The values are stable: they appear in --format json.
type Kind string

// The kinds of change.
const (
	CatalogRenamed     Kind = "catalog-renamed"
	FunctionAdded      Kind = "function-added"
	FunctionRemoved    Kind = "function-removed"
	PublisherChanged   Kind = "publisher-changed"
	VersionAdded       Kind = "version-added"
	VersionRemoved     Kind = "version-removed"
	RuntimeAdded       Kind = "runtime-added"
	RuntimeRemoved     Kind = "runtime-removed"
	SourceChanged      Kind = "source-changed"
	DigestChanged      Kind = "digest-changed"
	RequirementAdded   Kind = "requirement-added"
	RequirementRemoved Kind = "requirement-removed"
	ServerModeChanged  Kind = "server-mode-changed"
	IdempotentChanged  Kind = "idempotent-changed"
	SchemaAdded        Kind = "schema-added"
	SchemaRemoved      Kind = "schema-removed"
	FieldAdded         Kind = "field-added"
	FieldRemoved       Kind = "field-removed"
	FieldRequired      Kind = "field-required"
	FieldOptional      Kind = "field-optional"
	FieldTypeChanged   Kind = "field-type-changed"
	EnumNarrowed       Kind = "enum-narrowed"
)

// Change is one difference between the old and the new catalog.
type Change struct {
	Kind Kind `json:"kind"`
	// Function is group/Kind; empty for changes of the catalog itself.
	Function string `json:"function,omitempty"`
	// Version is the functionConfig version the change is in, when it is in one.
	Version string `json:"version,omitempty"`
	// Runtime is "container", "exec linux/amd64" or "starlark" for runtime changes.
	Runtime string `json:"runtime,omitempty"`
	// Field is the schema path of a schema change: spec.replicas, exclude[].kind.
	Field string `json:"field,omitempty"`
	Old   string `json:"old,omitempty"`
	New   string `json:"new,omitempty"`
	// Breaking says that a user of the old catalog may fail, or run something else, with the new
	// one; Reason says how.
	Breaking bool   `json:"breaking"`
	Reason   string `json:"reason,omitempty"`
}

// Subject is where the change is: function, version, runtime and field, as one string.
func (c Change) Subject() string {
	parts := []string{}
	for _, s := range []string{c.Function, c.Version, c.Runtime, c.Field} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, " ")
}

// Report is the comparison of two catalogs.
type Report struct {
	Old     string   `json:"old"`
	New     string   `json:"new"`
	Changes []Change `json:"changes"`
	// Breaking counts the breaking changes.
	Breaking int `json:"breaking"`
	// Lagging lists where the new catalog's curated entries are behind what their publishers
	// publish now (Lagging), when that was asked; they are not changes between the two catalogs.
	Lagging []Change `json:"lagging,omitempty"`
}

// Catalogs compares the old and the new catalog. The changes come in a stable order: by function,
// then version, with the catalog's own changes first.
func Catalogs(old, new *catalog.Catalog) []Change {
	var out []Change
	if old.Name != new.Name {
		out = append(out, Change{Kind: CatalogRenamed, Old: old.Name, New: new.Name})
	}
	of, nf := functions(old), functions(new)
	for _, id := range keys(of, nf) {
		o, inOld := of[id]
		n, inNew := nf[id]
		switch {
		case !inNew:
			out = append(out, Change{Kind: FunctionRemoved, Function: id, Old: versionNames(o), Breaking: true,
				Reason: "function configs of this kind no longer resolve"})
		case !inOld:
			out = append(out, Change{Kind: FunctionAdded, Function: id, New: versionNames(n)})
		default:
			out = append(out, function(id, o, n)...)
		}
	}
	return out
}

// NewReport compares and counts.
func NewReport(oldRef, newRef string, old, new *catalog.Catalog) Report {
	r := Report{Old: oldRef, New: newRef, Changes: Catalogs(old, new)}
	if r.Changes == nil {
		r.Changes = []Change{}
	}
	for _, c := range r.Changes {
		if c.Breaking {
			r.Breaking++
		}
	}
	return r
}

// fn is a function with its versions by name, merged over repeated entries the way resolution
// reads them: the first definition of a version wins.
type fn struct {
	publisher string
	versions  map[string]catalog.Version
	order     []string
}

func functions(c *catalog.Catalog) map[string]*fn {
	out := map[string]*fn{}
	for _, f := range c.Functions {
		e, ok := out[f.ID()]
		if !ok {
			e = &fn{publisher: f.Publisher, versions: map[string]catalog.Version{}}
			out[f.ID()] = e
		}
		for _, v := range f.Versions {
			if _, dup := e.versions[v.Name]; !dup {
				e.versions[v.Name] = v
				e.order = append(e.order, v.Name)
			}
		}
	}
	return out
}

func versionNames(f *fn) string { return strings.Join(f.order, ", ") }

// keys returns the union of the maps' keys, sorted.
func keys[V any](a, b map[string]V) []string {
	var out []string
	for k := range a {
		out = append(out, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

func function(id string, o, n *fn) []Change {
	var out []Change
	if o.publisher != n.publisher {
		out = append(out, Change{Kind: PublisherChanged, Function: id, Old: o.publisher, New: n.publisher, Breaking: true,
			Reason: "signatures and trust are checked against another publisher"})
	}
	for _, name := range keys(o.versions, n.versions) {
		ov, inOld := o.versions[name]
		nv, inNew := n.versions[name]
		switch {
		case !inNew:
			out = append(out, Change{Kind: VersionRemoved, Function: id, Version: name, Breaking: true,
				Reason: "function configs of this apiVersion no longer resolve"})
		case !inOld:
			out = append(out, Change{Kind: VersionAdded, Function: id, Version: name})
		default:
			out = append(out, version(id, ov, nv)...)
		}
	}
	return out
}

func version(id string, o, n catalog.Version) []Change {
	at := Change{Function: id, Version: o.Name}
	with := func(c Change) Change {
		c.Function, c.Version = at.Function, at.Version
		return c
	}
	var out []Change
	for _, c := range runtimes(o.Runtime, n.Runtime) {
		out = append(out, with(c))
	}
	if o.SpecV2() != n.SpecV2() {
		out = append(out, with(Change{Kind: ServerModeChanged, Old: fmt.Sprint(o.SpecV2()), New: fmt.Sprint(n.SpecV2())}))
	}
	if oi, ni := idempotent(o), idempotent(n); oi != ni {
		out = append(out, with(Change{Kind: IdempotentChanged, Old: oi, New: ni}))
	}
	for _, c := range Schemas(o.Schema, n.Schema) {
		out = append(out, with(c))
	}
	return out
}

func idempotent(v catalog.Version) string {
	if v.Idempotent == nil {
		return "unset"
	}
	return fmt.Sprint(*v.Idempotent)
}

// runtimeEntry is one runnable thing of a version: the container, one exec platform, the script.
type runtimeEntry struct {
	source, digest string
	needs          []string
}

func runtimeEntries(r catalog.Runtime) map[string]runtimeEntry {
	out := map[string]runtimeEntry{}
	if c := r.Container; c != nil {
		e := runtimeEntry{source: imageName(c.Image), digest: containerDigest(*c)}
		if c.RequireNetwork {
			e.needs = append(e.needs, "network")
		}
		if c.RequireStorageMount {
			e.needs = append(e.needs, "storage mount")
		}
		out["container"] = e
	}
	if x := r.Exec; x != nil {
		for _, p := range x.Platforms {
			out["exec "+p.OS+"/"+p.Arch] = runtimeEntry{source: p.URI, digest: prefixed(p.SHA256)}
		}
	}
	if s := r.Starlark; s != nil {
		d := prefixed(s.SHA256)
		src := s.Source()
		if d == "" {
			if name, dg, ok := strings.Cut(src, "@"); ok {
				src, d = name, dg
			}
		}
		out["starlark"] = runtimeEntry{source: src, digest: d}
	}
	return out
}

// imageName is the image without its digest: the digest is compared on its own.
func imageName(image string) string {
	name, _, _ := strings.Cut(image, "@")
	return name
}

func containerDigest(c catalog.ContainerRuntime) string {
	if _, d, ok := strings.Cut(c.PinnedImage(), "@"); ok {
		return d
	}
	return ""
}

func prefixed(hex string) string {
	if hex == "" {
		return ""
	}
	return "sha256:" + hex
}

func runtimes(o, n catalog.Runtime) []Change {
	oe, ne := runtimeEntries(o), runtimeEntries(n)
	var out []Change
	for _, name := range keys(oe, ne) {
		a, inOld := oe[name]
		b, inNew := ne[name]
		switch {
		case !inNew:
			reason := "users who run this runtime (--runtime, or the only one their machine has) can no longer run the function"
			if strings.HasPrefix(name, "exec ") {
				reason = "the function no longer runs as an executable on this platform"
			}
			out = append(out, Change{Kind: RuntimeRemoved, Runtime: name, Old: a.source, Breaking: true, Reason: reason})
		case !inOld:
			out = append(out, Change{Kind: RuntimeAdded, Runtime: name, New: b.source})
		default:
			if a.source != b.source {
				out = append(out, Change{Kind: SourceChanged, Runtime: name, Old: a.source, New: b.source})
			}
			if a.digest != b.digest {
				out = append(out, Change{Kind: DigestChanged, Runtime: name, Old: a.digest, New: b.digest})
			}
			for _, need := range b.needs {
				if !slices.Contains(a.needs, need) {
					out = append(out, Change{Kind: RequirementAdded, Runtime: name, New: need, Breaking: true,
						Reason: "runs now need --allow-network or --mount, which the old catalog did not ask for"})
				}
			}
			for _, need := range a.needs {
				if !slices.Contains(b.needs, need) {
					out = append(out, Change{Kind: RequirementRemoved, Runtime: name, Old: need})
				}
			}
		}
	}
	return out
}

// Schemas compares two openAPIV3Schemas (nil for none) field by field. Paths name object
// properties with dots and array items with [].
func Schemas(o, n map[string]any) []Change {
	switch {
	case o == nil && n == nil:
		return nil
	case o == nil:
		return []Change{{Kind: SchemaAdded, Breaking: true,
			Reason: "configs were not checked before; those that do not match the new schema are refused"}}
	case n == nil:
		return []Change{{Kind: SchemaRemoved}}
	}
	var out []Change
	budget := maxFields
	walk(&out, "", o, n, 0, &budget)
	return out
}

// maxDepth and maxFields bound the walk: schemas are outside input, and anchors and aliases can make
// them nest without end or fan out exponentially (a schema whose properties all alias one subtree,
// level after level). Real schemas stay far below both.
const (
	maxDepth  = 64
	maxFields = 10000
)

func walk(out *[]Change, path string, o, n map[string]any, depth int, budget *int) {
	if depth > maxDepth || *budget <= 0 {
		return
	}
	*budget--
	if ot, nt := typeOf(o), typeOf(n); ot != nt && ot != "" && nt != "" {
		*out = append(*out, Change{Kind: FieldTypeChanged, Field: fieldName(path), Old: ot, New: nt, Breaking: true,
			Reason: "configs that set it as the old type are refused"})
	}
	if removed := enumRemoved(o, n); len(removed) > 0 {
		*out = append(*out, Change{Kind: EnumNarrowed, Field: fieldName(path), Old: strings.Join(removed, ", "), Breaking: true,
			Reason: "configs that use the removed values are refused"})
	}
	op, np := props(o), props(n)
	oreq, nreq := required(o), required(n)
	for _, name := range keys(op, np) {
		p := join(path, name)
		a, inOld := op[name]
		b, inNew := np[name]
		switch {
		case !inNew:
			c := Change{Kind: FieldRemoved, Field: p, Breaking: true,
				Reason: "configs that set it are refused, or the setting is silently ignored"}
			*out = append(*out, c)
		case !inOld:
			c := Change{Kind: FieldAdded, Field: p}
			if nreq[name] {
				c.Breaking, c.New, c.Reason = true, "required", "existing configs do not set it"
			}
			*out = append(*out, c)
		default:
			if !oreq[name] && nreq[name] {
				*out = append(*out, Change{Kind: FieldRequired, Field: p, Breaking: true, Reason: "existing configs that omit it are refused"})
			}
			if oreq[name] && !nreq[name] {
				*out = append(*out, Change{Kind: FieldOptional, Field: p})
			}
			walk(out, p, a, b, depth+1, budget)
		}
	}
	// a field required but not described as a property (required: [x] with no properties.x)
	for _, name := range sortedSet(nreq) {
		if _, described := np[name]; !described && !oreq[name] {
			*out = append(*out, Change{Kind: FieldRequired, Field: join(path, name), Breaking: true, Reason: "existing configs that omit it are refused"})
		}
	}
	if oi, ni := obj(o["items"]), obj(n["items"]); oi != nil && ni != nil {
		walk(out, path+"[]", oi, ni, depth+1, budget)
	}
}

func fieldName(path string) string {
	if path == "" {
		return "(functionConfig)"
	}
	return path
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func typeOf(s map[string]any) string {
	switch t := s["type"].(type) {
	case string:
		return t
	case []any:
		var names []string
		for _, x := range t {
			if s, ok := x.(string); ok {
				names = append(names, s)
			}
		}
		slices.Sort(names)
		return strings.Join(names, "|")
	}
	return ""
}

func enumRemoved(o, n map[string]any) []string {
	oe, _ := o["enum"].([]any)
	ne, ok := n["enum"].([]any)
	if len(oe) == 0 || !ok {
		// no enum in the new schema accepts every value: nothing narrowed
		return nil
	}
	have := map[string]bool{}
	for _, v := range ne {
		if k, ok := scalar(v); ok {
			have[k] = true
		}
	}
	var removed []string
	for _, v := range oe {
		if k, ok := scalar(v); ok && !have[k] {
			removed = append(removed, fmt.Sprint(v))
		}
	}
	return removed
}

// scalar names an enum value by type and value. Only scalars are compared: an object or list in an
// enum is rare, and through aliases it can contain itself, which printing would never finish.
func scalar(v any) (string, bool) {
	switch v.(type) {
	case nil, string, bool, int, int64, uint64, float64:
		return fmt.Sprintf("%T:%v", v, v), true
	}
	return "", false
}

func props(s map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	for k, v := range obj(s["properties"]) {
		m := obj(v)
		if m == nil {
			m = map[string]any{}
		}
		out[k] = m
	}
	return out
}

func required(s map[string]any) map[string]bool {
	out := map[string]bool{}
	l, _ := s["required"].([]any)
	for _, v := range l {
		if name, ok := v.(string); ok {
			out[name] = true
		}
	}
	return out
}

func sortedSet(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func obj(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}
