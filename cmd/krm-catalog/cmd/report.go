package cmd

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/krm-catalog/krm-catalog/fn"
)

// printReport prints what a run of fn run, fn render or build came to and returns the command's
// exit: on standard error each function's account (its standard error unless it reported an error
// result, then its results, one line each), one line per step, where the results were written,
// the files skipped, warnings, the files written and the summary; on standard output what the run
// printed; last the reason a failed run gives (fn.Report.Reason), which repeats none of the above.
// A run refused for what it was given exits as a usage error.
func printReport(stdout, stderr io.Writer, rep *fn.Report) error {
	for _, r := range rep.Shown() {
		if r.ShowsStderr() {
			fmt.Fprint(stderr, r.Stderr)
			if !strings.HasSuffix(r.Stderr, "\n") {
				fmt.Fprintln(stderr)
			}
		}
		for _, res := range r.Results {
			fmt.Fprintf(stderr, "%s: %s\n", r.Function, res.String())
		}
	}
	for _, s := range rep.Steps {
		fmt.Fprintf(stderr, "krm-catalog: step %s: exit code %d\n", s.Name, s.ExitCode)
	}
	if rep.ResultsFile != "" {
		fmt.Fprintln(stderr, "results written to", rep.ResultsFile)
	}
	for _, s := range rep.Skipped {
		fmt.Fprintf(stderr, "krm-catalog: %s: skipped, not a Kubernetes resource\n", s)
	}
	for _, w := range rep.Warnings {
		fmt.Fprintf(stderr, "krm-catalog: %v\n", w)
	}
	if rep.Memo != "" {
		fmt.Fprintln(stderr, "krm-catalog:", rep.Memo)
	}
	for _, c := range rep.Changes {
		verb := "wrote"
		if c.Delete {
			verb = "deleted"
		}
		fmt.Fprintf(stderr, "%s %s\n", verb, c.Path)
	}
	if rep.Summary != "" {
		w := stderr
		if rep.SummaryToStdout {
			w = stdout
		}
		fmt.Fprintln(w, rep.Summary)
	}
	if rep.Output != nil {
		if _, err := stdout.Write(rep.Output); err != nil {
			return err
		}
	}
	if rep.OutputTo != nil {
		if _, err := rep.OutputTo.WriteTo(stdout); err != nil {
			return err
		}
	}
	if rep.Err == nil {
		return nil
	}
	fmt.Fprintln(stderr, "krm-catalog:", rep.Reason())
	var ee *exitError
	if rep.Refused || errors.As(runExit(rep.Err), &ee) && ee.code == ExitUsage {
		return usageErr(nil)
	}
	return failure(nil)
}
