package fn

import (
	"errors"
	"testing"
)

// Verdict is the one rule for every runtime: a process's exit status decides for it; a call that
// has none (in-process, a spec v2 server's answer) fails on an error result.
func TestVerdict(t *testing.T) {
	t.Parallel()
	errResult := []Result{{Message: "no limit", Severity: SeverityError}}
	info := []Result{{Message: "checked"}, {Message: "look", Severity: SeverityWarning}}
	tests := []struct {
		name     string
		out      *ResourceList
		err      error
		code     int
		failed   bool
		asResult bool // the failure is a *ResultsError
	}{
		{"a process that exited 0", &ResourceList{Exited: true}, nil, 0, false, false},
		{"a process that exited 0 with error results: its exit status decides, as kpt's", &ResourceList{Exited: true, Results: errResult}, nil, 0, false, false},
		{"a process that exited 1 with error results", &ResourceList{Results: errResult}, &FunctionError{ExitCode: 1, Err: errors.New("exit status 1")}, 1, true, false},
		{"a process that exited 3 without results", nil, &FunctionError{ExitCode: 3, Err: errors.New("exit status 3")}, 3, true, false},
		{"a timeout (no exit code)", nil, &FunctionError{ExitCode: -1, Err: errors.New("timed out after 1s")}, 1, true, false},
		{"an error that is not a FunctionError", nil, errors.New("start: no such file"), 1, true, false},
		{"a server's answer with error results", &ResourceList{Results: errResult}, nil, 1, true, true},
		{"an in-process function's error results", &ResourceList{Results: errResult}, nil, 1, true, true},
		{"no exit status, warnings and results without a severity only", &ResourceList{Results: info}, nil, 0, false, false},
		{"no list and no error", nil, nil, 1, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, err := Verdict(tc.out, tc.err)
			if code != tc.code || (err != nil) != tc.failed {
				t.Fatalf("Verdict = %d, %v; want %d, failed %v", code, err, tc.code, tc.failed)
			}
			if err == nil {
				return
			}
			if !errors.Is(err, ErrFunctionFailed) {
				t.Errorf("%v does not wrap ErrFunctionFailed", err)
			}
			var re *ResultsError
			if errors.As(err, &re) != tc.asResult {
				t.Errorf("%v: a *ResultsError = %v, want %v", err, !tc.asResult, tc.asResult)
			}
		})
	}
}
