package fn

import (
	"errors"
	"fmt"
	"io"
	"slices"
)

// Report is what one run came to: what each function reported, which steps ran, what was skipped,
// written or is to be printed, and how the run ended. The run builds it where it ends (fn/invoke
// for fn run, fn/kpt for fn render, fn/kustomize for build); a command prints it and maps Err to
// its exit status. A failure that no function's results record is held apart (Rejected) and joins
// them only in Results.
type Report struct {
	// Runs are what every function that ran reported, or every invalid config, in order.
	Runs []FunctionResults
	// Steps are the steps that ran or could not start, one line each.
	Steps []StepLine
	// Skipped lists the package's files that were not read: they hold no Kubernetes resources.
	Skipped []string
	// Changes are the files the run wrote into the package or deleted from it.
	Changes []FileChange
	// Output is what goes to standard output: the resources, or a dry run's list.
	Output []byte
	// OutputTo, set instead of Output, writes it item by item (Printed.WriteTo), once.
	OutputTo io.WriterTo
	// Memo says why a run ran nothing: its input is what an earlier run with the same functions
	// wrote (docs/skip.md).
	Memo string
	// Summary closes a successful run for people; SummaryToStdout prints it on standard output
	// (where kpt prints it, for scripts that read it) rather than standard error.
	Summary         string
	SummaryToStdout bool
	// ResultsFile is where the results were written, when they were.
	ResultsFile string
	// Warnings are failures that did not change how the run ended (a Kptfile status left unwritten).
	Warnings []error
	// Err is how the run ended: nil when it succeeded.
	Err error
	// Refused says that Err is about what the run was given (input that could not be read, flags
	// that do not go together, a Kustomization that cannot be built as written): nothing ran.
	Refused bool
	// Rejected records a failure that came after the functions ran and that no function's results
	// hold (the write rule refused the output, say): Results adds it under its stage.
	Rejected *Rejection
}

// StepLine is one step of a run: what ran and how it ended.
type StepLine struct {
	Name     string
	ExitCode int
}

// Rejection is a run refused after its functions ran. Stage names the part of the run that
// refused it ("krm-catalog fn run: write").
type Rejection struct {
	Stage string
	Err   error
}

// Fail ends the report with err, as a run refused for what it was given when refused is true.
func (r *Report) Fail(err error, refused bool) *Report {
	r.Err, r.Refused = err, refused
	return r
}

// Reject ends the report with a rejection after the functions ran, recorded under stage (see
// Rejection); the error is err as a *RejectedError.
func (r *Report) Reject(stage string, err error) *Report {
	r.Rejected = &Rejection{Stage: stage, Err: err}
	r.Err = &RejectedError{Err: err}
	return r
}

// RejectUnrecorded ends the report with err: as a rejection under stage when no run records it (no
// run has a non-zero exit code: a function that failed, an invalid config and a step whose output
// was rejected all have one), so that the results do not say the run succeeded; as it is
// otherwise.
func (r *Report) RejectUnrecorded(stage string, err error) *Report {
	if err == nil {
		return r
	}
	for _, run := range r.Runs {
		if run.ExitCode != 0 {
			r.Err = err
			return r
		}
	}
	return r.Reject(stage, err)
}

// Results are the runs as results.yaml records them: a rejection joins them as an entry of its
// own, so that the file never says exit code 0 for a run that failed.
func (r *Report) Results() []FunctionResults {
	if r.Rejected == nil {
		return r.Runs
	}
	record := Result{Message: r.Rejected.Err.Error(), Severity: SeverityError}
	return append(slices.Clone(r.Runs), FunctionResults{Function: r.Rejected.Stage, ExitCode: 1, Results: []Result{record}})
}

// Shown are the runs as a command prints them beside Reason: a step's rejected output is recorded
// as the last result of its entry (see Run), which Reason says, so it is left off here.
func (r *Report) Shown() []FunctionResults {
	var rej *RejectedError
	if !errors.As(r.Err, &rej) || !rej.step || len(r.Runs) == 0 {
		return r.Runs
	}
	out := slices.Clone(r.Runs)
	last := &out[len(out)-1]
	if n := len(last.Results); n > 0 {
		last.Results = last.Results[: n-1 : n-1]
	}
	return out
}

// WriteResults writes Results to dir/results.yaml and records the file in the report.
func (r *Report) WriteResults(dir string) error {
	p, err := WriteResults(dir, r.Results())
	if err != nil {
		return err
	}
	r.ResultsFile = p
	return nil
}

// ShowsStderr reports whether a run's standard error is what tells it: unless the function
// reported an error result. A failure is said once, and a function's error results say why it
// failed (functions commonly print them on standard error as well); its standard error stays in
// the results.
func (fr FunctionResults) ShowsStderr() bool { return fr.Stderr != "" && !HasErrors(fr.Results) }

// Reason is what a command says last about a run that failed. When the step that failed has
// already told why (its error results, else its standard error, which the command prints), it
// names the step and where that account is; otherwise it is Err itself.
func (r *Report) Reason() string {
	if r.Err == nil {
		return ""
	}
	var rej *RejectedError
	if r.Rejected != nil || errors.As(r.Err, &rej) || !errors.Is(r.Err, ErrFunctionFailed) || len(r.Runs) == 0 {
		return r.Err.Error()
	}
	last := r.Runs[len(r.Runs)-1]
	switch {
	case last.ExitCode == 0:
		return r.Err.Error()
	case HasErrors(last.Results):
		return fmt.Sprintf("%s: function failed (exit code %d): its error results above say why", last.Function, last.ExitCode)
	case last.ShowsStderr():
		return fmt.Sprintf("%s: function failed (exit code %d): its standard error above says why", last.Function, last.ExitCode)
	}
	return r.Err.Error()
}

// StepLines are the steps of runs, one line each, for a run whose steps are its functions.
func StepLines(runs []FunctionResults) []StepLine {
	lines := make([]StepLine, 0, len(runs))
	for _, run := range runs {
		lines = append(lines, StepLine{Name: run.Function, ExitCode: run.ExitCode})
	}
	return lines
}
