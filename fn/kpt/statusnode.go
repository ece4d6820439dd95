package kpt

import (
	"strconv"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/fn"
)

// A render status holds every result of every step (thousands for a large package), and encoding
// it through yaml.Marshal and reading the text back cost a fifth of fn render's own CPU.
// statusNode builds the same nodes directly (fn.NodeBuilder) where it can, and goes through toNode
// otherwise. The differential tests hold it to toNode.

// statusNode is toNode(rs): the nodes of rs as yaml.Marshal writes it and yaml.v3 reads it back,
// positions aside.
func statusNode(rs *RenderStatus) (*yaml.Node, error) {
	if !fn.FastPathsEnabled() {
		return toNode(rs)
	}
	var b statusBuilder
	m := b.Mapping()
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
		b.Add(m, steps.key, seq)
	}
	b.Str(m, "errorSummary", rs.ErrorSummary)
	if b.Slow || len(m.Content) == 0 {
		return toNode(rs) // an empty status is written `{}`
	}
	return m, nil
}

// statusBuilder builds the nodes; Slow is set when something is not of the shapes it builds.
type statusBuilder struct{ fn.NodeBuilder }

func (b *statusBuilder) step(s StepStatus) *yaml.Node {
	m := b.Mapping()
	b.Str(m, "name", s.Name)
	b.Str(m, "image", s.Image)
	b.Str(m, "exec", s.Exec)
	b.Str(m, "executionError", s.ExecutionError)
	b.Str(m, "stderr", s.Stderr)
	b.Add(m, "exitCode", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(s.ExitCode)})
	b.results(m, "results", s.Results)
	b.results(m, "errorResults", s.ErrorResults)
	if s.Skipped {
		b.Add(m, "skipped", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: "true"})
	}
	return m
}

func (b *statusBuilder) results(m *yaml.Node, key string, rs []fn.Result) {
	if len(rs) == 0 {
		return
	}
	b.Add(m, key, b.Results(rs))
}
