package composition

import (
	"context"
	"fmt"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/fn"
)

// StepPreparer readies a function transformer: resolution, schema validation, permissions. It is
// runner.Runner.Step.
type StepPreparer interface {
	Step(ctx context.Context, cfg *yaml.RNode, baseDir string) (fn.Step, []fn.Result, error)
}

// Steps turns the consolidated transformers into pipeline steps. Every function is prepared (and
// its config validated) before any step runs; schema violations come back as results.
func (c *Consolidated) Steps(ctx context.Context, p StepPreparer) ([]fn.Step, []fn.FunctionResults, error) {
	return fn.Prepare(len(c.Transformers), func(i int) (fn.Step, []fn.Result, error) {
		t := c.Transformers[i]
		if isBuiltin(t.Config) || isKustomization(t.Config) {
			return fn.Step{
				Name:     fmt.Sprintf("%s %s %s (kustomize)", t.Config.GetApiVersion(), t.Config.GetKind(), name(t.Config)),
				Function: &kustomizeFunction{dir: t.Dir(), config: t.Config},
			}, nil, nil
		}
		s, results, err := p.Step(ctx, t.Config, t.Dir())
		if err != nil && len(results) == 0 {
			err = fmt.Errorf("transformer %s (from %s): %w", t.ID(), t.File, err)
		}
		return s, results, err
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
