package kpt

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"

	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// ErrOutputExists: the directory render was to write into already exists.
var ErrOutputExists = errors.New("output directory exists")

// Where Output puts the rendered package, besides a directory.
const (
	OutputStdout = "stdout" // a ResourceList, each item annotated with its path, index and sequence style
	OutputUnwrap = "unwrap" // the resources alone, separated by ---
)

// Output puts the rendered package where `kpt fn render -o` would, formatted as kpt formats it:
// stdout or unwrap to w, anything else names a directory, which must not exist, to write the
// package into. The package itself is left alone and no status is written. The files are first
// made as an in-place render would make them (comments and layout restored), then read and written
// as kpt reads and writes them, so the output is kpt's byte for byte.
func (r *Result) Output(w io.Writer, dest string) error {
	if dest != OutputStdout && dest != OutputUnwrap {
		if _, err := os.Lstat(dest); err == nil {
			return fmt.Errorf("%w: directory %q already exists, please delete the directory and retry", ErrOutputExists, dest)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("write to %s: %w", dest, err)
		}
	}
	items, err := r.kptItems()
	if err != nil {
		return err
	}
	var wrapped bytes.Buffer
	bw := &kio.ByteWriter{Writer: &wrapped, KeepReaderAnnotations: true,
		WrappingAPIVersion: kio.ResourceListAPIVersion, WrappingKind: kio.ResourceListKind}
	if err := bw.Write(items); err != nil {
		return fmt.Errorf("encode the rendered resources: %w", err)
	}
	if dest == OutputStdout {
		_, err := w.Write(wrapped.Bytes())
		return err
	}
	var out kio.Writer = &kio.ByteWriter{Writer: w, ClearAnnotations: []string{kioutil.IndexAnnotation,
		kioutil.PathAnnotation, kioutil.LegacyIndexAnnotation, kioutil.LegacyPathAnnotation}}
	if dest != OutputUnwrap {
		if err := os.MkdirAll(dest, 0o755); err != nil {
			return fmt.Errorf("write to %s: %w", dest, err)
		}
		out = &kio.LocalPackageWriter{PackagePath: dest}
	}
	err = kio.Pipeline{
		Inputs:  []kio.Reader{&kio.ByteReader{Reader: &wrapped, PreserveSeqIndent: true, WrapBareSeqNode: true}},
		Outputs: []kio.Writer{out},
	}.Execute()
	if err != nil {
		return fmt.Errorf("write the rendered resources to %s: %w", dest, err)
	}
	return nil
}

// kptItems are the rendered resources as kpt's package reader would read them from the files an
// in-place render writes, in the order render left them.
func (r *Result) kptItems() ([]*yaml.RNode, error) {
	changes, err := r.Package.Plan(r.Items)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	for _, c := range changes {
		if !c.Delete {
			files[c.Path] = c.Data
		}
	}
	byKey := map[string]*yaml.RNode{}
	var order []string
	var unplaced []*yaml.RNode
	for _, it := range r.Items {
		p := itemPath(it)
		if p == "" {
			unplaced = append(unplaced, it)
			continue
		}
		p = path.Clean(p)
		if _, ok := files[p]; !ok {
			data, err := os.ReadFile(filepath.Join(r.Package.Dir, filepath.FromSlash(p)))
			if err != nil {
				return nil, fmt.Errorf("read %s: %w", p, err)
			}
			files[p] = data
		}
		if _, ok := byKey[p]; !ok {
			byKey[p] = nil
			nodes, err := (&kio.ByteReader{Reader: bytes.NewReader(files[p]), PreserveSeqIndent: true,
				SetAnnotations: map[string]string{kioutil.PathAnnotation: p, kioutil.LegacyPathAnnotation: p}}).Read()
			if err != nil {
				return nil, fmt.Errorf("read %s: %w", p, err)
			}
			keepDocComments(files[p], nodes)
			for i, n := range nodes {
				byKey[p+"#"+strconv.Itoa(i)] = n
			}
		}
		idx := it.GetAnnotations()[kioutil.IndexAnnotation]
		if idx == "" {
			idx = it.GetAnnotations()[kioutil.LegacyIndexAnnotation]
		}
		if idx == "" {
			idx = "0"
		}
		order = append(order, p+"#"+idx)
	}
	read := map[string]*yaml.RNode{}
	input, err := r.Input()
	if err != nil {
		return nil, err
	}
	for _, it := range input {
		read[identity(it)] = it
	}
	out := make([]*yaml.RNode, 0, len(order)+len(unplaced))
	for _, k := range order {
		n := byKey[k]
		if n == nil {
			return nil, fmt.Errorf("encode the rendered resources: no resource at %s", k)
		}
		placeAnnotations(n, read[identity(n)])
		out = append(out, n)
	}
	return append(out, unplaced...), nil
}

// keepDocComments gives each resource the comment its document opens with when a blank line
// separates the two (a file's licence header, say), which the reader would otherwise drop: kpt's
// functions return that comment on the resource, so kpt's output has it.
func keepDocComments(data []byte, nodes []*yaml.RNode) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for i := 0; ; i++ {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			return
		}
		if i >= len(nodes) {
			return
		}
		n := nodes[i].YNode()
		// a comment on the first field is the resource's, as kpt's reader of a function's output has it
		if n.Kind == yaml.MappingNode && len(n.Content) > 0 && n.HeadComment == "" && n.Content[0].HeadComment != "" {
			n.HeadComment, n.Content[0].HeadComment = n.Content[0].HeadComment, ""
		}
		if doc.HeadComment == "" {
			continue
		}
		if n.HeadComment == "" {
			n.HeadComment = doc.HeadComment
		} else {
			n.HeadComment = doc.HeadComment + "\n" + n.HeadComment
		}
	}
}

func identity(n *yaml.RNode) string {
	return n.GetApiVersion() + "/" + n.GetKind() + "/" + n.GetName()
}

// placeAnnotations puts metadata.annotations where kpt has it: kpt's reader adds it to the
// resource as read (after the metadata fields it had then), before any function adds fields.
func placeAnnotations(n, read *yaml.RNode) {
	if read == nil {
		return
	}
	md, was := n.Field("metadata"), read.Field("metadata")
	if md == nil || was == nil {
		return
	}
	for k := range read.GetAnnotations() {
		switch k {
		case kioutil.PathAnnotation, kioutil.LegacyPathAnnotation, kioutil.IndexAnnotation,
			kioutil.LegacyIndexAnnotation, kioutil.IdAnnotation, kioutil.LegacyIdAnnotation:
		default:
			return // the resource had annotations of its own
		}
	}
	had := map[string]bool{}
	wc := was.Value.YNode().Content
	for i := 0; i+1 < len(wc); i += 2 {
		if wc[i].Value != "annotations" {
			had[wc[i].Value] = true
		}
	}
	c := md.Value.YNode().Content
	at := -1
	for i := 0; i+1 < len(c); i += 2 {
		if c[i].Value == "annotations" {
			at = i
		}
	}
	if at < 0 {
		return
	}
	pair := []*yaml.Node{c[at], c[at+1]}
	c = append(c[:at:at], c[at+2:]...)
	insert := 0
	for i := 0; i+1 < len(c); i += 2 {
		if had[c[i].Value] {
			insert = i + 2
		}
	}
	c = append(c[:insert], append(pair, c[insert:]...)...)
	md.Value.YNode().Content = c
}
