package fn

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/internal/atomicfile"
)

// Package is a directory of resource files read for a pipeline.
type Package struct {
	// Dir is the package root: its PackageRoot, symbolic links resolved.
	Dir string
	// Skipped lists files (slash paths relative to Dir) that were not read because they hold YAML
	// that is not a Kubernetes object; they are never written. A file holding no document at all
	// (empty, blank lines, comments, `---` alone) is read, as kyaml's package reader reads it: it
	// holds no resources.
	Skipped []string

	files map[string]*pkgFile // by slash path relative to Dir
	read  []string            // the files whose resources were read, in the order they were
}

type pkgFile struct {
	data      []byte
	seqIndent string // kyaml's "compact" or "wide", as the file was written
	// empty: the file held no resources. kpt deletes only a file whose resources are all gone, so
	// one that had none stays as it is unless a function writes a resource into it.
	empty bool
}

// PackageRoot is the directory a package path names: a symbolic link to the package (or a path
// through one) is the package it points to, as kpt reads it. A path that cannot be resolved is
// returned as it is, for the reader to report.
func PackageRoot(dir string) string {
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		return real
	}
	return dir
}

// ReadPackage reads every .yaml and .yml file under dir (its PackageRoot; skipping hidden files and
// directories, and not following symbolic links inside the package) and returns its resources, each
// annotated with its file path and index: internal.config.kubernetes.io/path and .../index and their
// legacy forms config.kubernetes.io/path and .../index. Files named in exclude (the function
// configs, when they live in the package) are left out, whichever links they are named through.
func ReadPackage(dir string, exclude ...string) (*Package, []*yaml.RNode, error) {
	// without this, a link given as the package is walked as one entry that is not read, and the
	// functions see no resources at all
	dir = PackageRoot(dir)
	info, err := os.Stat(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("read package: %w", err)
	}
	if !info.IsDir() {
		return nil, nil, fmt.Errorf("read package: %s is not a directory", dir)
	}
	skip := map[string]bool{}
	for _, e := range exclude {
		if abs, err := filepath.Abs(PackageRoot(e)); err == nil {
			skip[abs] = true
		}
	}
	pkg := &Package{Dir: dir, files: map[string]*pkgFile{}}
	var items []*yaml.RNode
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != dir && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() || !d.Type().IsRegular() {
			return nil // directories are walked; links, devices and sockets are not read
		}
		if ext := strings.ToLower(filepath.Ext(p)); ext != ".yaml" && ext != ".yml" {
			return nil
		}
		if abs, err := filepath.Abs(p); err == nil && skip[abs] {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		data = withLF(data)
		fileItems, ok, err := decodeFile(rel, data)
		if err != nil {
			return err
		}
		if !ok {
			pkg.Skipped = append(pkg.Skipped, rel)
			return nil
		}
		pkg.files[rel] = &pkgFile{data: data, seqIndent: string(yaml.DeriveSeqIndentStyle(string(data))), empty: len(fileItems) == 0}
		pkg.read = append(pkg.read, rel)
		items = append(items, fileItems...)
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("read package %s: %w", dir, err)
	}
	return pkg, items, nil
}

// withLF replaces CRLF line endings with LF. YAML reads both, but comments keep a CR; a file whose
// resources change is written back with LF, as kpt writes it, and one whose resources do not is
// left as it is.
func withLF(data []byte) []byte {
	if !bytes.Contains(data, []byte("\r\n")) {
		return data
	}
	return bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n"))
}

// decodeFile reads the resources of one file. ok is false when the file holds YAML documents that
// are not Kubernetes objects (no apiVersion or kind): such a file is not part of the package's
// resources. A file of no documents (empty, blank, only comments or `---`) is read as no resources
// (ok, no items), as kyaml's ByteReader skips an empty document.
func decodeFile(rel string, data []byte) ([]*yaml.RNode, bool, error) {
	docs, err := decodeYAMLDocuments(data)
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w", rel, err)
	}
	items := make([]*yaml.RNode, 0, len(docs))
	for i, d := range docs {
		item, err := checkItem(d, i)
		if err != nil {
			return nil, false, nil
		}
		idx := strconv.Itoa(i)
		// in a fixed order: --dry-run prints them
		for _, kv := range [][2]string{
			{kioutil.PathAnnotation, rel}, {kioutil.LegacyPathAnnotation, rel},
			{kioutil.IndexAnnotation, idx}, {kioutil.LegacyIndexAnnotation, idx},
		} {
			if err := setAnnotation(item, kv[0], kv[1]); err != nil {
				return nil, false, fmt.Errorf("%s: %w", rel, err)
			}
		}
		items = append(items, item)
	}
	return items, true, nil
}

// FileChange is one file a Write would create, replace or delete.
type FileChange struct {
	Path   string // slash path relative to the package
	Data   []byte // nil for a deletion
	Delete bool
}

// Plan works out the files that writing items back into the package produces, without writing
// anything. Items keep their path and index annotations (internal, else legacy); items without a
// path (generated by a function) go to <kind>_<name>.yaml. Every path must pass Writable (the write
// rule), and no two items may have one path and index; otherwise the error (ErrInvalidPackage)
// names each offending item and path, and nothing is to be written. Files that were read and keep
// none of their items are deleted (a file that held none is kept, as kpt keeps it); files whose
// content is unchanged are left out.
func (p *Package) Plan(items []*yaml.RNode) ([]FileChange, error) {
	type placed struct {
		item  *yaml.RNode
		index int
	}
	byPath := map[string][]placed{}
	var problems []error
	seen := map[string]int{}
	type pending struct {
		item *yaml.RNode
		path string
	}
	var unplaced []pending
	for i, it := range items {
		ap := annotation(it, kioutil.PathAnnotation)
		if ap == "" {
			ap = annotation(it, kioutil.LegacyPathAnnotation)
		}
		idxText := annotation(it, kioutil.IndexAnnotation)
		if idxText == "" {
			idxText = annotation(it, kioutil.LegacyIndexAnnotation)
		}
		if ap == "" || idxText == "" {
			// a new resource: after the resources already placed in its file
			if ap == "" {
				ap = defaultPath(it)
			}
			unplaced = append(unplaced, pending{it, ap})
			continue
		}
		clean, err := p.Writable(ap)
		if err != nil {
			problems = append(problems, fmt.Errorf("item %d (%s): %w", i, describe(it), err))
			continue
		}
		idx := 0
		if idxText != "" {
			if idx, err = strconv.Atoi(idxText); err != nil || idx < 0 {
				problems = append(problems, fmt.Errorf("item %d (%s): index annotation %q is not a number", i, describe(it), idxText))
				continue
			}
		}
		key := clean + "#" + strconv.Itoa(idx)
		if first, dup := seen[key]; dup {
			problems = append(problems, fmt.Errorf("items %d (%s) and %d (%s) both have path %s and index %d",
				first, describe(items[first]), i, describe(it), clean, idx))
			continue
		}
		seen[key] = i
		byPath[clean] = append(byPath[clean], placed{it, idx})
	}
	for _, u := range unplaced {
		clean, err := p.Writable(u.path)
		if err != nil {
			problems = append(problems, fmt.Errorf("%s: %w", describe(u.item), err))
			continue
		}
		next := 0
		for _, pl := range byPath[clean] {
			next = max(next, pl.index+1)
		}
		byPath[clean] = append(byPath[clean], placed{u.item, next})
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%w: nothing was written:\n  %w", ErrInvalidPackage, errors.Join(problems...))
	}
	var changes []FileChange
	paths := make([]string, 0, len(byPath))
	for k := range byPath {
		paths = append(paths, k)
	}
	sort.Strings(paths)
	for _, rel := range paths {
		pls := byPath[rel]
		sort.SliceStable(pls, func(a, b int) bool { return pls[a].index < pls[b].index })
		nodes := make([]*yaml.Node, len(pls))
		for i, pl := range pls {
			c, err := withoutAnnotations(pl.item, internalAnnotations(pl.item)...)
			if err != nil {
				return nil, err
			}
			nodes[i] = c.Document()
		}
		data, err := p.encodeFile(rel, nodes)
		if err != nil {
			return nil, fmt.Errorf("encode %s: %w", rel, err)
		}
		if old, ok := p.files[rel]; ok && bytes.Equal(old.data, data) {
			continue
		}
		changes = append(changes, FileChange{Path: rel, Data: data})
	}
	var gone []string
	for rel, f := range p.files {
		if _, kept := byPath[rel]; !kept && !f.empty {
			gone = append(gone, rel)
		}
	}
	sort.Strings(gone)
	for _, rel := range gone {
		changes = append(changes, FileChange{Path: rel, Delete: true})
	}
	return changes, nil
}

// Write plans and applies the changes (Plan, then Apply). Each file is written to a temporary file beside it and renamed
// into place, so a reader never sees half a file.
func (p *Package) Write(items []*yaml.RNode) ([]FileChange, error) {
	changes, err := p.Plan(items)
	if err != nil {
		return nil, err
	}
	return changes, p.Apply(changes)
}

// Apply writes changes that Plan returned.
func (p *Package) Apply(changes []FileChange) error {
	for _, c := range changes {
		full := filepath.Join(p.Dir, filepath.FromSlash(c.Path))
		if c.Delete {
			if err := os.Remove(full); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("write package: %w", err)
			}
			continue
		}
		if err := writeFileAtomic(full, c.Data); err != nil {
			return fmt.Errorf("write package: %w", err)
		}
	}
	return nil
}

func writeFileAtomic(full string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		return err
	}
	mode := fs.FileMode(0o644)
	if st, err := os.Lstat(full); err == nil && st.Mode().IsRegular() {
		mode = st.Mode().Perm()
	}
	return atomicfile.WriteFile(full, data, mode)
}

func (p *Package) encodeFile(rel string, nodes []*yaml.Node) ([]byte, error) {
	f, ok := p.files[rel]
	return encodeYAML(ok && f.seqIndent == string(yaml.WideSequenceStyle), nodes...)
}

// Writable applies the write rule to a path annotation and returns the path cleaned, relative to
// the package. A function may overwrite the files the package reader read and create new .yaml or
// .yml files in non-hidden directories of the package; anything else is an error saying why:
// hidden files and directories (.git/config), other extensions (scripts/run.sh, notes.md), files
// that exist but were not read (skipped as not Kubernetes resources, or excluded), symbolic links
// (on the way or at the end), and paths outside the package. A path starting with "/" is taken
// relative to the package root, as kpt does.
func (p *Package) Writable(annotated string) (string, error) {
	if strings.ContainsRune(annotated, '\\') || strings.ContainsRune(annotated, 0) {
		return "", fmt.Errorf("path %q: use forward slashes, and no NUL", annotated)
	}
	if filepath.VolumeName(annotated) != "" {
		return "", fmt.Errorf("path %q names a volume; paths are relative to the package", annotated)
	}
	rel := strings.TrimLeft(annotated, "/")
	clean := path.Clean(rel)
	if rel == "" || clean == "." || clean == ".." || strings.HasPrefix(clean, "../") {
		return "", fmt.Errorf("path %q is outside the package", annotated)
	}
	if _, read := p.files[clean]; read {
		return clean, nil
	}
	for _, s := range p.Skipped {
		if s == clean {
			return "", fmt.Errorf("path %q: the package reader skipped that file (it holds no Kubernetes resources), so a function may not write it", annotated)
		}
	}
	parts := strings.Split(clean, "/")
	for _, part := range parts {
		if strings.HasPrefix(part, ".") {
			return "", fmt.Errorf("path %q is hidden (%s): the package reader never reads hidden files or directories, so a function may not write them", annotated, part)
		}
	}
	if ext := strings.ToLower(path.Ext(clean)); ext != ".yaml" && ext != ".yml" {
		return "", fmt.Errorf("path %q is not a .yaml or .yml file: a function may only write resource files", annotated)
	}
	// every directory on the way that exists must be a directory, not a link to one
	dir := p.Dir
	for i, part := range parts {
		dir = filepath.Join(dir, part)
		st, err := os.Lstat(dir)
		if errors.Is(err, fs.ErrNotExist) {
			break
		}
		if err != nil {
			return "", fmt.Errorf("path %q: %w", annotated, err)
		}
		last := i == len(parts)-1
		switch {
		case st.Mode()&fs.ModeSymlink != 0:
			return "", fmt.Errorf("path %q runs through the symbolic link %s: a function may not write through links", annotated, path.Join(parts[:i+1]...))
		case last:
			return "", fmt.Errorf("path %q exists but the package reader did not read it, so a function may not overwrite it", annotated)
		case !st.IsDir():
			return "", fmt.Errorf("path %q: %s is not a directory", annotated, path.Join(parts[:i+1]...))
		}
	}
	return clean, nil
}

// internalAnnotations lists the annotations an orchestrator sets and removes on writing: every
// internal.config.kubernetes.io/ annotation and the legacy path, index and id annotations.
func internalAnnotations(n *yaml.RNode) []string {
	anns := mapValue(mapValue(n.YNode(), "metadata"), "annotations")
	var keys []string
	for i := 0; anns != nil && i+1 < len(anns.Content); i += 2 {
		k := anns.Content[i].Value
		if strings.HasPrefix(k, "internal.config.kubernetes.io/") || k == kioutil.LegacyPathAnnotation ||
			k == kioutil.LegacyIndexAnnotation || k == kioutil.LegacyIdAnnotation {
			keys = append(keys, k)
		}
	}
	return keys
}

// StripInternal returns copies of the items without the orchestrator's annotations, as they are
// written to files or printed.
func StripInternal(items []*yaml.RNode) ([]*yaml.RNode, error) {
	out := make([]*yaml.RNode, len(items))
	for i, it := range items {
		c := it.Copy()
		if err := clearAnnotations(c, internalAnnotations(c)...); err != nil {
			return nil, err
		}
		out[i] = c
	}
	return out, nil
}

// defaultPath is where a generated resource goes: kyaml's default (what kpt's package writer uses),
// <namespace>/<kind>_<name>.yaml with the kind in lower case and the name as it is. The write rule
// then decides whether that path may be written.
func defaultPath(n *yaml.RNode) string {
	return kioutil.CreatePathAnnotationValue("", yaml.ResourceMeta{
		TypeMeta:   yaml.TypeMeta{Kind: n.GetKind()},
		ObjectMeta: yaml.ObjectMeta{NameMeta: yaml.NameMeta{Name: n.GetName(), Namespace: n.GetNamespace()}},
	})
}

// describe names an item for error messages.
func describe(n *yaml.RNode) string {
	s := n.GetKind() + "/" + n.GetName()
	if ns := n.GetNamespace(); ns != "" {
		s += " in namespace " + ns
	}
	return s
}

// LocalConfigAnnotation marks a resource that configures tools and is not applied to a cluster.
const LocalConfigAnnotation = "config.kubernetes.io/local-config"

// IsLocalConfig reports whether a resource carries config.kubernetes.io/local-config: "true". A
// function config file inside a package is left out of the package's resources only when every
// document in it is local config (kpt semantics): otherwise it is a resource like any other.
func IsLocalConfig(n *yaml.RNode) bool { return annotation(n, LocalConfigAnnotation) == "true" }

// Digest is the sha256 of the package as a render reads it once changes (from Plan) are applied:
// every file read, by path and content, and the names of the files left out as not Kubernetes
// resources. Files the reader does not read (hidden, other extensions, excluded) do not count.
// Digest(nil) is the package as it was read.
func (p *Package) Digest(changes []FileChange) string {
	files := make(map[string][]byte, len(p.files)+len(changes))
	for rel, f := range p.files {
		files[rel] = f.data
	}
	for _, c := range changes {
		if c.Delete {
			delete(files, c.Path)
		} else {
			files[c.Path] = c.Data
		}
	}
	paths := make([]string, 0, len(files))
	for rel := range files {
		paths = append(paths, rel)
	}
	sort.Strings(paths)
	h := sha256.New()
	for _, rel := range paths {
		// length-prefixed, so that no two packages hash alike by moving bytes between files
		fmt.Fprintf(h, "file %d:%s %d\n", len(rel), rel, len(files[rel]))
		h.Write(files[rel])
	}
	for _, rel := range p.Skipped {
		fmt.Fprintf(h, "skipped %d:%s\n", len(rel), rel)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}
