// Package kustomize builds a kustomization as `kustomize build` v5.8.2 does, through the kustomize
// API library (sigs.k8s.io/kustomize/api krusty), and adds KEP-2906's catalogs to it: a
// Kustomization or Component may list `catalogs:`, and a transformers, generators or validators
// entry that is neither a kustomize built-in nor carries its own runtime is a KRM function resolved
// through them and run by krm-catalog's runtimes, in process where the runtime allows. A Composition
// (KEP-2299) may be named in resources (it generates) or transformers (it transforms).
//
// A tree with no such entry is handed to krusty untouched, so its output is kustomize's, byte for
// byte. Otherwise each kustomization that runs a catalog function is built in stages split at
// that function (see docs/runtimes.md, "kustomize build with catalogs").
package kustomize

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/fn"
	"github.com/krm-catalog/krm-catalog/fn/kustomize/composition"
	"github.com/krm-catalog/krm-catalog/fn/kustomize/internal/kustrun"
	"github.com/krm-catalog/krm-catalog/fn/runner"
	"github.com/krm-catalog/krm-catalog/internal/yamlpos"
)

// ErrInvalid: the kustomization tree cannot be built as written.
var ErrInvalid = errors.New("invalid kustomization")

// Preparers gives the step preparer that resolves functions through the catalogs of one
// kustomization (the command line's catalogs first, then these).
type Preparers interface {
	For(catalogs []string) (composition.StepPreparer, error)
}

// Declarations is implemented by Preparers that trust a local catalog by the value the
// Kustomization that lists it declares (KEP-2906: `catalogs: [catalog.yaml]` is trusted by
// --trusted-catalog catalog.yaml, from any working directory). Declared is told each local catalog,
// as For will be given it, and as the Kustomization wrote it; before For is called with it.
type Declarations interface {
	Declared(ref, written string)
}

// Options configure a build.
type Options struct {
	// Kustomize are `kustomize build`'s flags; nil is their defaults.
	Kustomize *Flags
	// Functions resolve and ready catalog functions; nil makes a catalog function an error.
	Functions Preparers
}

// Build builds the kustomization in dir and returns what `kustomize build` prints, with the
// results of the catalog functions that ran. Every catalog function of the tree is resolved, its
// config validated and its runtime fetched before anything runs; nothing is returned on error.
func Build(ctx context.Context, dir string, o Options) (_ []byte, _ []fn.FunctionResults, err error) {
	defer func() { err = unreadable(err) }()
	kopts, err := o.Kustomize.krustyOptions()
	if err != nil {
		return nil, nil, err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, nil, err
	}
	b := &builder{opts: o, krusty: kopts, fs: kustrun.NewFS(), layers: map[string]*layer{}}
	root, err := b.load(abs, nil)
	if err != nil {
		return nil, nil, err
	}
	if !b.rewritten {
		// nothing of krm-catalog's in the tree: kustomize's build, untouched
		out, err := kustrun.Build(filesys.MakeFsOnDisk(), abs, kopts)
		return out, nil, err
	}
	if err := b.prepare(ctx); err != nil {
		return nil, b.results, err
	}
	if !root.staged() {
		if err := b.ready(ctx, root); err != nil {
			return nil, b.results, err
		}
		out, err := kustrun.Build(b.fs, abs, kopts)
		return out, b.results, err
	}
	out, err := b.buildLayer(ctx, root, root.spec, nil)
	if err != nil {
		return nil, b.results, err
	}
	out, err = b.finish(root, out)
	return out, b.results, err
}

// unreadable makes a YAML syntax error anywhere in the tree (kustomize's reading of a resource
// included) ErrInvalid: input that cannot be read, as it is for every command, not a failed build.
func unreadable(err error) error {
	if err == nil || errors.Is(err, ErrInvalid) {
		return err
	}
	// kustomize keeps only the text of kyaml's error, marked as kustomize's own
	// kusterr.IsMalformedYAMLError looks for it
	if !yamlpos.IsSyntaxError(err) && !strings.Contains(err.Error(), "MalformedYAMLError") {
		return err
	}
	return fmt.Errorf("%w: %w", ErrInvalid, err)
}

// builder holds one build: the layers read, the files in memory, the results so far.
type builder struct {
	opts      Options
	krusty    *krusty.Options // opts.Kustomize mapped
	fs        *kustrun.FS
	layers    map[string]*layer // by directory
	fns       []*fnDoc          // every catalog function and Composition of the tree, in reading order
	results   []fn.FunctionResults
	rewritten bool // some kustomization must be given to krusty rewritten
	stage     int  // counter for the names of stage inputs
}

// layer is one kustomization of the tree that krm-catalog reads (reached from the root through
// local resources and components).
type layer struct {
	dir, file string
	kind      string
	spec      *yaml.RNode // the kustomization, without catalogs
	catalogs  []string    // resolved against dir
	entries   map[string]*entry
	bases     []*layer // resources that are local kustomizations
	comps     []*layer // components that are local
	built     bool
}

// entry is one transformers, generators or validators entry, or a resources file holding a
// Composition, that krm-catalog runs itself.
type entry struct {
	docs []*fnDoc
}

// fnDoc is one catalog function config, or one Composition.
type fnDoc struct {
	cfg   *yaml.RNode
	where string // the file and field that name it, for messages
	dir   string // relative paths of the function resolve against it
	layer *layer
	comp  *composition.Consolidated
	steps []fn.Step
}

// staged reports whether the layer must be built in stages.
func (l *layer) staged() bool {
	if l.hasFnEntry("transformers") || l.hasFnEntry("validators") || l.hasFnEntry("generators") {
		return true
	}
	for _, c := range l.comps {
		if c.staged() {
			return true
		}
	}
	return false
}

func (l *layer) hasFnEntry(field string) bool {
	for k := range l.entries {
		if strings.HasPrefix(k, field+"\x00") {
			return true
		}
	}
	return false
}

func entryKey(field, raw string) string { return field + "\x00" + raw }

// setFile puts spec, as YAML, in memory at path.
func (b *builder) setFile(path string, spec *yaml.RNode) error {
	s, err := spec.String()
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	b.fs.Set(path, []byte(s))
	return nil
}

// kustomizationFile finds the kustomization file of dir under the names kustomize accepts.
func kustomizationFile(dir string) (string, error) {
	var found []string
	for _, n := range konfig.RecognizedKustomizationFileNames() {
		if st, err := os.Stat(filepath.Join(dir, n)); err == nil && !st.IsDir() {
			found = append(found, n)
		}
	}
	switch len(found) {
	case 0:
		return "", fmt.Errorf("%w: no kustomization file in %s (one of %s)", ErrInvalid, dir, strings.Join(konfig.RecognizedKustomizationFileNames(), ", "))
	case 1:
		return filepath.Join(dir, found[0]), nil
	}
	return "", fmt.Errorf("%w: %s holds several kustomization files: %s", ErrInvalid, dir, strings.Join(found, ", "))
}

// load reads the layer in dir and the local layers under it.
func (b *builder) load(dir string, stack []string) (*layer, error) {
	for _, s := range stack {
		if s == dir {
			return nil, fmt.Errorf("%w: cycle: %s -> %s", ErrInvalid, strings.Join(stack, " -> "), dir)
		}
	}
	if l, ok := b.layers[dir]; ok {
		return l, nil
	}
	stack = append(stack, dir)
	file, err := kustomizationFile(dir)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	spec, err := yaml.Parse(string(data))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalid, file, yamlpos.Locate(data, err))
	}
	if spec.YNode().Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%w: %s: a kustomization is a mapping of fields", ErrInvalid, file)
	}
	l := &layer{dir: dir, file: file, spec: spec, kind: spec.GetKind(), entries: map[string]*entry{}}
	if l.kind == "" {
		l.kind = "Kustomization"
	}
	b.layers[dir] = l
	if f := spec.Field("catalogs"); f != nil {
		for _, c := range seqStrings(f.Value) {
			ref := catalogRef(dir, c)
			l.catalogs = append(l.catalogs, ref)
			if d, ok := b.opts.Functions.(Declarations); ok && ref != c {
				d.Declared(ref, c)
			}
		}
		if err := spec.PipeE(yaml.Clear("catalogs")); err != nil {
			return nil, err
		}
		b.rewritten = true
	}
	for _, field := range []string{"generators", "transformers", "validators"} {
		for _, raw := range seqStrings(fieldValue(spec, field)) {
			e, err := b.readEntry(l, field, raw)
			if err != nil {
				return nil, err
			}
			if e != nil {
				l.entries[entryKey(field, raw)] = e
			}
		}
	}
	for _, raw := range seqStrings(fieldValue(spec, "resources")) {
		p := filepath.Join(dir, filepath.FromSlash(raw))
		st, err := os.Stat(p)
		switch {
		case err != nil || isRemote(raw):
			// remote bases and missing paths are kustomize's to load or report
		case st.IsDir():
			if _, err := kustomizationFile(p); err != nil {
				continue
			}
			base, err := b.load(p, stack)
			if err != nil {
				return nil, err
			}
			l.bases = append(l.bases, base)
		default:
			e, err := b.readResourceComposition(l, raw, p)
			if err != nil {
				return nil, err
			}
			if e != nil {
				l.entries[entryKey("resources", raw)] = e
			}
		}
	}
	for _, raw := range seqStrings(fieldValue(spec, "components")) {
		p := filepath.Join(dir, filepath.FromSlash(raw))
		if st, err := os.Stat(p); err != nil || !st.IsDir() || isRemote(raw) {
			continue
		}
		c, err := b.load(p, stack)
		if err != nil {
			return nil, err
		}
		l.comps = append(l.comps, c)
	}
	return l, nil
}

func fieldValue(n *yaml.RNode, field string) *yaml.RNode {
	if f := n.Field(field); f != nil {
		return f.Value
	}
	return nil
}

func seqStrings(n *yaml.RNode) []string {
	if n == nil || n.YNode().Kind != yaml.SequenceNode {
		return nil
	}
	var out []string
	for _, c := range n.YNode().Content {
		if c.Kind == yaml.ScalarNode {
			out = append(out, c.Value)
		}
	}
	return out
}

func isRemote(ref string) bool {
	return strings.Contains(ref, "://") || strings.HasPrefix(ref, "git@") || strings.HasPrefix(ref, "github.com/")
}

// catalogRef resolves a relative catalog path against the directory of the kustomization naming
// it and writes it relative to the working directory, as --trusted-catalog names it; URLs and git
// and OCI references are kept as written.
func catalogRef(dir, ref string) string {
	if strings.Contains(ref, "://") || strings.HasPrefix(ref, "git::") {
		return ref
	}
	if !filepath.IsAbs(ref) {
		ref = filepath.Join(dir, ref)
	}
	rel, err := filepath.Rel(mustWd(), ref)
	if err != nil {
		return filepath.ToSlash(filepath.Join(dir, ref))
	}
	return filepath.ToSlash(rel)
}

func mustWd() string {
	wd, err := os.Getwd()
	if err != nil {
		return "/"
	}
	return wd
}

// readEntry reads a transformers, generators or validators entry: a file (or inline YAML) whose
// documents are catalog functions or Compositions is krm-catalog's; anything else (built-ins,
// functions with their own runtime annotation, directories) stays kustomize's.
func (b *builder) readEntry(l *layer, field, raw string) (*entry, error) {
	var data []byte
	where := fmt.Sprintf("%s: %s entry %q", l.file, field, raw)
	if strings.Contains(raw, "\n") {
		data = []byte(raw)
		where = fmt.Sprintf("%s: inline %s entry", l.file, field)
	} else {
		p := filepath.Join(l.dir, filepath.FromSlash(raw))
		st, err := os.Stat(p)
		if err != nil || st.IsDir() {
			return nil, nil
		}
		if data, err = os.ReadFile(p); err != nil {
			return nil, err
		}
	}
	nodes, err := kio.FromBytes(data)
	if err != nil {
		return nil, nil // not YAML: kustomize reports it
	}
	var mine, theirs int
	e := &entry{}
	for _, n := range nodes {
		switch {
		case n.YNode().Kind != yaml.MappingNode:
			theirs++
		case isComposition(n):
			c, err := b.loadComposition(l, raw)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			e.docs = append(e.docs, &fnDoc{cfg: n, where: where, dir: l.dir, layer: l, comp: c})
			mine++
		case isCatalogFunction(n):
			e.docs = append(e.docs, &fnDoc{cfg: n, where: where, dir: l.dir, layer: l})
			mine++
		default:
			theirs++
		}
	}
	if mine == 0 {
		return nil, nil
	}
	if theirs > 0 {
		return nil, fmt.Errorf("%w: %s mixes catalog functions with kustomize built-ins or functions with a runtime annotation; give each its own file", ErrInvalid, where)
	}
	b.fns = append(b.fns, e.docs...)
	b.rewritten = true
	return e, nil
}

// readResourceComposition reads a resources file: a Composition there generates resources
// (KEP-2299 beta); any other file is kustomize's.
func (b *builder) readResourceComposition(l *layer, raw, p string) (*entry, error) {
	data, err := os.ReadFile(p)
	if err != nil || !bytes.Contains(data, []byte(composition.Kind)) {
		return nil, nil
	}
	nodes, err := kio.FromBytes(data)
	if err != nil || len(nodes) != 1 || nodes[0].YNode().Kind != yaml.MappingNode || !isComposition(nodes[0]) {
		return nil, nil
	}
	c, err := composition.Load(p)
	if err != nil {
		return nil, fmt.Errorf("%s: resources entry %q: %w", l.file, raw, err)
	}
	d := &fnDoc{cfg: nodes[0], where: fmt.Sprintf("%s: resources entry %q", l.file, raw), dir: filepath.Dir(p), layer: l, comp: c}
	b.fns = append(b.fns, d)
	b.rewritten = true
	return &entry{docs: []*fnDoc{d}}, nil
}

func (b *builder) loadComposition(l *layer, raw string) (*composition.Consolidated, error) {
	if !strings.Contains(raw, "\n") {
		return composition.Load(filepath.Join(l.dir, filepath.FromSlash(raw)))
	}
	return nil, fmt.Errorf("%w: a Composition must be in a file of its own, not inline", ErrInvalid)
}

func isComposition(n *yaml.RNode) bool {
	return n.GetKind() == composition.Kind && strings.HasPrefix(n.GetApiVersion(), "kustomize.config.k8s.io/")
}

// isCatalogFunction reports a function config that names no runtime: not a kustomize built-in
// (apiVersion builtin, or no group), no config.kubernetes.io/function annotation, no runtime field.
func isCatalogFunction(n *yaml.RNode) bool {
	group, _, ok := strings.Cut(n.GetApiVersion(), "/")
	if !ok || group == "" {
		return false
	}
	ann := n.GetAnnotations()
	if _, ok := ann["config.kubernetes.io/function"]; ok {
		return false
	}
	if _, ok := ann["config.k8s.io/function"]; ok {
		return false
	}
	return true
}

// prepare resolves every catalog function of the tree and validates its config, then fetches what
// runs: an untrusted catalog, an unknown function or an invalid config stops the build before
// anything runs.
func (b *builder) prepare(ctx context.Context) error {
	var plain []*fnDoc
	for _, d := range b.fns {
		if d.comp == nil {
			plain = append(plain, d)
		}
	}
	preps := make([]composition.StepPreparer, len(plain))
	checked := make([]*runner.Checked, len(plain))
	steps, results, err := fn.Prepare(len(plain), func(i int) (string, []fn.Result, error) {
		d := plain[i]
		if b.opts.Functions == nil {
			return "", nil, fmt.Errorf("%s: %s %s is a catalog function, and this build runs none", d.where, d.cfg.GetApiVersion(), d.cfg.GetKind())
		}
		p, err := b.opts.Functions.For(d.layer.catalogs)
		if err != nil {
			return "", nil, fmt.Errorf("%s: %w", d.where, err)
		}
		preps[i] = p
		ch, res, err := p.Check(ctx, d.cfg)
		if err != nil && len(res) == 0 {
			return "", nil, fmt.Errorf("%s: %w", d.where, err)
		}
		checked[i] = ch
		return ch.Name, res, err
	}, func(i int) (fn.Step, error) {
		return preps[i].Build(ctx, checked[i], plain[i].dir)
	})
	b.results = append(b.results, results...)
	if err != nil {
		return err
	}
	for i, d := range plain {
		d.steps = []fn.Step{steps[i]}
	}
	for _, d := range b.fns {
		if d.comp == nil {
			continue
		}
		if b.opts.Functions == nil {
			return fmt.Errorf("%s: a Composition runs functions, and this build runs none", d.where)
		}
		var cats []string
		for _, c := range d.comp.Catalogs {
			cats = append(cats, catalogRef("", c))
		}
		p, err := b.opts.Functions.For(append(cats, d.layer.catalogs...))
		if err != nil {
			return fmt.Errorf("%s: %w", d.where, err)
		}
		s, res, err := d.comp.Steps(ctx, p)
		b.results = append(b.results, res...)
		if err != nil {
			return fmt.Errorf("%s: %w", d.where, err)
		}
		d.steps = s
	}
	return nil
}
