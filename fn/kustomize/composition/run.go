package composition

import (
	"context"
	"fmt"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/fn"
	"github.com/krm-catalog/krm-catalog/fn/kustomize/internal/kustrun"
	"github.com/krm-catalog/krm-catalog/fn/runner"
)

// StepPreparer readies a function transformer in two passes, as runner.Runner does: Check resolves
// and validates (results describe schema violations), Build applies permissions and fetches.
type StepPreparer interface {
	Check(ctx context.Context, cfg *yaml.RNode) (*runner.Checked, []fn.Result, error)
	Build(ctx context.Context, c *runner.Checked, baseDir string) (fn.Step, error)
}

// Steps turns the consolidated transformers into pipeline steps. Every function is resolved and
// its config validated before anything is fetched or runs; schema violations come back as results.
func (c *Consolidated) Steps(ctx context.Context, p StepPreparer) ([]fn.Step, []fn.FunctionResults, error) {
	checked := make([]*runner.Checked, len(c.Transformers))
	return fn.Prepare(len(c.Transformers), func(i int) (string, []fn.Result, error) {
		t := c.Transformers[i]
		if isBuiltin(t.Config) || isKustomization(t.Config) {
			return t.ID(), nil, nil
		}
		ch, results, err := p.Check(ctx, t.Config)
		if err != nil && len(results) == 0 {
			return "", nil, fmt.Errorf("transformer %s (from %s): %w", t.ID(), t.File, err)
		}
		checked[i] = ch
		return ch.Name, results, err
	}, func(i int) (fn.Step, error) {
		t := c.Transformers[i]
		if checked[i] == nil {
			return fn.Step{
				Name:     fmt.Sprintf("%s %s %s (kustomize)", t.Config.GetApiVersion(), t.Config.GetKind(), name(t.Config)),
				Function: &kustomizeFunction{dir: t.Dir(), config: t.Config, outside: t.Outside},
			}, nil
		}
		s, err := p.Build(ctx, checked[i], t.Dir())
		if err != nil {
			return fn.Step{}, fmt.Errorf("transformer %s (from %s): %w", t.ID(), t.File, err)
		}
		return s, nil
	})
}

// Run prepares the steps and runs them over an empty list, as KEP-2299 runs a Composition (it
// generates its resources), and returns the resources.
func (c *Consolidated) Run(ctx context.Context, p StepPreparer) ([]*yaml.RNode, []fn.FunctionResults, error) {
	steps, results, err := c.Steps(ctx, p)
	if err != nil {
		return nil, results, err
	}
	return fn.Run(ctx, steps, nil)
}

// Format prints the resources a Composition made as kustomize build prints resources: its key
// order, indentation and quoting, without the orchestrator's annotations.
func Format(items []*yaml.RNode) ([]byte, error) {
	clean, err := fn.StripInternal(items)
	if err != nil {
		return nil, err
	}
	data, err := (&fn.ResourceList{Items: clean}).EncodeOutput(fn.Input{Stream: true})
	if err != nil {
		return nil, err
	}
	return kustrun.Format(data)
}
