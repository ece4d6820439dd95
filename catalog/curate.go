package catalog

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// SameRuntime reports whether two runtimes run exactly the same thing: the same image by the same
// digest with the same permissions, the same executables for the same platforms by the same
// sha256, the same starlark source by the same digest. A catalog that lists another publisher's
// function by reference must carry the runtime that publisher published, by this test.
func SameRuntime(a, b Runtime) bool { return a.pin() == b.pin() }

// pin is a runtime in one canonical spelling: a digest written in the image or beside it, and exec
// platforms in any order, spell the same.
func (r Runtime) pin() string {
	var b strings.Builder
	if c := r.Container; c != nil {
		fmt.Fprintf(&b, "container %q %t %t\n", c.PinnedImage(), c.RequireNetwork, c.RequireStorageMount)
	}
	if e := r.Exec; e != nil {
		ps := make([]string, 0, len(e.Platforms))
		for _, p := range e.Platforms {
			ps = append(ps, fmt.Sprintf("exec %q %q %q %q %q\n", p.OS, p.Arch, p.Bin, p.URI, p.SHA256))
		}
		slices.Sort(ps)
		b.WriteString("exec\n" + strings.Join(ps, ""))
	}
	if s := r.Starlark; s != nil {
		fmt.Fprintf(&b, "starlark %q %q %q\n", s.URI, s.Ref, s.SHA256)
	}
	return b.String()
}

// DecodeVersion reads one version object (a member of a function's versions) as the catalog's
// decoder does, for versions stored apart from their document.
func DecodeVersion(m map[string]any) Version { return decodeVersion(m) }

// WithFunction returns the catalog document catalogYAML with the function that the
// KRMFunctionDefinition definitionYAML defines as an entry: in place of the entry of the same
// group and kind, else after the last. The result is YAML; comments of the catalog are kept, its
// layout is the encoder's.
func WithFunction(catalogYAML, definitionYAML []byte) ([]byte, error) {
	cat, err := documentNode(catalogYAML)
	if err != nil {
		return nil, fmt.Errorf("add a function to the catalog: the catalog: %w", err)
	}
	def, err := documentNode(definitionYAML)
	if err != nil {
		return nil, fmt.Errorf("add a function to the catalog: the definition: %w", err)
	}
	entry := mappingValue(def, "spec")
	if entry == nil || entry.Kind != yaml.MappingNode {
		return nil, errors.New("add a function to the catalog: the definition has no spec")
	}
	spec, err := child(cat, "spec", yaml.MappingNode)
	if err != nil {
		return nil, fmt.Errorf("add a function to the catalog: the catalog's %w", err)
	}
	fns, err := child(spec, "krmFunctions", yaml.SequenceNode)
	if err != nil {
		return nil, fmt.Errorf("add a function to the catalog: the catalog's spec.%w", err)
	}
	fns.Style = 0 // a flow list ([]) would print the entry on one line
	group, kind := scalarAt(entry, "group"), scalarAt(mappingValue(entry, "names"), "kind")
	replaced := false
	for i, f := range fns.Content {
		if scalarAt(f, "group") == group && scalarAt(mappingValue(f, "names"), "kind") == kind {
			fns.Content[i], replaced = entry, true
			break
		}
	}
	if !replaced {
		fns.Content = append(fns.Content, entry)
	}
	if cat.Style&yaml.FlowStyle != 0 {
		blockStyle(cat) // a JSON catalog: its YAML would start with "{", and read as JSON
	}
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(&yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{cat}}); err != nil {
		return nil, fmt.Errorf("add a function to the catalog: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("add a function to the catalog: %w", err)
	}
	return out.Bytes(), nil
}

// blockStyle turns the flow collections under n into block ones.
func blockStyle(n *yaml.Node) {
	n.Style &^= yaml.FlowStyle
	for _, c := range n.Content {
		blockStyle(c)
	}
}

// documentNode is the top-level mapping of the first document of data.
func documentNode(data []byte) (*yaml.Node, error) {
	var doc yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&doc); err != nil {
		return nil, err
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, errors.New("not a YAML or JSON object")
	}
	return doc.Content[0], nil
}

// child is the value of key in mapping m, added empty when m has none; a value of another kind
// is an error.
func child(m *yaml.Node, key string, kind yaml.Kind) (*yaml.Node, error) {
	v := mappingValue(m, key)
	if v == nil {
		v = &yaml.Node{Kind: kind}
		m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key}, v)
	}
	if v.Kind != kind {
		return nil, fmt.Errorf("%s is not a %s", key, map[yaml.Kind]string{yaml.MappingNode: "mapping", yaml.SequenceNode: "list"}[kind])
	}
	return v, nil
}

// mappingValue is the value of key in mapping m, or nil, found as the decoder finds it (findKey:
// the last such key, then merged mappings).
func mappingValue(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	_, v := findKey(m, key, 0)
	return v
}

func scalarAt(m *yaml.Node, key string) string {
	if v := mappingValue(m, key); v != nil && v.Kind == yaml.ScalarNode {
		return v.Value
	}
	return ""
}
