package cmd

// fn run --image: kpt fn eval's imperative form, with the image resolved through the trusted
// catalogs rather than pulled and run as it is named.

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/fn"
	"github.com/krm-catalog/krm-catalog/fn/kpt"
	"github.com/krm-catalog/krm-catalog/fn/runner"
	"github.com/krm-catalog/krm-catalog/resolver"
)

// errFnArgsWithConfig is kpt fn eval's refusal of key=value arguments with a config file.
var errFnArgsWithConfig = errors.New("function arguments can only be specified without function config file")

// functionInput is the functionConfig kpt fn eval makes of the arguments after --: a ConfigMap
// named function-input whose data holds every key=value, each value a string whatever it looks
// like. As in kpt, a first argument without = names the config's kind instead of ConfigMap.
func functionInput(args []string) (*yaml.RNode, error) {
	kind := "ConfigMap"
	data := yaml.NewMapRNode(nil)
	for i, a := range args {
		k, v, ok := strings.Cut(a, "=")
		if !ok {
			if i == 0 {
				kind = a
				continue
			}
			return nil, fmt.Errorf("function argument %q: args must have keys and values separated by =", a)
		}
		if err := data.PipeE(yaml.SetField(k, yaml.NewStringRNode(v))); err != nil {
			return nil, fmt.Errorf("function argument %q: %w", a, err)
		}
	}
	cfg := yaml.NewMapRNode(nil)
	md := yaml.NewMapRNode(&map[string]string{"name": "function-input"})
	for _, f := range []struct {
		name  string
		value *yaml.RNode
	}{
		{"apiVersion", yaml.NewScalarRNode("v1")},
		{"kind", yaml.NewScalarRNode(kind)},
		{"metadata", md},
		{"data", data},
	} {
		if err := cfg.PipeE(yaml.SetField(f.name, f.value)); err != nil {
			return nil, fmt.Errorf("function config: %w", err)
		}
	}
	return cfg, nil
}

// resolveRunImage finds the function an image names in the trusted catalogs: a short name (no
// registry or path) is first the repository of that name a trusted catalog lists, as fn render
// completes it, else kpt's default prefix is put before it.
func resolveRunImage(ctx context.Context, r *resolver.Resolver, image string) (*resolver.Resolution, error) {
	full, err := kpt.ExpandShortImage(ctx, r, image)
	if err != nil {
		return nil, err
	}
	res, err := r.ResolveImage(ctx, full, "")
	if err != nil {
		return nil, fmt.Errorf("--image: %w", err)
	}
	return res, nil
}

// imagePreparer readies configs as calls of one resolved function, which runs however its catalog
// entry says (the runtime chosen as for any function: --runtime, else starlark, container, exec).
type imagePreparer struct {
	r   *runner.Runner
	res *resolver.Resolution
}

func (p imagePreparer) Prepare(ctx context.Context, configs []*yaml.RNode) ([]fn.Step, []fn.FunctionResults, error) {
	checked := make([]*runner.Checked, len(configs))
	return fn.Prepare(len(configs), func(i int) (string, []fn.Result, error) {
		c, results, err := p.r.CheckResolved(p.res, configs[i])
		if err != nil && len(results) == 0 {
			return "", nil, err
		}
		checked[i] = c
		return c.Name, results, err
	}, func(i int) (fn.Step, error) {
		return p.r.Build(ctx, checked[i], "")
	})
}
