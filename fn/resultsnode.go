package fn

import (
	"fmt"
	"strconv"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/pkg/krmfn/yamlfast"
)

// A list's results (thousands for a large package: one or more per resource) were encoded
// through yaml.v3, which marshals them to text and reads the text back; that cost a tenth of `fn run
// -`'s own CPU and, for a render's status, a fifth of fn render's. NodeBuilder builds the same nodes
// directly when every string is one yaml.v3 writes plain or single-quoted, and the few shapes it
// writes otherwise (an empty resourceRef, file or field, a field's values, a result's tags, an
// empty message) are absent; anything else sets Slow, and the caller encodes through yaml.v3.
// TestResultsNodeAsEncode and FuzzResultsNode (here), TestStatusNodeMatchesToNode and
// FuzzStatusNode (fn/kpt) hold it to that.

// NodeBuilder builds the nodes yaml.v3 reads back from what it writes for results; Slow is set
// when something is not of the shapes it builds.
type NodeBuilder struct{ Slow bool }

// Mapping is an empty mapping node.
func (b *NodeBuilder) Mapping() *yaml.Node { return &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"} }

// Add adds key: v to m.
func (b *NodeBuilder) Add(m *yaml.Node, key string, v *yaml.Node) {
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, v)
}

// Str adds a string field that omitempty leaves out when empty.
func (b *NodeBuilder) Str(m *yaml.Node, key, v string) {
	if v == "" {
		return
	}
	style, ok := StringStyle(v)
	if !ok {
		b.Slow = true
		return
	}
	b.Add(m, key, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v, Style: style})
}

// Results is the sequence of rs.
func (b *NodeBuilder) Results(rs []Result) *yaml.Node {
	seq := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: make([]*yaml.Node, 0, len(rs))}
	for _, r := range rs {
		seq.Content = append(seq.Content, b.Result(r))
	}
	return seq
}

// Result is the mapping of r.
func (b *NodeBuilder) Result(r Result) *yaml.Node {
	m := b.Mapping()
	if r.Message == "" || len(r.Tags) > 0 {
		b.Slow = true // `message: ""`, a map's order: left to yaml.v3
		return m
	}
	b.Str(m, "message", r.Message)
	b.Str(m, "severity", string(r.Severity))
	if ref := r.ResourceRef; ref != nil {
		if *ref == (ResourceRef{}) {
			b.Slow = true // written `resourceRef: {}`
			return m
		}
		rm := b.Mapping()
		b.Str(rm, "apiVersion", ref.APIVersion)
		b.Str(rm, "kind", ref.Kind)
		b.Str(rm, "name", ref.Name)
		b.Str(rm, "namespace", ref.Namespace)
		b.Add(m, "resourceRef", rm)
	}
	if f := r.Field; f != nil {
		if f.Path == "" || f.CurrentValue != nil || f.ProposedValue != nil {
			b.Slow = true // `field: {}`, or values of any type
			return m
		}
		fm := b.Mapping()
		b.Str(fm, "path", f.Path)
		b.Add(m, "field", fm)
	}
	if f := r.File; f != nil {
		if *f == (File{}) {
			b.Slow = true
			return m
		}
		fm := b.Mapping()
		b.Str(fm, "path", f.Path)
		if f.Index != 0 {
			b.Add(fm, "index", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(f.Index)})
		}
		b.Add(m, "file", fm)
	}
	return m
}

// StringStyle is the style yaml.v3 writes v in, as it reads it back, when that is plain or
// single-quoted: printable ASCII on one line that no YAML reader takes for another type (yaml.v3
// quotes YAML 1.1's booleans and sexagesimals too), plain where yaml.v3's emitter may write it so,
// single-quoted where not (`set annotations: {"a":"b"}`). ok is false for the rest.
func StringStyle(v string) (style yaml.Style, ok bool) {
	for i := 0; i < len(v); i++ {
		if v[i] < 0x20 || v[i] > 0x7e {
			return 0, false
		}
	}
	if v == "" || yamlfast.ResolvedTag(v) != "!!str" || IsYAML11LookAlike(v) {
		return 0, false
	}
	if !yamlfast.PlainAllowed(v) {
		return yaml.SingleQuotedStyle, true
	}
	return 0, true
}

// resultsNode is the node yaml.v3's Node.Encode makes of rs, positions aside: built directly where
// NodeBuilder can, encoded otherwise.
func resultsNode(rs []Result) (*yaml.Node, error) {
	if FastPathsEnabled() {
		var b NodeBuilder
		if n := b.Results(rs); !b.Slow {
			return n, nil
		}
	}
	var n yaml.Node
	if err := n.Encode(rs); err != nil {
		return nil, fmt.Errorf("encode results: %w", err)
	}
	return &n, nil
}
