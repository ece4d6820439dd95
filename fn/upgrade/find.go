package upgrade

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/fn"
	"github.com/krm-catalog/krm-catalog/fn/kpt"
	"github.com/krm-catalog/krm-catalog/resolver"
)

// ErrInvalidInput: a Kptfile, Kustomization, Composition or function config cannot be read.
var ErrInvalidInput = errors.New("cannot read")

// maxPathDepth bounds how deep a field path is followed into a config.
const maxPathDepth = 64

// maxFileBytes bounds a file the scan reads: Kptfiles, Kustomizations and function configs are a
// few kilobytes.
const maxFileBytes = 16 << 20

// Names of the files the scan looks for.
var (
	kustomizationNames = []string{"kustomization.yaml", "kustomization.yml", "Kustomization"}
	compositionName    = "composition.yaml"
)

// unit is one file that declares function steps: a Kptfile, a Kustomization or a Composition.
type unit struct {
	path string
	kind string // "Kptfile", "Kustomization", "Composition"
}

// findUnits walks the paths (directories, or the files themselves) for Kptfiles, Kustomizations
// and Compositions, passing over hidden directories and symbolic links as the package reader
// does, in lexical order.
func findUnits(paths []string) ([]unit, error) {
	var out []unit
	seen := map[string]bool{}
	add := func(p string) {
		kind := unitKind(filepath.Base(p))
		if kind == "" {
			return
		}
		if abs, err := filepath.Abs(p); err == nil {
			if seen[abs] {
				return
			}
			seen[abs] = true
		}
		out = append(out, unit{path: p, kind: kind})
	}
	for _, root := range paths {
		st, err := os.Stat(root)
		if err != nil {
			return nil, fmt.Errorf("%w %s: %w", ErrInvalidInput, root, err)
		}
		if !st.IsDir() {
			if unitKind(filepath.Base(root)) == "" {
				return nil, fmt.Errorf("%w %s: not a directory, Kptfile, Kustomization or %s", ErrInvalidInput, root, compositionName)
			}
			add(root)
			continue
		}
		// a link given as the path is the directory it points to, as the package reader has it;
		// the report names what is found under the path as given
		real := fn.PackageRoot(root)
		err = filepath.WalkDir(real, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if p != real && strings.HasPrefix(d.Name(), ".") {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if d.Type().IsRegular() {
				rel, err := filepath.Rel(real, p)
				if err != nil {
					return err
				}
				add(filepath.Join(root, rel))
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("%w %s: %w", ErrInvalidInput, root, err)
		}
	}
	return out, nil
}

func unitKind(name string) string {
	switch {
	case name == kpt.KptfileName:
		return "Kptfile"
	case slices.Contains(kustomizationNames, name):
		return "Kustomization"
	case name == compositionName:
		return "Composition"
	}
	return ""
}

// files reads each file once per call, whichever steps name it, and keeps what was read for the
// edits.
type files struct {
	mu sync.Mutex
	m  map[string]*file
}

type file struct {
	once  sync.Once
	reads int // how often it was read: once
	data  []byte
	mode  fs.FileMode
	err   error
	sum   string // sha256, for executables
}

func (fs *files) get(p string) *file {
	key := p
	if abs, err := filepath.Abs(p); err == nil {
		key = abs
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.m == nil {
		fs.m = map[string]*file{}
	}
	f := fs.m[key]
	if f == nil {
		f = &file{}
		fs.m[key] = f
	}
	return f
}

// read returns a file's bytes, read once.
func (fs *files) read(p string) ([]byte, fs.FileMode, error) {
	f := fs.get(p)
	f.once.Do(func() {
		f.reads++
		st, err := os.Stat(p)
		if err != nil {
			f.err = err
			return
		}
		if !st.Mode().IsRegular() {
			f.err = errors.New("not a regular file")
			return
		}
		if st.Size() > maxFileBytes {
			f.err = fmt.Errorf("larger than %d bytes", maxFileBytes)
			return
		}
		f.mode = st.Mode().Perm()
		f.data, f.err = os.ReadFile(p)
	})
	return f.data, f.mode, f.err
}

// hash returns the sha256 of an executable, read once and streamed (executables can be large and
// are not kept).
func (fs *files) hash(p string) (string, error) {
	f := fs.get(p + "\x00sha256")
	f.once.Do(func() {
		f.reads++
		r, err := os.Open(p)
		if err != nil {
			f.err = err
			return
		}
		defer r.Close()
		h := sha256.New()
		if _, err := io.Copy(h, r); err != nil {
			f.err = err
			return
		}
		f.sum = hex.EncodeToString(h.Sum(nil))
	})
	return f.sum, f.err
}

// site is one step found: where it is declared, what it names and where that is written.
type site struct {
	// step says where the step is declared: the Kptfile and its pipeline entry, the Kustomization
	// and its list entry, the Composition and its transformer
	step string
	name string
	// file and line are where the function is named: the image, the executable, or the config's
	// apiVersion
	file string
	line int

	source string // "image", "exec" or "kind"
	image  string // as written
	tag    string // a Kptfile step's tag (a version or a constraint)
	// at is where the image (an image step) or the apiVersion (a kind step) is written; its
	// innermost Value is set by the edit
	at       *place
	execPath string // the executable to hash
	cfg      *config
	// problem is why the step cannot be compared (its configPath cannot be read, say)
	problem string
	// x holds the catalogs the step resolves through: the command line's, and those its
	// Kustomization or Composition lists (set by the run)
	x *index
	// catalogs are those its Kustomization or Composition lists, as resolved for the resolver,
	// and declared how the file wrote each local one
	catalogs []string
	declared map[string][]string
}

// place is where one value is written: a file and the edit that changes it.
type place struct {
	file string
	edit fn.ScalarEdit
}

// with returns the edit setting the value.
func (p place) with(value string) fn.ScalarEdit { return setInnermost(p.edit, value) }

func setInnermost(e fn.ScalarEdit, value string) fn.ScalarEdit {
	if e.Within == nil {
		e.Value = value
		return e
	}
	inner := setInnermost(*e.Within, value)
	e.Within = &inner
	return e
}

// config is a function config and where it is written: a document of a file, a mapping inside
// one (a Composition's transformer), or YAML text inside a scalar (a Kustomization's inline
// entry).
type config struct {
	node *yaml.RNode
	file string
	doc  int
	base []string // the path of the config in the document
	// inline: the config is the YAML text of the scalar at base, as document innerDoc; line is
	// the line of that scalar
	inline   bool
	innerDoc int
	line     int
}

// at returns where a field of the config is written.
func (c *config) at(path []string, within *fn.ScalarEdit) place {
	if c.inline {
		return place{file: c.file, edit: fn.ScalarEdit{Doc: c.doc, Path: c.base, Within: &fn.ScalarEdit{Doc: c.innerDoc, Path: path, Within: within}}}
	}
	return place{file: c.file, edit: fn.ScalarEdit{Doc: c.doc, Path: append(slices.Clip(c.base), path...), Within: within}}
}

// lineOf is the line of the file at which a field of the config (a dotted path with [i] indices,
// as schema results name it) is written, or the config's own line.
func (c *config) lineOf(field string) int {
	n := c.node.YNode()
	rest := field
	// bounded: an alias can make a config contain itself
	for depth := 0; rest != "" && n != nil && depth < maxPathDepth; depth++ {
		var next *yaml.Node
		switch n.Kind {
		case yaml.MappingNode:
			// keys may hold dots (label keys): the longest key that the path goes on from
			best := -1
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i].Value
				if (rest == k || strings.HasPrefix(rest, k+".") || strings.HasPrefix(rest, k+"[")) && (best < 0 || len(k) > len(n.Content[best].Value)) {
					best = i
				}
			}
			if best >= 0 {
				next = n.Content[best+1]
				rest = strings.TrimPrefix(strings.TrimPrefix(rest, n.Content[best].Value), ".")
			}
		case yaml.SequenceNode:
			if strings.HasPrefix(rest, "[") {
				if end := strings.IndexByte(rest, ']'); end > 0 {
					if i, err := strconv.Atoi(rest[1:end]); err == nil && i >= 0 && i < len(n.Content) {
						next = n.Content[i]
						rest = strings.TrimPrefix(rest[end+1:], ".")
					}
				}
			}
		}
		if next == nil {
			break
		}
		n = next
	}
	if c.inline {
		return c.line + n.Line
	}
	return n.Line
}

// scanner finds the steps of units.
type scanner struct {
	files *files
}

func (s *scanner) scan(u unit) ([]*site, error) {
	data, _, err := s.files.read(u.path)
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrInvalidInput, u.path, err)
	}
	var sites []*site
	switch u.kind {
	case "Kptfile":
		sites, err = s.kptfile(u.path, data)
	case "Kustomization":
		sites, err = s.kustomization(u.path, data)
	default:
		sites, err = s.composition(u.path, data)
	}
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrInvalidInput, u.path, err)
	}
	return sites, nil
}

// document decodes the first document of data, when it is a mapping.
func document(data []byte) (*yaml.Node, error) {
	docs, err := fn.DecodeDocuments(data)
	if err != nil || len(docs) == 0 || docs[0].Content[0].Kind != yaml.MappingNode {
		return nil, err
	}
	return docs[0].Content[0], nil
}

// documents decodes every document of data, counted as fn.ScalarEdit counts them.
func documents(data []byte) ([]*yaml.RNode, error) {
	docs, err := fn.DecodeDocuments(data)
	if err != nil {
		return nil, err
	}
	out := make([]*yaml.RNode, len(docs))
	for i, d := range docs {
		out[i] = yaml.NewRNode(d.Content[0])
	}
	return out, nil
}

// mapValue is the value of a key of a mapping, or nil.
func mapValue(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	if f := yaml.NewRNode(m).Field(key); f != nil {
		return f.Value.YNode()
	}
	return nil
}

// kptfile finds the steps of a Kptfile's pipeline, read as render reads it.
func (s *scanner) kptfile(p string, data []byte) ([]*site, error) {
	kf, err := kpt.ParseKptfile(data)
	if err != nil {
		return nil, err
	}
	root, err := document(data)
	if err != nil || root == nil {
		return nil, err
	}
	dir := filepath.Dir(p)
	var out []*site
	for _, list := range []struct {
		name  string
		steps []kpt.Function
	}{{"mutators", kf.Pipeline.Mutators}, {"validators", kf.Pipeline.Validators}} {
		seq := mapValue(mapValue(root, "pipeline"), list.name)
		for i, f := range list.steps {
			node := seq.Content[i]
			st := &site{step: fmt.Sprintf("%s pipeline.%s[%d]", p, list.name, i), name: f.Name, file: p, line: node.Line}
			if f.ConfigPath != "" {
				cfgPath := filepath.Join(dir, filepath.FromSlash(f.ConfigPath))
				cfg, err := s.fileConfig(cfgPath)
				if err != nil {
					st.problem = fmt.Sprintf("configPath %s: %v", f.ConfigPath, err)
				}
				st.cfg = cfg
			}
			switch {
			case f.Image != "":
				st.source, st.image, st.tag = "image", f.Image, f.Tag
				st.at = &place{file: p, edit: fn.ScalarEdit{Path: []string{"pipeline", list.name, strconv.Itoa(i), "image"}}}
				if n := mapValue(node, "image"); n != nil {
					st.line = n.Line
				}
			case f.Exec != "":
				st.source = "exec"
				st.execPath = execPath(dir, f.Exec)
				if n := mapValue(node, "exec"); n != nil {
					st.line = n.Line
				}
			case st.cfg != nil:
				// the config's apiVersion and kind name the function, unless it names a runtime
				s.fromConfig(st, st.cfg, dir)
			default:
				st.source = "kind"
			}
			out = append(out, st)
		}
	}
	return out, nil
}

// execPath is the executable of a step's exec (its first word): relative to the package, or to
// the working directory where the package has no such file, as render looks for it.
func execPath(dir, command string) string {
	fields := strings.Fields(command)
	if len(fields) == 0 {
		return ""
	}
	bin := strings.Trim(fields[0], `"'`)
	if !strings.Contains(bin, "/") {
		// a bare name is looked up on PATH, as render runs it
		if p, err := exec.LookPath(bin); err == nil {
			return p
		}
		return bin
	}
	if filepath.IsAbs(bin) {
		return bin
	}
	if p := filepath.Join(dir, bin); exists(p) {
		return p
	}
	return bin
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// fileConfig reads a configPath: a file holding one resource.
func (s *scanner) fileConfig(p string) (*config, error) {
	data, _, err := s.files.read(p)
	if err != nil {
		return nil, err
	}
	docs, err := documents(data)
	if err != nil {
		return nil, err
	}
	if len(docs) != 1 {
		return nil, fmt.Errorf("holds %d resources, not one", len(docs))
	}
	return &config{node: docs[0], file: p}, nil
}

// fromConfig makes st the step a config names: its runtime when it names one (an image in the
// function annotation or the runtime field, an executable), else its apiVersion and kind.
func (s *scanner) fromConfig(st *site, c *config, dir string) {
	st.cfg = c
	e, err := resolver.ExplicitRuntime(c.node)
	if err != nil {
		st.source, st.problem = "kind", err.Error()
		return
	}
	switch {
	case e == nil:
		st.source = "kind"
		if n := c.node.Field("apiVersion"); n != nil {
			st.file, st.line = c.file, c.lineOfNode(n.Value.YNode())
		}
		p := c.at([]string{"apiVersion"}, nil)
		st.at = &p
	case e.Container != nil:
		st.source, st.image = "image", e.Container.Image
		var p place
		if strings.HasPrefix(e.Source, "annotation") {
			key := resolver.FunctionAnnotation
			if _, ok := c.node.GetAnnotations()[key]; !ok {
				key = "config.k8s.io/function"
			}
			p = c.at([]string{"metadata", "annotations", key}, &fn.ScalarEdit{Path: []string{"container", "image"}})
			st.line = c.lineOf("metadata.annotations")
		} else {
			p = c.at([]string{"runtime", "container", "image"}, nil)
			st.line = c.lineOf("runtime.container.image")
		}
		st.file, st.at = c.file, &p
	case e.Exec != nil:
		st.source, st.file, st.line = "exec", c.file, c.lineOf("")
		st.execPath = e.Exec.Path
		if !filepath.IsAbs(st.execPath) {
			st.execPath = filepath.Join(dir, st.execPath)
		}
	default:
		// a starlark script carried by the config or beside it: nothing a catalog versions
		st.source = ""
	}
}

// lineOfNode is the line in the file of a node of the config.
func (c *config) lineOfNode(n *yaml.Node) int {
	if c.inline {
		return c.line + n.Line
	}
	return n.Line
}

// isFunctionConfig reports whether a transformer, generator or validator config may be a KRM
// function: not a kustomize built-in (apiVersion builtin, or no group) and not an inline
// Kustomization or Composition.
func isFunctionConfig(n *yaml.RNode) bool {
	group, _, ok := strings.Cut(n.GetApiVersion(), "/")
	if !ok || group == "" || group == "builtin" || strings.HasPrefix(group, "kustomize.config.k8s.io") {
		return n.GetAnnotations()[resolver.FunctionAnnotation] != ""
	}
	return true
}

// kustomization finds the function configs of a Kustomization's generators, transformers and
// validators: files beside it (every document) and inline entries.
func (s *scanner) kustomization(p string, data []byte) ([]*site, error) {
	root, err := document(data)
	if err != nil || root == nil {
		return nil, err
	}
	dir := filepath.Dir(p)
	catalogs, declared := listedCatalogs(root, dir)
	var out []*site
	defer func() {
		for _, st := range out {
			st.catalogs, st.declared = catalogs, declared
		}
	}()
	for _, field := range []string{"generators", "transformers", "validators"} {
		seq := mapValue(root, field)
		if seq == nil || seq.Kind != yaml.SequenceNode {
			continue
		}
		for i, n := range seq.Content {
			if n.Kind != yaml.ScalarNode {
				continue
			}
			step := fmt.Sprintf("%s %s[%d]", p, field, i)
			var cfgs []*config
			if strings.Contains(n.Value, "\n") {
				docs, err := documents([]byte(n.Value))
				if err != nil {
					return nil, fmt.Errorf("%s: inline entry at line %d: %w", step, n.Line, err)
				}
				for j, d := range docs {
					cfgs = append(cfgs, &config{node: d, file: p, base: []string{field, strconv.Itoa(i)}, inline: true, innerDoc: j, line: n.Line})
				}
			} else {
				ref := filepath.Join(dir, filepath.FromSlash(n.Value))
				if strings.Contains(n.Value, "://") || !isFile(ref) {
					continue // a directory, a remote or missing entry: kustomize's own
				}
				data, _, err := s.files.read(ref)
				if err != nil {
					return nil, fmt.Errorf("%s: %w", step, err)
				}
				docs, err := documents(data)
				if err != nil {
					return nil, fmt.Errorf("%s: %s: %w", step, ref, err)
				}
				for j, d := range docs {
					cfgs = append(cfgs, &config{node: d, file: ref, doc: j})
				}
			}
			for j, c := range cfgs {
				if c.node.YNode().Kind != yaml.MappingNode || !isFunctionConfig(c.node) {
					continue
				}
				st := &site{step: step, name: c.node.GetName(), file: c.file, line: c.lineOfNode(c.node.YNode())}
				if len(cfgs) > 1 {
					st.step = fmt.Sprintf("%s (document %d)", step, j)
				}
				s.fromConfig(st, c, dir)
				if st.source != "" {
					out = append(out, st)
				}
			}
		}
	}
	return out, nil
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// composition finds the function configs of a Composition's own transformers.
func (s *scanner) composition(p string, data []byte) ([]*site, error) {
	root, err := document(data)
	if err != nil || root == nil {
		return nil, err
	}
	seq := mapValue(root, "transformers")
	if seq == nil || seq.Kind != yaml.SequenceNode {
		return nil, nil
	}
	catalogs, declared := listedCatalogs(root, filepath.Dir(p))
	var out []*site
	defer func() {
		for _, st := range out {
			st.catalogs, st.declared = catalogs, declared
		}
	}()
	for i, n := range seq.Content {
		if n.Kind != yaml.MappingNode {
			continue
		}
		c := &config{node: yaml.NewRNode(n), file: p, base: []string{"transformers", strconv.Itoa(i)}}
		if !isFunctionConfig(c.node) {
			continue
		}
		st := &site{step: fmt.Sprintf("%s transformers[%d]", p, i), name: c.node.GetName(), file: p, line: n.Line}
		s.fromConfig(st, c, filepath.Dir(p))
		if st.source != "" {
			out = append(out, st)
		}
	}
	return out, nil
}

// listedCatalogs reads the catalogs a Kustomization or Composition lists (KEP-2906), as build
// resolves them: a local path against the file's directory, written relative to the working
// directory, and how the file wrote it, so that --trusted-catalog may name it so.
func listedCatalogs(root *yaml.Node, dir string) ([]string, map[string][]string) {
	seq := mapValue(root, "catalogs")
	if seq == nil || seq.Kind != yaml.SequenceNode {
		return nil, nil
	}
	var refs []string
	declared := map[string][]string{}
	for _, n := range seq.Content {
		if n.Kind != yaml.ScalarNode || n.Value == "" {
			continue
		}
		ref := n.Value
		if !strings.Contains(ref, "://") && !strings.HasPrefix(ref, "git::") {
			if !filepath.IsAbs(ref) {
				ref = filepath.Join(dir, ref)
			}
			if wd, err := os.Getwd(); err == nil {
				if rel, err := filepath.Rel(wd, ref); err == nil {
					ref = rel
				}
			}
			ref = filepath.ToSlash(ref)
			if ref != n.Value {
				declared[ref] = append(declared[ref], n.Value)
			}
		}
		refs = append(refs, ref)
	}
	return refs, declared
}
