// Package kustrun runs kustomize's build (the sigs.k8s.io/kustomize/api krusty library) over the
// file system on disk with some files added or replaced in memory: the kustomizations krm-catalog
// writes for a stage of a build, or for a built-in transformer of a Composition, are never written
// to the user's directories.
package kustrun

import (
	"fmt"
	"path/filepath"
	"sort"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/krm-catalog/krm-catalog/internal/yamlpos"
)

// FS is the file system on disk with files held in memory on top, by absolute, clean path. A file
// in memory hides the file of the same path on disk; its directory must exist on disk.
type FS struct {
	filesys.FileSystem
	files map[string][]byte
}

// NewFS returns an FS over the disk with no file in memory.
func NewFS() *FS {
	return &FS{FileSystem: filesys.MakeFsOnDisk(), files: map[string][]byte{}}
}

// Set puts a file in memory (path must be absolute).
func (o *FS) Set(path string, data []byte) { o.files[filepath.Clean(path)] = data }

// Delete removes a file from memory, uncovering the file on disk if there is one.
func (o *FS) Delete(path string) { delete(o.files, filepath.Clean(path)) }

func (o *FS) mem(path string) ([]byte, bool) {
	if !filepath.IsAbs(path) {
		abs, err := filepath.Abs(path)
		if err != nil {
			return nil, false
		}
		path = abs
	}
	b, ok := o.files[filepath.Clean(path)]
	return b, ok
}

// ReadFile reads a file from memory, else from disk.
func (o *FS) ReadFile(path string) ([]byte, error) {
	if b, ok := o.mem(path); ok {
		return append([]byte(nil), b...), nil
	}
	return o.FileSystem.ReadFile(path)
}

// Exists reports a file in memory or on disk.
func (o *FS) Exists(path string) bool {
	if _, ok := o.mem(path); ok {
		return true
	}
	return o.FileSystem.Exists(path)
}

// IsDir is false for a file in memory.
func (o *FS) IsDir(path string) bool {
	if _, ok := o.mem(path); ok {
		return false
	}
	return o.FileSystem.IsDir(path)
}

// CleanedAbs splits a file in memory into its directory and name without asking the disk.
func (o *FS) CleanedAbs(path string) (filesys.ConfirmedDir, string, error) {
	if _, ok := o.mem(path); ok {
		abs, err := filepath.Abs(path)
		if err != nil {
			return "", "", err
		}
		return filesys.ConfirmedDir(filepath.Dir(abs)), filepath.Base(abs), nil
	}
	return o.FileSystem.CleanedAbs(path)
}

// ReadDir lists the directory on disk with the files in memory in it.
func (o *FS) ReadDir(path string) ([]string, error) {
	names, err := o.FileSystem.ReadDir(path)
	if err != nil {
		return names, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, n := range names {
		seen[n] = true
	}
	for p := range o.files {
		if filepath.Dir(p) == abs && !seen[filepath.Base(p)] {
			names = append(names, filepath.Base(p))
		}
	}
	sort.Strings(names)
	return names, nil
}

// Build runs kustomize's build of dir over fsys and returns its output as `kustomize build`
// prints it.
func Build(fsys filesys.FileSystem, dir string, opts *krusty.Options) ([]byte, error) {
	log := &readLog{FileSystem: fsys}
	m, err := krusty.MakeKustomizer(opts).Run(log, dir)
	if err != nil {
		return nil, log.locate(err)
	}
	out, err := m.AsYaml()
	if err != nil {
		return nil, fmt.Errorf("kustomize output: %w", err)
	}
	return out, nil
}

// readLog is a file system that remembers which files were read, so that a YAML syntax error,
// of which kustomize keeps yaml.v3's text only (a line, often the one before the problem, counted
// from the start of the document, and no column), can be found again in the file that holds it.
type readLog struct {
	filesys.FileSystem
	read []string
}

func (l *readLog) ReadFile(path string) ([]byte, error) {
	b, err := l.FileSystem.ReadFile(path)
	if err == nil {
		l.read = append(l.read, path)
	}
	return b, err
}

// locate returns err, or, when it is a YAML syntax error, err with its position replaced by the
// one found by reading the files again, the last read first (kustomize stops at the first error).
func (l *readLog) locate(err error) error {
	if !yamlpos.IsSyntaxError(err) {
		return err
	}
	for i := len(l.read) - 1; i >= 0; i-- {
		b, rerr := l.FileSystem.ReadFile(l.read[i])
		if rerr != nil {
			continue
		}
		if se := yamlpos.Find(b); se != nil {
			return yamlpos.Replace(err, se)
		}
	}
	return err
}

// Format prints a stream of resources as `kustomize build` prints them (its key order, indentation
// and quoting), in the order given, through a kustomization in memory that lists them.
func Format(stream []byte) ([]byte, error) {
	fsys := filesys.MakeFsInMemory()
	const dir = "/krm-catalog"
	if err := fsys.MkdirAll(dir); err != nil {
		return nil, err
	}
	if err := fsys.WriteFile(dir+"/resources.yaml", stream); err != nil {
		return nil, err
	}
	if err := fsys.WriteFile(dir+"/kustomization.yaml", []byte("resources:\n- resources.yaml\n")); err != nil {
		return nil, err
	}
	opts := krusty.MakeDefaultOptions()
	opts.Reorder = krusty.ReorderOptionNone
	return Build(fsys, dir, opts)
}
