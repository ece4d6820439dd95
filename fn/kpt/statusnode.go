package kpt

import (
	"strconv"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/fn"
	"github.com/krm-catalog/krm-catalog/pkg/krmfn/yamlfast"
)

// A render status holds every result of every step (thousands for a large package), and encoding
// it through yaml.Marshal and reading the text back cost a fifth of fn render's own CPU.
// statusNode builds the same nodes directly when every string in the status is one yaml.Marshal
// writes plain or single-quoted, and the few shapes it writes otherwise (an empty resourceRef, file
// or field, a field's values, a result's tags) are absent; anything else goes through toNode. The differential tests hold it to
// toNode.

// statusNode is toNode(rs): the nodes of rs as yaml.Marshal writes it and yaml.v3 reads it back,
// positions aside.
func statusNode(rs *RenderStatus) (*yaml.Node, error) {
	if !fn.FastPathsEnabled() {
		return toNode(rs)
	}
	var b statusBuilder
	m := b.mapping()
	for _, steps := range []struct {
		key   string
		steps []StepStatus
	}{{"mutationSteps", rs.MutationSteps}, {"validationSteps", rs.ValidationSteps}} {
		if len(steps.steps) == 0 {
			continue
		}
		seq := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: make([]*yaml.Node, 0, len(steps.steps))}
		for _, s := range steps.steps {
			seq.Content = append(seq.Content, b.step(s))
		}
		b.add(m, steps.key, seq)
	}
	b.str(m, "errorSummary", rs.ErrorSummary)
	if b.slow || len(m.Content) == 0 {
		return toNode(rs) // an empty status is written `{}`
	}
	return m, nil
}

// statusBuilder builds the nodes; slow is set when something is not of the shapes it builds.
type statusBuilder struct{ slow bool }

func (b *statusBuilder) mapping() *yaml.Node { return &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"} }

func (b *statusBuilder) add(m *yaml.Node, key string, v *yaml.Node) {
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, v)
}

// str adds a string field that omitempty leaves out when empty.
func (b *statusBuilder) str(m *yaml.Node, key, v string) {
	if v == "" {
		return
	}
	style, ok := stringStyle(v)
	if !ok {
		b.slow = true
		return
	}
	b.add(m, key, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v, Style: style})
}

func (b *statusBuilder) step(s StepStatus) *yaml.Node {
	m := b.mapping()
	b.str(m, "name", s.Name)
	b.str(m, "image", s.Image)
	b.str(m, "exec", s.Exec)
	b.str(m, "executionError", s.ExecutionError)
	b.str(m, "stderr", s.Stderr)
	b.add(m, "exitCode", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(s.ExitCode)})
	b.results(m, "results", s.Results)
	b.results(m, "errorResults", s.ErrorResults)
	if s.Skipped {
		b.add(m, "skipped", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "true"})
	}
	return m
}

func (b *statusBuilder) results(m *yaml.Node, key string, rs []fn.Result) {
	if len(rs) == 0 {
		return
	}
	seq := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: make([]*yaml.Node, 0, len(rs))}
	for _, r := range rs {
		seq.Content = append(seq.Content, b.result(r))
	}
	b.add(m, key, seq)
}

func (b *statusBuilder) result(r fn.Result) *yaml.Node {
	m := b.mapping()
	if r.Message == "" || len(r.Tags) > 0 {
		b.slow = true // `message: ""`, a map's order: left to toNode
		return m
	}
	b.str(m, "message", r.Message)
	b.str(m, "severity", string(r.Severity))
	if ref := r.ResourceRef; ref != nil {
		if *ref == (fn.ResourceRef{}) {
			b.slow = true // written `resourceRef: {}`
			return m
		}
		rm := b.mapping()
		b.str(rm, "apiVersion", ref.APIVersion)
		b.str(rm, "kind", ref.Kind)
		b.str(rm, "name", ref.Name)
		b.str(rm, "namespace", ref.Namespace)
		b.add(m, "resourceRef", rm)
	}
	if f := r.Field; f != nil {
		if f.Path == "" || f.CurrentValue != nil || f.ProposedValue != nil {
			b.slow = true // `field: {}`, or values of any type
			return m
		}
		fm := b.mapping()
		b.str(fm, "path", f.Path)
		b.add(m, "field", fm)
	}
	if f := r.File; f != nil {
		if *f == (fn.File{}) {
			b.slow = true
			return m
		}
		fm := b.mapping()
		b.str(fm, "path", f.Path)
		if f.Index != 0 {
			b.add(fm, "index", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(f.Index)})
		}
		b.add(m, "file", fm)
	}
	return m
}

// stringStyle is the style yaml.Marshal writes v in, as yaml.v3 reads it back, when that is plain
// or single-quoted: printable ASCII on one line that no YAML reader takes for another type
// (yaml.Marshal quotes YAML 1.1's booleans and sexagesimals too), plain where yaml.v3's emitter may
// write it so, single-quoted where not (`set annotations: {"a":"b"}`). ok is false for the rest.
func stringStyle(v string) (style yaml.Style, ok bool) {
	for i := 0; i < len(v); i++ {
		if v[i] < 0x20 || v[i] > 0x7e {
			return 0, false
		}
	}
	if v == "" || yamlfast.ResolvedTag(v) != "!!str" || fn.IsYAML11LookAlike(v) {
		return 0, false
	}
	if !yamlfast.PlainAllowed(v) {
		return yaml.SingleQuotedStyle, true
	}
	return 0, true
}
