package fn

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// Function is one runnable KRM function, whatever its runtime.
type Function interface {
	// Run sends the list (items and functionConfig) to the function and returns the list it wrote.
	// When the function fails the error is a *FunctionError, and the list, when the function wrote
	// one, carries its results.
	Run(ctx context.Context, in *ResourceList) (*ResourceList, error)
}

// FunctionError is a function that exited non-zero, could not be started, or wrote no valid output.
type FunctionError struct {
	ExitCode int
	// Stderr is the end of what the function wrote to standard error (it was also passed through).
	Stderr string
	Err    error
}

func (e *FunctionError) Error() string {
	msg := e.Err.Error()
	// An *exec.ExitError already says "exit status N"; say it once.
	if status := fmt.Sprintf("exit status %d", e.ExitCode); e.ExitCode > 0 && !strings.HasPrefix(msg, status) {
		msg = status + ": " + msg
	}
	return msg
}

func (e *FunctionError) Unwrap() []error { return []error{ErrFunctionFailed, e.Err} }

// Step is one function in a pipeline, with the functionConfig it runs with.
type Step struct {
	// Name says what runs, for messages and results: "fn.example.com/v1 SetNamespace (exec)".
	Name     string
	Function Function
	Config   *yaml.RNode
}

// Run runs the steps in order over items. The output of each step is the input of the next;
// comments, field order and scalar styles are restored after each step (see Restore). It stops at
// the first step that fails or reports an error result, returning what the steps reported so far and
// an error wrapping ErrFunctionFailed; the items are then not to be written.
func Run(ctx context.Context, steps []Step, items []*yaml.RNode) ([]*yaml.RNode, []FunctionResults, error) {
	return run(ctx, steps, items, false)
}

// RunInPackage is Run over the resources of a package directory (fn run DIR, fn render): as kpt's
// function runner does after every function (enforcePathInvariants), a step that leaves a resource
// whose path leads out of the package fails, with the resource named in its results. Commands whose
// output is printed (build, fn proxy) use Run: a path annotation there is output, not a write.
func RunInPackage(ctx context.Context, steps []Step, items []*yaml.RNode) ([]*yaml.RNode, []FunctionResults, error) {
	return run(ctx, steps, items, true)
}

func run(ctx context.Context, steps []Step, items []*yaml.RNode, inPackage bool) ([]*yaml.RNode, []FunctionResults, error) {
	var all []FunctionResults
	for _, s := range steps {
		if err := ctx.Err(); err != nil {
			return nil, all, err
		}
		out, fr, err := runStep(ctx, s, items, inPackage)
		all = append(all, fr)
		if err != nil {
			return nil, all, fmt.Errorf("%s: %w", s.Name, err)
		}
		items = out
	}
	return items, all, nil
}

func runStep(ctx context.Context, s Step, items []*yaml.RNode, inPackage bool) ([]*yaml.RNode, FunctionResults, error) {
	st, err := startStep(s, items, inPackage)
	if err != nil {
		return nil, st.fr, err
	}
	out, runErr := s.Function.Run(ctx, &ResourceList{Items: items, FunctionConfig: s.Config})
	return st.finish(out, runErr)
}

// stepRun is one step around its function: the items tagged and reconciled before the call
// (startStep), then its verdict and its output restored and reconciled after it (finish).
type stepRun struct {
	fr        FunctionResults
	inPackage bool
	placed    bool // the items come from files: new ones get a file as soon as they appear
	form      annotationForm
	tags      tagged
	origByID  map[string][]string
	dir       string
}

func startStep(s Step, items []*yaml.RNode, inPackage bool) (*stepRun, error) {
	st := &stepRun{fr: FunctionResults{Function: s.Name}, inPackage: inPackage, dir: functionDir(s.Config)}
	orig, form, err := prepareAnnotations(items)
	if err != nil {
		st.fr, err = rejected(st.fr, err)
		return st, err
	}
	st.form = form
	for _, it := range items {
		st.placed = st.placed || annotation(it, kioutil.PathAnnotation) != "" || annotation(it, kioutil.LegacyPathAnnotation) != ""
	}
	if st.tags, err = tagIDs(items); err != nil {
		return st, err
	}
	st.origByID = make(map[string][]string, len(items))
	for i, it := range items {
		st.origByID[annotation(it, kioutil.IdAnnotation)] = orig[i]
	}
	return st, nil
}

// verdict records the call's results and decides it (Verdict); a failed call's items are given
// back their id annotations.
func (st *stepRun) verdict(out *ResourceList, runErr error) error {
	if out != nil {
		st.fr.Results, st.fr.Stderr = out.Results, out.Stderr
	}
	code, failed := Verdict(out, runErr)
	st.fr.ExitCode = code
	if failed != nil {
		var fe *FunctionError
		if errors.As(failed, &fe) && fe.Stderr != "" {
			st.fr.Stderr = fe.Stderr
		}
		_ = restoreFromInputs(st.tags, nil, false)
	}
	return failed
}

func (st *stepRun) finish(out *ResourceList, runErr error) ([]*yaml.RNode, FunctionResults, error) {
	if err := st.verdict(out, runErr); err != nil {
		return nil, st.fr, err
	}
	outOrig := make([][]string, len(out.Items))
	for i, o := range out.Items {
		outOrig[i] = st.origByID[itemID(o)]
	}
	if err := restoreFromInputs(st.tags, out.Items, out.SentJSON); err != nil {
		return nil, st.fr, err
	}
	for i, o := range out.Items {
		if err := st.settle(o, i, outOrig[i]); err != nil {
			return nil, st.fr, err
		}
	}
	return out.Items, st.fr, nil
}

// settle reconciles the annotations of output item i, restored, whose input item had the path
// and index annotations orig; it places a new one in the package and keeps it inside.
func (st *stepRun) settle(o *yaml.RNode, i int, orig []string) (err error) {
	if err := reconcileAnnotations(o, i, orig, st.form); err != nil {
		st.fr, err = rejected(st.fr, err)
		return err
	}
	if st.placed {
		if err := placeNew(o, st.dir); err != nil {
			return err
		}
	}
	if st.inPackage {
		if err := insidePackage(o); err != nil {
			st.fr, err = rejected(st.fr, err)
			return err
		}
	}
	return nil
}

// itemID is the id annotation the pipeline gave an item (tagIDs).
func itemID(n *yaml.RNode) string {
	if id := annotation(n, kioutil.IdAnnotation); id != "" {
		return id
	}
	return annotation(n, kioutil.LegacyIdAnnotation)
}

// insidePackage refuses a resource whose path leads out of its package ("../x.yaml" once
// cleaned), as kpt's enforcePathInvariants does.
func insidePackage(n *yaml.RNode) error {
	p := annotation(n, kioutil.PathAnnotation)
	if p == "" {
		p = annotation(n, kioutil.LegacyPathAnnotation)
	}
	if clean := path.Clean(p); clean == ".." || strings.HasPrefix(clean, "../") {
		return fmt.Errorf("%w: %s/%s: path %q is outside the package", ErrInvalidPackage, n.GetKind(), n.GetName(), p)
	}
	return nil
}

// placeNew gives a resource that has no path the file kyaml's function runner gives it right after
// the step that made it (kpt runs functions through it): its default path in dir, from its kind,
// name and namespace as they are now, not as later steps leave them. Its index is decided when it is
// written.
func placeNew(n *yaml.RNode, dir string) error {
	if annotation(n, kioutil.PathAnnotation) != "" || annotation(n, kioutil.LegacyPathAnnotation) != "" {
		return nil
	}
	p := defaultPath(n)
	if dir != "" {
		p = path.Join(dir, p)
	}
	if err := setAnnotation(n, kioutil.PathAnnotation, p); err != nil {
		return err
	}
	return setAnnotation(n, kioutil.LegacyPathAnnotation, p)
}

// functionDir is the directory kyaml's function runner puts a function's new resources in
// (runtimeutil.FunctionFilter's getFunctionScope): that of the function config's path annotation,
// one up when it is a directory named "functions"; "" when the config has no path (a config given
// by the command, a Kptfile step's configMap).
func functionDir(cfg *yaml.RNode) string {
	if cfg == nil {
		return ""
	}
	p := annotation(cfg, kioutil.PathAnnotation)
	if p == "" {
		p = annotation(cfg, kioutil.LegacyPathAnnotation)
	}
	if p == "" {
		return ""
	}
	dir := path.Clean(path.Dir(p))
	if path.Base(dir) == "functions" {
		dir = path.Dir(dir)
	}
	if dir == "." {
		return ""
	}
	return dir
}

// Prepare readies n steps in two passes: check(i) resolves and validates the i-th one, returning
// its name and, when its config is invalid, results (with an error); build(i) makes its step. Every
// check runs first, so that all invalid configs are reported at once and nothing is fetched or run
// when one is invalid; the results of the invalid ones come back with the first such error. Any
// other error stops Prepare.
func Prepare(n int, check func(i int) (string, []Result, error), build func(i int) (Step, error)) ([]Step, []FunctionResults, error) {
	var invalid []FunctionResults
	var firstErr error
	for i := range n {
		name, results, err := check(i)
		if len(results) > 0 {
			invalid = append(invalid, FunctionResults{Function: name, ExitCode: 1, Results: results})
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		if err != nil {
			return nil, nil, err
		}
	}
	if len(invalid) > 0 {
		return nil, invalid, firstErr
	}
	steps := make([]Step, 0, n)
	for i := range n {
		s, err := build(i)
		if err != nil {
			return nil, nil, err
		}
		steps = append(steps, s)
	}
	return steps, nil, nil
}

// errorSummary says how many error results there are and what the first one says.
func errorSummary(rs []Result) string {
	n := 0
	for _, r := range rs {
		if r.IsError() {
			n++
		}
	}
	if n == 0 {
		return "no error result"
	}
	first := rs[firstError(rs)]
	if n == 1 {
		return "1 error result: " + first.String()
	}
	return fmt.Sprintf("%d error results, the first: %s", n, first.String())
}
