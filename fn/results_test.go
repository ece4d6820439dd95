package fn

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestUnrecorded: the result that records a rejection is left out of what is printed beside the
// error, wherever the rejection is wrapped; anything else is printed as it is.
func TestUnrecorded(t *testing.T) {
	t.Parallel()
	ran := FunctionResults{Function: "f", Results: []Result{{Message: "a warning", Severity: SeverityWarning}}}
	why := errors.New("invalid package: nothing was written")
	recorded, rejErr := RejectedRun([]FunctionResults{ran}, "write", why)
	stepFR, stepErr := rejected(ran, why)
	warn, bad, worse := Result{Message: "a warning", Severity: SeverityWarning}, Result{Message: "bad", Severity: SeverityError}, Result{Message: "worse", Severity: SeverityError}
	failed := FunctionResults{Function: "g", ExitCode: 1, Results: []Result{warn, bad, worse}}
	failedErr := fmt.Errorf("g: %w", &ResultsError{Results: failed.Results})
	tests := []struct {
		name string
		runs []FunctionResults
		err  error
		want []FunctionResults
	}{
		{"a rejected write", recorded, rejErr, []FunctionResults{ran, {Function: "write", ExitCode: 1, Results: []Result{}}}},
		{"a rejected step, wrapped with its name", []FunctionResults{stepFR}, fmt.Errorf("f: %w", stepErr), []FunctionResults{{Function: "f", ExitCode: 1, Results: ran.Results}}},
		{"a function's error results, the first named by the error", []FunctionResults{ran, failed}, failedErr,
			[]FunctionResults{ran, {Function: "g", ExitCode: 1, Results: []Result{warn, worse}}}},
		{"error results the last run does not hold", []FunctionResults{failed, ran}, failedErr, []FunctionResults{failed, ran}},
		{"a function's own failure", recorded, errors.New("function failed"), recorded},
		{"no error", recorded, nil, recorded},
		{"a rejection the last result does not record", []FunctionResults{ran}, rejErr, []FunctionResults{ran}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tc.want, Unrecorded(tc.runs, tc.err)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	if !errors.Is(rejErr, why) || rejErr.Error() != why.Error() {
		t.Errorf("RejectedRun's error %v does not carry %v as it is", rejErr, why)
	}
	if !errors.Is(failedErr, ErrFunctionFailed) || failedErr.Error() != "g: function failed: 2 error results, the first: [error]: bad" {
		t.Errorf("ResultsError says %q", failedErr)
	}
	if diff := cmp.Diff(bad, failed.Results[1]); diff != "" {
		t.Error("Unrecorded changed the runs it was given")
	}
	if recorded[1].Results[0].Message != why.Error() {
		t.Errorf("the record says %q, want %q", recorded[1].Results[0].Message, why)
	}
}

// TestRecordFailure: a failure no run records is added as a rejection; one a run already records
// (a non-zero exit code) is left alone.
func TestRecordFailure(t *testing.T) {
	t.Parallel()
	ok := FunctionResults{Function: "f"}
	failed := FunctionResults{Function: "g", ExitCode: 1, Results: []Result{{Message: "bad", Severity: SeverityError}}}
	why := errors.New("outside the package")
	tests := []struct {
		name     string
		runs     []FunctionResults
		err      error
		want     []FunctionResults
		rejected bool
	}{
		{"no error", []FunctionResults{ok}, nil, []FunctionResults{ok}, false},
		{"unrecorded", []FunctionResults{ok}, why, []FunctionResults{ok, {Function: "render", ExitCode: 1, Results: []Result{{Message: why.Error(), Severity: SeverityError}}}}, true},
		{"no runs at all", nil, why, []FunctionResults{{Function: "render", ExitCode: 1, Results: []Result{{Message: why.Error(), Severity: SeverityError}}}}, true},
		{"a function failed", []FunctionResults{ok, failed}, why, []FunctionResults{ok, failed}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := RecordFailure(tc.runs, "render", tc.err)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("runs (-want +got):\n%s", diff)
			}
			var rej *RejectedError
			if errors.As(err, &rej) != tc.rejected || !errors.Is(err, tc.err) {
				t.Errorf("error %v (%T), want %v, rejected %v", err, err, tc.err, tc.rejected)
			}
		})
	}
}
