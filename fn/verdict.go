package fn

import (
	"errors"
)

// Verdict decides whether one function call failed, and the exit code its results record. It is
// the only place that decides it, for every runtime and every command (fn run, fn render, build,
// fn proxy, fn serve all run steps through Run); docs/runtimes.md, "The verdict", states the rule:
//
//   - a call that returned an error failed: the function could not start, crashed, exited
//     non-zero, ran past its timeout or wrote no ResourceList (its exit code, else 1);
//   - a process that exited 0 (out.Exited) succeeded, whatever results it reports: its exit status
//     is its verdict, as kpt and Porch's runners decide;
//   - a call that has no exit status (an in-process function, starlark or a kustomize built-in, or
//     a spec v2 server's answer) failed when it reports an error result, and records exit code 1.
//
// The error wraps ErrFunctionFailed: a *FunctionError, or a *ResultsError for error results.
func Verdict(out *ResourceList, err error) (int, error) {
	if err != nil {
		code := 1
		var fe *FunctionError
		if errors.As(err, &fe) && fe.ExitCode > 0 {
			code = fe.ExitCode
		}
		if !errors.Is(err, ErrFunctionFailed) {
			err = &FunctionError{Err: err}
		}
		return code, err
	}
	if out == nil {
		return 1, &FunctionError{Err: errNoList}
	}
	if !out.Exited && HasErrors(out.Results) {
		return 1, &ResultsError{Results: out.Results}
	}
	return 0, nil
}

var errNoList = errors.New("it returned no ResourceList")
