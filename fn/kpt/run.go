package kpt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/krm-catalog/krm-catalog/fn"
	"github.com/krm-catalog/krm-catalog/fn/invoke"
	"github.com/krm-catalog/krm-catalog/resolver"
)

// Request is one `fn render`: the package, and where its result goes.
type Request struct {
	// Dir is the root package.
	Dir string
	Options
	// ResultsDir, when set, receives the results (fn.WriteResults) of a render that got as far as
	// its steps, whether it succeeded or not.
	ResultsDir string
	// Output puts the rendered package elsewhere (OutputStdout, OutputUnwrap, or a directory that
	// must not exist; see Result.Output) and leaves the package alone; "" writes it back.
	Output string
	// DryRun prints the rendered resources, with their path annotations, instead of writing them
	// back; it is refused where the write would be. It does not go with Output.
	DryRun bool
}

// Run renders the package as `kpt fn render` does and puts the result where the request says: back
// into the package (only when every step succeeded), or to print, or into a directory. A render
// that fails has its failure recorded in the root Kptfile's status, as kpt records it, and changes
// no other file. The results are written before anything else, so that a write refused by the
// write rule is in them. The report is never nil; its Err is the error returned.
func Run(ctx context.Context, req Request) (*fn.Report, error) {
	rep := &fn.Report{}
	opts := req.Options
	opts.memoLookup = req.Output == "" && !req.DryRun && req.ResultsDir == ""
	res, err := Render(ctx, req.Dir, opts)
	if err != nil {
		if res != nil {
			failed(rep, req, res, err)
		} else {
			rep.Fail(err, false)
		}
		return rep, rep.Err
	}
	if res.Unchanged {
		rep.Skipped, rep.Memo, rep.Summary, rep.SummaryToStdout = res.Package.Skipped, MemoMessage, summary(res), true
		return rep, nil
	}
	if req.Output != "" {
		output(rep, req, res)
		return rep, rep.Err
	}
	// --dry-run previews the write, refusals included
	dest := invoke.WriteBack
	if req.DryRun {
		dest = invoke.DryRun
	}
	items := res.Items
	if dest == invoke.WriteBack {
		if items, err = res.StatusItems(nil); err != nil {
			return rep.Fail(err, false), err
		}
	}
	rep.Runs, rep.Steps = res.Runs, stepLines(res.Status)
	out, outErr := invoke.PackageOutput(res.Package, items, dest)
	if outErr == nil && dest == invoke.WriteBack {
		keepKptfileLayout(res.Package, out.Changes)
	}
	if outErr != nil {
		rep.Reject("krm-catalog fn render: write", outErr)
	}
	if !writeResults(rep, req.ResultsDir) {
		return rep, rep.Err
	}
	if outErr != nil {
		if dest == invoke.WriteBack {
			// the last step's output is what cannot be written: kpt records that step as failed
			res.Status.RejectLast(rep.Err)
			rep.Warnings = appendErr(rep.Warnings, writeStatus(res, rep.Err))
		}
		return rep, rep.Err
	}
	rep.Skipped = res.Package.Skipped
	rep.Summary = summary(res)
	if dest == invoke.DryRun {
		rep.Output = out.Output
		return rep, nil
	}
	if err := out.Apply(); err != nil {
		return rep.Fail(err, false), err
	}
	if res.memo != nil {
		// remembering is an optimisation: a cache that cannot be written costs the next render time
		if err := res.memo.remember(res.Package.Digest(out.Changes)); err != nil {
			rep.Warnings = append(rep.Warnings, err)
		}
	}
	// kpt's summary goes to standard output, as kpt prints it, for scripts that read it
	rep.Changes, rep.SummaryToStdout = out.Changes, true
	return rep, nil
}

// failed reports a render that failed with err: its results, its steps, and the failure in the root
// Kptfile's status.
func failed(rep *fn.Report, req Request, res *Result, err error) {
	rep.Runs = res.Runs
	// a render refused after its functions ran (a path leaving a subpackage) is recorded, so that
	// the results do not say 0
	rep.RejectUnrecorded("krm-catalog fn render", err)
	if !writeResults(rep, req.ResultsDir) {
		return
	}
	rep.Steps = stepLines(res.Status)
	// a catalog the user did not trust is a refusal before anything is decided: nothing at all is
	// written
	rep.Refused = errors.Is(err, resolver.ErrUntrustedCatalog) || errors.Is(err, resolver.ErrInvalidReference)
	if req.Output == "" && !req.DryRun && !rep.Refused {
		rep.Warnings = appendErr(rep.Warnings, writeStatus(res, rep.Err))
	}
}

// output puts the rendered package where the request's Output says; the package and its Kptfile
// status are left alone.
func output(rep *fn.Report, req Request, res *Result) {
	rep.Runs, rep.Steps = res.Runs, stepLines(res.Status)
	var b bytes.Buffer
	err := res.Output(&b, req.Output)
	switch {
	case errors.Is(err, ErrOutputExists):
		rep.Fail(err, false)
	case err != nil:
		rep.Reject("krm-catalog fn render: write", err)
	}
	if !writeResults(rep, req.ResultsDir) || rep.Err != nil {
		return
	}
	rep.Skipped, rep.Summary, rep.Output = res.Package.Skipped, summary(res), b.Bytes()
}

// writeResults writes the report's results when dir is set; false means it could not, which is
// then how the run ends.
func writeResults(rep *fn.Report, dir string) bool {
	if dir == "" {
		return true
	}
	if err := rep.WriteResults(dir); err != nil {
		rep.Fail(err, false)
		return false
	}
	return true
}

func summary(res *Result) string {
	return fmt.Sprintf("Successfully executed %d function(s) in %d package(s)", len(res.Runs), res.Packages)
}

// stepLines are the steps that ran or could not start, by the version they resolved to, as kpt
// names them.
func stepLines(st RenderStatus) []fn.StepLine {
	var lines []fn.StepLine
	for _, s := range append(slices.Clone(st.MutationSteps), st.ValidationSteps...) {
		name := s.Image
		if name == "" {
			name = s.Exec
		}
		if !s.Skipped && name != "" {
			lines = append(lines, fn.StepLine{Name: name, ExitCode: s.ExitCode})
		}
	}
	return lines
}

// writeStatus writes the status of a failed render into the root Kptfile and changes no other
// file, unless the package asks for what rendered to be saved (kpt.dev/save-on-render-failure).
func writeStatus(res *Result, renderErr error) error {
	items, err := res.StatusItems(renderErr)
	if err != nil {
		return err
	}
	changes, err := res.Package.Plan(items)
	if err != nil {
		return fmt.Errorf("write the Kptfile status: %w", err)
	}
	if !res.Saved {
		changes = slices.DeleteFunc(changes, func(c fn.FileChange) bool { return c.Path != KptfileName })
	}
	keepKptfileLayout(res.Package, changes)
	return res.Package.Apply(changes)
}

func appendErr(errs []error, err error) []error {
	if err == nil {
		return errs
	}
	return append(errs, err)
}
