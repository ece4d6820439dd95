package kustomize

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	"github.com/krm-catalog/krm-catalog/fn"
	"github.com/krm-catalog/krm-catalog/fn/kustomize/composition"
)

// ErrNothingMade: a Composition that produced no resources, which KEP-2299 makes a failure.
var ErrNothingMade = errors.New("the composition produced no resources")

// Run builds dir as `krm-catalog build` does: a directory holding a composition.yaml (and no
// kustomization file: with both, the composition loader reports KEP-2299's error) runs that
// Composition from no resources, its functions resolved through o.Functions for its catalogs;
// anything else is a kustomization (Build), with o.Kustomize checked first. The results go to resultsDir when it is set, whether
// the build succeeded or not. The report is never nil; its Err is the error returned.
func Run(ctx context.Context, dir string, o Options, resultsDir string) (*fn.Report, error) {
	rep := &fn.Report{}
	var out []byte
	var err error
	if hasComposition(dir) {
		out, rep.Runs, err = runComposition(ctx, dir, o, rep)
	} else {
		// flags kustomize build would refuse refuse the build; a Composition has no use for them
		if err := o.Kustomize.Check(); err != nil {
			return rep.Fail(err, true), err
		}
		out, rep.Runs, err = Build(ctx, dir, o)
		if errors.Is(err, ErrInvalid) {
			rep.Refused = true
		}
	}
	if rep.Refused {
		return rep.Fail(err, true), err
	}
	rep.Steps = fn.StepLines(rep.Runs)
	rep.Err = err
	if resultsDir != "" {
		if werr := rep.WriteResults(resultsDir); werr != nil {
			return rep.Fail(werr, false), werr
		}
	}
	if err == nil {
		rep.Output = out
	}
	return rep, err
}

func hasComposition(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, composition.FileName))
	return err == nil
}

// runComposition loads and runs the Composition in dir; one that cannot be loaded refuses the run.
func runComposition(ctx context.Context, dir string, o Options, rep *fn.Report) ([]byte, []fn.FunctionResults, error) {
	comp, err := composition.Load(dir)
	if err != nil {
		rep.Refused = true
		return nil, nil, err
	}
	if o.Functions == nil {
		return nil, nil, errors.New("no function runner for the composition's functions")
	}
	p, err := o.Functions.For(comp.Catalogs)
	if err != nil {
		return nil, nil, err
	}
	items, runs, err := comp.Run(ctx, p)
	if err != nil {
		return nil, runs, err
	}
	if len(items) == 0 {
		return nil, runs, ErrNothingMade
	}
	data, err := composition.Format(items)
	return data, runs, err
}
