// Package composition consolidates a KEP-2299 Composition into one ordered list of transformers and
// runs it: transformersFrom imports (prepend or append, recursively, each import consolidated
// first), transformerOverrides applied to imported transformers as strategic merge patches,
// the Composition's own transformers, and transformerOrder. Kustomize built-in transformers and
// inline Kustomizations run through the kustomize API library; other transformers are KRM
// functions resolved through the catalogs.
package composition

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/kustomize/api/filters/patchstrategicmerge"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/catalog"
)

// Constants of the Composition API.
const (
	APIVersion = "kustomize.config.k8s.io/v1alpha1"
	Kind       = "Composition"
	// FileName is the file a Composition directory holds.
	FileName = "composition.yaml"
	// BuiltinAPIVersion marks a kustomize built-in transformer.
	BuiltinAPIVersion = "builtin"
)

// ErrInvalid: a Composition cannot be consolidated.
var ErrInvalid = errors.New("invalid composition")

// maxImportDepth bounds transformersFrom chains (cycles are detected before that).
const maxImportDepth = 64

// Transformer is one transformer of the consolidated list.
type Transformer struct {
	// Config is the transformer's configuration (a function config, a built-in's config, or an
	// inline Kustomization).
	Config *yaml.RNode
	// File is the composition file that declared it; relative paths in its config resolve against
	// the directory of that file.
	File string
	// Outside: a transformerOverrides entry from another directory set a path of the config that
	// leads out of Dir (rewritten relative to Dir), so kustomize must load it from there.
	Outside bool
}

// Dir is the directory relative paths of the transformer resolve against.
func (t Transformer) Dir() string { return filepath.Dir(t.File) }

// ID is apiVersion, kind and name (the name defaulted to the kind in kebab case).
func (t Transformer) ID() string { return id(t.Config) }

func id(n *yaml.RNode) string {
	v := n.GetApiVersion()
	if v == "" {
		v = BuiltinAPIVersion
	}
	return v + " " + n.GetKind() + " " + name(n)
}

func name(n *yaml.RNode) string {
	if nm := n.GetName(); nm != "" {
		return nm
	}
	return catalog.KebabName(n.GetKind())
}

// Consolidated is a Composition with its imports resolved: the transformers in the order they run,
// and the catalogs of the whole tree (the Composition's own first, then its imports', in order,
// without repeats). Relative catalog paths are resolved against the file that names them.
type Consolidated struct {
	Transformers []Transformer
	Catalogs     []string
}

// Load reads path (a composition.yaml, or a directory holding one) and consolidates it.
func Load(path string) (*Consolidated, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		if _, err := os.Stat(filepath.Join(path, "kustomization.yaml")); err == nil {
			return nil, fmt.Errorf("%w: %s holds both %s and kustomization.yaml; KEP-2299 makes that an error", ErrInvalid, path, FileName)
		}
		path = filepath.Join(path, FileName)
	}
	v, err := catalog.NewValidator()
	if err != nil {
		return nil, err
	}
	l := &loader{val: v}
	return l.load(path, nil)
}

type loader struct {
	val *catalog.Validator
}

func (l *loader) load(file string, stack []string) (*Consolidated, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return nil, err
	}
	for _, s := range stack {
		if s == abs {
			return nil, fmt.Errorf("%w: transformersFrom cycle: %s -> %s", ErrInvalid, strings.Join(stack, " -> "), abs)
		}
	}
	if len(stack) >= maxImportDepth {
		return nil, fmt.Errorf("%w: transformersFrom nested more than %d deep", ErrInvalid, maxImportDepth)
	}
	stack = append(stack, abs)
	doc, err := l.read(file)
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(file)

	var imported []Transformer
	var appendMode []bool // per imported transformer: from an importMode: append import
	var catalogs []string
	for _, c := range stringList(doc, "catalogs") {
		catalogs = append(catalogs, localRef(dir, c))
	}
	imports, err := doc.Pipe(yaml.Lookup("transformersFrom"))
	if err != nil {
		return nil, err
	}
	if imports != nil {
		for _, imp := range imports.YNode().Content {
			in := yaml.NewRNode(imp)
			p := in.Field("path")
			if p == nil {
				return nil, fmt.Errorf("%w: %s: a transformersFrom entry needs a path", ErrInvalid, file)
			}
			target := filepath.Join(dir, filepath.FromSlash(p.Value.YNode().Value))
			if st, err := os.Stat(target); err == nil && st.IsDir() {
				target = filepath.Join(target, FileName)
			}
			sub, err := l.load(target, stack)
			if err != nil {
				return nil, fmt.Errorf("%s: transformersFrom %s: %w", file, p.Value.YNode().Value, err)
			}
			appendIt := false
			if m := in.Field("importMode"); m != nil {
				appendIt = m.Value.YNode().Value == "append"
			}
			for _, t := range sub.Transformers {
				imported = append(imported, t)
				appendMode = append(appendMode, appendIt)
			}
			catalogs = append(catalogs, sub.Catalogs...)
		}
	}
	imported, appendMode, err = applyOverrides(doc, imported, appendMode, file)
	if err != nil {
		return nil, err
	}
	var prepend, appended []Transformer
	for i, t := range imported {
		if appendMode[i] {
			appended = append(appended, t)
		} else {
			prepend = append(prepend, t)
		}
	}

	var own []Transformer
	if ts, err := doc.Pipe(yaml.Lookup("transformers")); err != nil {
		return nil, err
	} else if ts != nil {
		for _, t := range ts.YNode().Content {
			own = append(own, Transformer{Config: yaml.NewRNode(t), File: file})
		}
	}
	list := append(append(append([]Transformer(nil), prepend...), own...), appended...)
	if err := checkUnique(list, file); err != nil {
		return nil, err
	}
	if list, err = reorder(doc, list, file); err != nil {
		return nil, err
	}
	return &Consolidated{Transformers: list, Catalogs: dedupe(catalogs)}, nil
}

func (l *loader) read(file string) (*yaml.RNode, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	docs, findings := l.val.Validate(file, data, catalog.Options{})
	var errs []string
	for _, f := range findings {
		// the KEP's schema closes every Composition object (additionalProperties: false): an
		// unknown field is an error here, where validate only warns
		if f.Severity == catalog.SeverityWarning && strings.HasPrefix(f.Message, "unknown field") {
			f.Severity = catalog.SeverityError
			if f.Pointer == "/modules" {
				f.Message += ": modules is KEP-2906 story 3's draft spelling; a Composition lists transformers (KEP-2299)"
			}
		}
		if f.Severity == catalog.SeverityError {
			errs = append(errs, f.String())
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w:\n  %s", ErrInvalid, strings.Join(errs, "\n  "))
	}
	if len(docs) != 1 || docs[0].Kind != Kind {
		return nil, fmt.Errorf("%w: %s must hold one %s document", ErrInvalid, file, Kind)
	}
	node, err := yaml.Parse(string(docs[0].Raw))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalid, file, err)
	}
	return node, nil
}

func stringList(n *yaml.RNode, field string) []string {
	f := n.Field(field)
	if f == nil || f.Value.YNode().Kind != yaml.SequenceNode {
		return nil
	}
	var out []string
	for _, c := range f.Value.YNode().Content {
		out = append(out, c.Value)
	}
	return out
}

// localRef resolves a relative catalog path against the directory of the composition naming it;
// other references are kept as written.
func localRef(dir, ref string) string {
	if strings.Contains(ref, "://") || strings.HasPrefix(ref, "git::") || filepath.IsAbs(ref) {
		return ref
	}
	return filepath.ToSlash(filepath.Join(dir, ref))
}

func dedupe(list []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range list {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// applyOverrides patches the imported transformers with transformerOverrides, strategic merge
// patches matched by apiVersion, kind and name. An override that matches no imported transformer is
// an error: it would otherwise be silently ignored. A patch with $patch: delete removes the
// transformer.
func applyOverrides(doc *yaml.RNode, imported []Transformer, tags []bool, file string) ([]Transformer, []bool, error) {
	ovs, err := doc.Pipe(yaml.Lookup("transformerOverrides"))
	if err != nil || ovs == nil {
		return imported, tags, err
	}
	out := append([]Transformer(nil), imported...)
	tags = append([]bool(nil), tags...)
	for _, o := range ovs.YNode().Content {
		patch := yaml.NewRNode(o)
		want := id(patch)
		found := false
		for i := 0; i < len(out); i++ {
			if out[i].ID() != want {
				continue
			}
			found = true
			p := patch.Copy()
			if rebasePaths(p, filepath.Dir(file), out[i].Dir()) {
				out[i].Outside = true
			}
			res, err := patchstrategicmerge.Filter{Patch: p}.Filter([]*yaml.RNode{out[i].Config.Copy()})
			if err != nil {
				return nil, nil, fmt.Errorf("%w: %s: override %s: %v", ErrInvalid, file, want, err)
			}
			if len(res) == 0 {
				out = append(out[:i], out[i+1:]...)
				tags = append(tags[:i], tags[i+1:]...)
				i--
				continue
			}
			out[i].Config = res[0]
		}
		if !found {
			return nil, nil, fmt.Errorf("%w: %s: transformerOverrides names %s, which no imported transformer is (overrides apply to transformers from transformersFrom)", ErrInvalid, file, want)
		}
	}
	return out, tags, nil
}

func checkUnique(list []Transformer, file string) error {
	seen := map[string]string{}
	for _, t := range list {
		k := t.ID()
		if first, dup := seen[k]; dup {
			return fmt.Errorf("%w: %s: two transformers are %s (from %s and %s); give each instance its own metadata.name", ErrInvalid, file, k, first, t.File)
		}
		seen[k] = t.File
	}
	return nil
}

// reorder applies transformerOrder. The order must name every transformer exactly once, by name
// alone when names are unique, else with kind and apiVersion too: a partial order would leave the
// position of the others to guesswork.
func reorder(doc *yaml.RNode, list []Transformer, file string) ([]Transformer, error) {
	ord, err := doc.Pipe(yaml.Lookup("transformerOrder"))
	if err != nil || ord == nil {
		return list, err
	}
	used := make([]bool, len(list))
	var out []Transformer
	for _, e := range ord.YNode().Content {
		entry := yaml.NewRNode(e)
		field := func(f string) string {
			if v := entry.Field(f); v != nil {
				return v.Value.YNode().Value
			}
			return ""
		}
		nm, kind, apiVersion := field("name"), field("kind"), field("apiVersion")
		match := -1
		for i, t := range list {
			if name(t.Config) != nm || (kind != "" && t.Config.GetKind() != kind) || (apiVersion != "" && t.Config.GetApiVersion() != apiVersion) {
				continue
			}
			if match >= 0 {
				return nil, fmt.Errorf("%w: %s: transformerOrder entry %q matches more than one transformer; add kind and apiVersion", ErrInvalid, file, nm)
			}
			match = i
		}
		switch {
		case match < 0:
			return nil, fmt.Errorf("%w: %s: transformerOrder names %q, which is not a transformer of the composition", ErrInvalid, file, nm)
		case used[match]:
			return nil, fmt.Errorf("%w: %s: transformerOrder names %q twice", ErrInvalid, file, nm)
		}
		used[match] = true
		out = append(out, list[match])
	}
	var missing []string
	for i, u := range used {
		if !u {
			missing = append(missing, name(list[i].Config))
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%w: %s: transformerOrder must list every transformer; it leaves out %s", ErrInvalid, file, strings.Join(missing, ", "))
	}
	return out, nil
}

// rebasePaths rewrites the paths an override writes, relative to the directory of its own file
// (from), as paths relative to the directory of the transformer it patches (to), where they are
// resolved. The fields are the path fields of kustomize's built-ins, of inline Kustomizations and
// of explicit runtimes. It reports whether a path now leads out of to.
func rebasePaths(patch *yaml.RNode, from, to string) bool {
	if filepath.Clean(from) == filepath.Clean(to) {
		return false
	}
	outside := false
	rebase := func(n *yaml.Node) {
		if n == nil || n.Kind != yaml.ScalarNode || n.Value == "" || filepath.IsAbs(n.Value) || strings.Contains(n.Value, "://") || strings.Contains(n.Value, "\n") {
			return
		}
		rel, err := filepath.Rel(to, filepath.Join(from, filepath.FromSlash(n.Value)))
		if err != nil {
			return
		}
		if rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			outside = true
		}
		n.Value = filepath.ToSlash(rel)
	}
	field := func(n *yaml.RNode, path ...string) *yaml.Node {
		v, err := n.Pipe(yaml.Lookup(path...))
		if err != nil || v == nil {
			return nil
		}
		return v.YNode()
	}
	for _, list := range []string{"files", "resources", "components", "paths"} {
		if seq := field(patch, list); seq != nil && seq.Kind == yaml.SequenceNode {
			for _, c := range seq.Content {
				rebase(c)
			}
		}
	}
	rebase(field(patch, "path"))
	rebase(field(patch, "runtime", "exec", "path"))
	rebase(field(patch, "runtime", "starlark", "path"))
	if seq := field(patch, "patches"); seq != nil && seq.Kind == yaml.SequenceNode {
		for _, c := range seq.Content {
			rebase(field(yaml.NewRNode(c), "path"))
		}
	}
	return outside
}
