package kpt

import (
	"errors"
	"fmt"

	"github.com/google/cel-go/cel"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// ErrCondition: a step's condition is not a CEL expression yielding true or false.
var ErrCondition = errors.New("invalid step condition")

// maxConditionCost bounds the work of evaluating one condition (CEL's cost units), so that an
// expression over many resources cannot run without end.
const maxConditionCost = 1_000_000

// condition is a step's compiled `condition`: a CEL expression over `resources`, the resources the
// step would be given (each as a map), deciding whether it runs.
type condition struct {
	expr string
	prg  cel.Program
}

// compileCondition checks and compiles a condition before anything runs.
func compileCondition(expr string) (*condition, error) {
	env, err := cel.NewEnv(cel.Variable("resources", cel.ListType(cel.DynType)))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCondition, err)
	}
	ast, iss := env.Compile(expr)
	if iss != nil && iss.Err() != nil {
		return nil, fmt.Errorf("%w %q: %v", ErrCondition, expr, iss.Err())
	}
	if t := ast.OutputType(); t != cel.BoolType && t != cel.DynType {
		return nil, fmt.Errorf("%w %q: yields %s, not a bool", ErrCondition, expr, t)
	}
	prg, err := env.Program(ast, cel.CostLimit(maxConditionCost))
	if err != nil {
		return nil, fmt.Errorf("%w %q: %v", ErrCondition, expr, err)
	}
	return &condition{expr: expr, prg: prg}, nil
}

// holds evaluates the condition over the resources.
func (c *condition) holds(items []*yaml.RNode) (bool, error) {
	resources := make([]any, 0, len(items))
	for _, it := range items {
		m, err := it.Map()
		if err != nil {
			return false, fmt.Errorf("%w %q: %v", ErrCondition, c.expr, err)
		}
		resources = append(resources, m)
	}
	out, _, err := c.prg.Eval(map[string]any{"resources": resources})
	if err != nil {
		return false, fmt.Errorf("%w %q: %v", ErrCondition, c.expr, err)
	}
	b, ok := out.Value().(bool)
	if !ok {
		return false, fmt.Errorf("%w %q: yields %v, not a bool", ErrCondition, c.expr, out.Value())
	}
	return b, nil
}

// runs reports whether a step runs over the resources it would be given: always, unless its
// condition yields false.
func (f Function) runs(items []*yaml.RNode) (bool, error) {
	if f.Condition == "" {
		return true, nil
	}
	c, err := compileCondition(f.Condition)
	if err != nil {
		return false, err
	}
	return c.holds(items)
}
