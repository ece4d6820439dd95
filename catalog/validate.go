package catalog

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/krm-catalog/krm-catalog/internal/docbudget"
	"github.com/krm-catalog/krm-catalog/schemas"
)

// Validator checks documents against their schema and the semantic rules of docs/design.md §3.
// It is safe for concurrent use.
type Validator struct {
	schemas *schemas.Set
}

// NewValidator compiles the embedded schemas.
func NewValidator() (*Validator, error) {
	s, err := schemas.New()
	if err != nil {
		return nil, fmt.Errorf("new validator: %w", err)
	}
	return &Validator{schemas: s}, nil
}

// Options tune validation.
type Options struct {
	// IgnoreUnknownKinds reports a document of a kind krm-catalog does not validate as info instead
	// of an error; used when walking a directory that holds other YAML too.
	IgnoreUnknownKinds bool
	// Limits bound what reading the input may cost (DecodeContext); zero fields: DefaultLimits'.
	Limits docbudget.Limits
	// Shape is the input's docbudget.Scan, when the caller has it: the input is not scanned again.
	Shape *docbudget.Shape
}

// MaxFindings is how many findings a document reports at most; past it, one more says how many
// were left out. A document of a million wrong values would otherwise cost a finding, a message and
// a position for each.
const MaxFindings = 1000

// Validate decodes every document in data and validates it. The documents come back for callers
// that go on to use them; findings are sorted.
func (v *Validator) Validate(file string, data []byte, opts Options) ([]*Document, Findings) {
	docs, findings, _ := v.ValidateContext(context.Background(), file, data, opts)
	return docs, findings
}

// ValidateContext is Validate within opts.Limits, stopped when ctx ends. err is DecodeContext's:
// a read past a limit (its finding is among the findings, and no document comes back), or ctx's
// error when it ended the work.
func (v *Validator) ValidateContext(ctx context.Context, file string, data []byte, opts Options) ([]*Document, Findings, error) {
	docs, findings, err := decodeContext(ctx, file, data, opts.Limits, opts.Shape)
	if err != nil {
		findings.Sort()
		return nil, findings, err
	}
	for _, d := range docs {
		fs, err := v.validateDocument(ctx, d, opts)
		if err != nil {
			return nil, nil, err
		}
		findings = append(findings, fs...)
	}
	findings.Sort()
	return docs, findings, nil
}

// SchemaKind returns the schema that applies to a document, and false when krm-catalog does not
// validate documents of its kind.
func SchemaKind(d *Document) (schemas.Kind, bool) {
	switch d.Kind {
	case KindCatalog, KindCatalogShort:
		return schemas.Catalog, true
	case KindDefinition:
		return schemas.Definition, true
	case KindResourceList:
		return schemas.ResourceList, true
	case KindComposition:
		return schemas.Composition, true
	}
	return "", false
}

// ValidateDocument validates one decoded document.
func (v *Validator) ValidateDocument(d *Document, opts Options) Findings {
	fs, _ := v.validateDocument(context.Background(), d, opts)
	return fs
}

// validateDocument is ValidateDocument stopped, between its steps, when ctx ends.
func (v *Validator) validateDocument(ctx context.Context, d *Document, opts Options) (Findings, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c := &checker{doc: d}
	kind, ok := SchemaKind(d)
	switch {
	case !ok && d.Kind == "":
		c.add(SeverityError, "", "missing kind: expected one of %s", knownKinds)
	case !ok && opts.IgnoreUnknownKinds:
		c.add(SeverityInfo, "/kind", "skipped: kind %q is not one krm-catalog validates", d.Kind)
	case !ok:
		c.add(SeverityError, "/kind", "unsupported kind %q: expected one of %s", d.Kind, knownKinds)
	default:
		viols := v.schemas.Validate(kind, d.Value)
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		for _, viol := range viols {
			sev, msg := SeverityError, viol.Message
			if viol.Warning {
				sev = SeverityWarning
				if hint := hintFor(viol.Pointer); hint != "" {
					msg += ": " + hint
				}
			}
			c.add(sev, viol.Pointer, "%s", msg)
		}
		switch kind {
		case schemas.Catalog:
			cat, _ := DecodeCatalog(d)
			c.catalog(cat)
		case schemas.Definition:
			def, _ := DecodeDefinition(d)
			c.function(def.Function)
		case schemas.ResourceList:
			c.resourceList(d.Value)
		case schemas.Composition:
			c.composition(d.Value)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if kind == schemas.Catalog || kind == schemas.Definition {
		// the documents that are published, and read by other YAML readers
		fs, err := d.portable(ctx)
		if err != nil {
			return nil, err
		}
		c.out = append(c.out, fs...)
	}
	if len(c.out) > MaxFindings {
		// keep the errors first, so that what is left out is the least severe
		slices.SortStableFunc(c.out, func(a, b Finding) int { return severityRank(a.Severity) - severityRank(b.Severity) })
		left := len(c.out) - MaxFindings
		c.out = append(c.out[:MaxFindings], Finding{Severity: c.out[MaxFindings-1].Severity,
			Message: fmt.Sprintf("%d more findings of this document are not shown (at most %d are)", left, MaxFindings)})
	}
	for i := range c.out {
		c.out[i].File, c.out[i].Document = d.File, d.Index
		if c.out[i].Line == 0 {
			c.out[i].Line, c.out[i].Column = d.Position(c.out[i].Pointer)
		}
	}
	return c.out, nil
}

func severityRank(s Severity) int {
	switch s {
	case SeverityError:
		return 0
	case SeverityWarning:
		return 1
	}
	return 2
}

// knownKinds lists the kinds validate checks, for messages.
const knownKinds = KindCatalog + ", " + KindDefinition + ", " + KindResourceList + ", " + KindComposition

// checker collects the semantic findings of one document.
type checker struct {
	doc *Document
	out Findings
}

func (c *checker) add(sev Severity, pointer, format string, args ...any) {
	c.out = append(c.out, Finding{Severity: sev, Pointer: pointer, Message: fmt.Sprintf(format, args...)})
}

func (c *checker) catalog(cat *Catalog) {
	if fns, ok := obj(c.doc.Value["spec"])["krmFunctions"].([]any); ok && len(fns) == 0 {
		c.add(SeverityWarning, "/spec/krmFunctions", "the catalog lists no functions")
	}
	type gvk struct{ group, kind, version string }
	firstVersion := map[gvk]string{}
	firstFunction := map[string]string{}
	for _, f := range cat.Functions {
		c.function(f)
		if f.Group == "" || f.Kind == "" {
			continue
		}
		if prev, dup := firstFunction[f.ID()]; dup {
			c.add(SeverityWarning, f.Pointer, "function %s is listed again (first at %s); list all its versions in one entry", f.ID(), prev)
		} else {
			firstFunction[f.ID()] = f.Pointer
		}
		for j, ver := range f.Versions {
			key := gvk{f.Group, f.Kind, ver.Name}
			at := fmt.Sprintf("%s/versions/%d", f.Pointer, j)
			prev, dup := firstVersion[key]
			switch {
			case !dup:
				firstVersion[key] = at
			case ver.Name != "" && !strings.HasPrefix(prev, f.Pointer+"/"):
				// a duplicate inside one entry is reported by function()
				c.add(SeverityError, at+"/name", "duplicate function %s version %s (first at %s): resolution would silently pick the first", f.ID(), ver.Name, prev)
			}
		}
	}
}

// function checks one function's metadata, wherever it stands (catalog entry or definition spec).
func (c *checker) function(f Function) {
	if why := checkText(f.Description, false); why != "" {
		c.add(SeverityError, f.Pointer+"/description", "the description %s", why)
	}
	for i, t := range f.Tags {
		if why := checkText(t, true); why != "" {
			c.add(SeverityError, fmt.Sprintf("%s/tags/%d", f.Pointer, i), "tag %q %s", t, why)
		}
	}
	if f.Home != "" {
		if why := checkHTTPURL(f.Home); why != "" {
			c.add(SeverityError, f.Pointer+"/home", "home %s", why)
		}
	}
	seen := map[string]int{}
	for j, v := range f.Versions {
		at := fmt.Sprintf("%s/versions/%d", f.Pointer, j)
		if first, dup := seen[v.Name]; dup && v.Name != "" {
			c.add(SeverityError, at+"/name", "duplicate version %s (first at %s/versions/%d)", v.Name, f.Pointer, first)
		}
		seen[v.Name] = j
		c.version(f, v, at)
	}
}

func (c *checker) version(f Function, v Version, at string) {
	var missing []string
	raw := obj(schemas.Lookup(c.doc.Value, at))
	for _, field := range []string{"schema", "idempotent", "usage", "examples", "license"} {
		if _, ok := raw[field]; !ok {
			missing = append(missing, field)
		}
	}
	if len(missing) > 0 && raw != nil {
		c.add(SeverityWarning, at, "version %s lacks fields the KEP requires: %s", v.Name, strings.Join(missing, ", "))
	}
	if v.Usage != "" {
		if why := checkHTTPURL(v.Usage); why != "" {
			c.add(SeverityError, at+"/usage", "usage %s", why)
		}
	}
	for i, e := range v.Examples {
		if why := checkHTTPURL(e); why != "" {
			c.add(SeverityError, fmt.Sprintf("%s/examples/%d", at, i), "example %s", why)
		}
	}
	if v.License != "" {
		if why := checkLicense(v.License); why != "" {
			c.add(SeverityError, at+"/license", "%s", why)
		}
	}
	if v.Schema != nil {
		c.openAPISchema(v.Schema, at+"/schema/openAPIV3Schema")
	}
	rt := at + "/runtime"
	if v.Runtime.Container != nil {
		c.container(*v.Runtime.Container, rt+"/container")
	}
	if v.Runtime.Exec != nil {
		c.exec(*v.Runtime.Exec, rt+"/exec")
	}
	if v.Runtime.Starlark != nil {
		c.starlark(*v.Runtime.Starlark, rt+"/starlark")
	}
}

func (c *checker) openAPISchema(s map[string]any, at string) {
	if viols := schemas.CheckOpenAPIV3(s); len(viols) > 0 {
		for _, viol := range viols {
			c.add(SeverityError, at+viol.Pointer, "openAPIV3Schema does not compile: %s", viol.Message)
		}
		return
	}
	if t, ok := s["type"]; ok && t != "object" {
		c.add(SeverityWarning, at+"/type", "a functionConfig is an object; its schema should say type: object")
	}
}

func (c *checker) container(ct ContainerRuntime, at string) {
	if ct.Image == "" {
		return // the schema reports it
	}
	ref, err := ParseImage(ct.Image)
	if err != nil {
		c.add(SeverityError, at+"/image", "%v", err)
		return
	}
	if ref.Digest != "" && ct.SHA256 != "" && strings.TrimPrefix(ref.Digest, "sha256:") != ct.SHA256 {
		c.add(SeverityError, at+"/sha256", "sha256 %s disagrees with the digest in the image reference (%s)", ct.SHA256, ref.Digest)
	}
	if ref.Digest != "" || ct.SHA256 != "" {
		return
	}
	switch {
	case IsSemverTag(ref.Tag):
		c.add(SeverityError, at+"/image", "image %q has the semver tag %s but no digest: add sha256 or pin it as name@sha256:<digest> (KEP-2906 requires it)", ct.Image, ref.Tag)
	case ref.Tag != "":
		c.add(SeverityWarning, at+"/image", "image %q is not pinned by digest: what tag %s names can change; add sha256", ct.Image, ref.Tag)
	default:
		c.add(SeverityWarning, at+"/image", "image %q has neither tag nor digest, so it means :latest; pin it with sha256", ct.Image)
	}
}

func (c *checker) exec(e ExecRuntime, at string) {
	seen := map[string]int{}
	for i, p := range e.Platforms {
		pat := fmt.Sprintf("%s/platforms/%d", at, i)
		if p.OS != "" && p.Arch != "" {
			key := p.OS + "/" + p.Arch
			if first, dup := seen[key]; dup {
				c.add(SeverityError, pat, "platform %s is listed twice (first at %s/platforms/%d)", key, at, first)
			}
			seen[key] = i
		}
		if p.URI != "" {
			if why := checkFetchURI(p.URI); why != "" {
				c.add(SeverityError, pat+"/uri", "uri %s", why)
			}
		}
		if p.Bin != "" {
			if why := checkBinPath(p.Bin); why != "" {
				c.add(SeverityError, pat+"/bin", "%s", why)
			}
		}
	}
}

func (c *checker) starlark(s StarlarkRuntime, at string) {
	raw := schemas.Lookup(c.doc.Value, at)
	if m, isObj := raw.(map[string]any); isObj {
		_, hasURI := m["uri"]
		_, hasRef := m["ref"]
		if hasURI == hasRef {
			c.add(SeverityError, at, "a starlark runtime needs exactly one of uri or ref")
			return
		}
	}
	src, field := s.URI, at
	if _, isObj := raw.(map[string]any); isObj {
		field = at + "/uri"
		if s.Ref != "" {
			src, field = s.Ref, at+"/ref"
		}
	}
	if src == "" {
		return
	}
	if s.Ref != "" {
		if _, err := ParseImage(s.Ref); err != nil {
			c.add(SeverityError, field, "%v", err)
			return
		}
	} else if why := checkFetchURI(src); why != "" {
		c.add(SeverityError, field, "starlark %s", why)
		return
	}
	if s.SHA256 == "" && ociDigest(src) == "" {
		c.add(SeverityError, at, "starlark script %q is not pinned: give sha256, or reference it by digest (oci://name@sha256:...)", src)
	}
}

const (
	pathAnnotation       = "internal.config.kubernetes.io/path"
	indexAnnotation      = "internal.config.kubernetes.io/index"
	legacyPathAnnotation = "config.kubernetes.io/path"
)

func (c *checker) resourceList(v map[string]any) {
	seen := map[string]int{}
	for i, item := range list(v["items"]) {
		ann := obj(obj(obj(item)["metadata"])["annotations"])
		annPtr := fmt.Sprintf("/items/%d/metadata/annotations", i)
		nonString := false
		for _, name := range []string{pathAnnotation, indexAnnotation, legacyPathAnnotation} {
			if val, ok := ann[name]; ok {
				if _, isStr := val.(string); !isStr {
					c.add(SeverityError, annPtr+"/"+schemas.EscapeToken(name), "annotation values are strings: quote %v", val)
					nonString = true
				}
			}
		}
		if nonString {
			continue
		}
		p := str(ann[pathAnnotation])
		if p == "" {
			p = str(ann[legacyPathAnnotation])
		}
		if p == "" {
			continue
		}
		idx := str(ann[indexAnnotation])
		if idx == "" {
			idx = "0"
		}
		if _, err := strconv.Atoi(idx); err != nil {
			c.add(SeverityError, annPtr+"/"+schemas.EscapeToken(indexAnnotation), "index annotation %q is not a number", idx)
			continue
		}
		key := p + "#" + idx
		if first, dup := seen[key]; dup {
			c.add(SeverityError, annPtr, "item has the same path %q and index %s as item %d: writing both would overwrite one", p, idx, first)
		}
		seen[key] = i
	}
}

func (c *checker) composition(v map[string]any) {
	seen := map[string]int{}
	for i, t := range list(v["transformers"]) {
		tm := obj(t)
		name := str(obj(tm["metadata"])["name"])
		if name == "" {
			name = KebabName(str(tm["kind"]))
		}
		key := str(tm["apiVersion"]) + "/" + str(tm["kind"]) + "/" + name
		if first, dup := seen[key]; dup {
			c.add(SeverityError, fmt.Sprintf("/transformers/%d", i), "transformer %s %s named %q appears twice (first at /transformers/%d); give each instance its own metadata.name", str(tm["apiVersion"]), str(tm["kind"]), name, first)
		}
		seen[key] = i
	}
}
