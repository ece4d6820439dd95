package fn

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// ReadFile reads one more file of the package, one that ReadPackage does not pick up by its name
// (kpt's Kptfile), and returns its resources annotated with their path and index like the others.
// Plan and Write then treat it as one of the package's files: written back in its own sequence
// indentation, left alone when unchanged, deleted when no item keeps it.
func (p *Package) ReadFile(rel string) ([]*yaml.RNode, error) {
	rel = path.Clean(rel)
	data, err := os.ReadFile(filepath.Join(p.Dir, filepath.FromSlash(rel)))
	if err != nil {
		return nil, fmt.Errorf("read package: %w", err)
	}
	data = withLF(data)
	items, ok, err := decodeFile(rel, data)
	if err != nil {
		return nil, fmt.Errorf("read package %s: %w", p.Dir, err)
	}
	if !ok {
		return nil, fmt.Errorf("read package %s: %s holds no Kubernetes resource", p.Dir, rel)
	}
	p.files[rel] = &pkgFile{data: data, seqIndent: string(yaml.DeriveSeqIndentStyle(string(data))), empty: len(items) == 0}
	p.read = append(p.read, rel)
	return items, nil
}

// Items reads again, from the files as they were read, the resources ReadPackage and then each
// ReadFile returned, in that order: the package as read, afresh, for a caller that has since
// changed the items it was given (a render that failed records its status on the package as
// read) and would otherwise have had to keep a copy of all of them for that rare case.
func (p *Package) Items() ([]*yaml.RNode, error) {
	var items []*yaml.RNode
	for _, rel := range p.read {
		fileItems, _, err := decodeFile(rel, p.files[rel].data)
		if err != nil {
			return nil, fmt.Errorf("read package %s: %w", p.Dir, err)
		}
		items = append(items, fileItems...)
	}
	return items, nil
}

// Read is a file of the package as it was read (its line endings made LF), and whether it was.
func (p *Package) Read(rel string) ([]byte, bool) {
	f, ok := p.files[path.Clean(rel)]
	if !ok {
		return nil, false
	}
	return f.data, true
}

// DefaultPath is the file a resource without a path annotation is written to, as kyaml and kpt name
// it: <namespace>/<kind>_<name>.yaml, the kind in lower case.
func DefaultPath(n *yaml.RNode) string { return defaultPath(n) }

// KptfileName is the file of a kpt package's metadata and pipeline.
const KptfileName = "Kptfile"

// ReadKptfiles reads the Kptfile of the package and those of the directories below it (hidden
// ones skipped, as ReadPackage skips them), for commands that give functions the package's meta
// resources as kpt fn eval does. A Kptfile that holds no resource is left out.
func (p *Package) ReadKptfiles() ([]*yaml.RNode, error) {
	var items []*yaml.RNode
	err := filepath.WalkDir(p.Dir, func(f string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if f != p.Dir && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() || d.Name() != KptfileName || !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(p.Dir, f)
		if err != nil {
			return err
		}
		got, err := p.ReadFile(filepath.ToSlash(rel))
		if err != nil {
			return err
		}
		items = append(items, got...)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read package %s: %w", p.Dir, err)
	}
	return items, nil
}
