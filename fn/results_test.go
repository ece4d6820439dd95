package fn

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// TestReportShown: what a command prints beside Reason leaves off the result that records a step's
// rejection, wherever the rejection is wrapped, since Reason says it; anything else is printed as
// it is, and Reason does not repeat a result that is printed.
func TestReportShown(t *testing.T) {
	t.Parallel()
	ran := FunctionResults{Function: "f", Results: []Result{{Message: "a warning", Severity: SeverityWarning}}}
	why := errors.New("invalid package: nothing was written")
	stepFR, stepErr := rejected(ran, why)
	warn, bad, worse := Result{Message: "a warning", Severity: SeverityWarning}, Result{Message: "bad", Severity: SeverityError}, Result{Message: "worse", Severity: SeverityError}
	failed := FunctionResults{Function: "g", ExitCode: 1, Results: []Result{warn, bad, worse}}
	failedErr := fmt.Errorf("g: %w", &ResultsError{Results: failed.Results})
	crashed := FunctionResults{Function: "h", ExitCode: 2, Stderr: "panic: boom\n"}
	crashedErr := fmt.Errorf("h: %w", &FunctionError{ExitCode: 2, Stderr: crashed.Stderr, Err: errors.New("exit status 2; stderr: panic: boom")})
	tests := []struct {
		name       string
		rep        *Report
		want       []FunctionResults
		wantReason string
	}{
		{"a rejected write", (&Report{Runs: []FunctionResults{ran}}).Reject("write", why), []FunctionResults{ran}, why.Error()},
		{"a rejected step, wrapped with its name", &Report{Runs: []FunctionResults{stepFR}, Err: fmt.Errorf("f: %w", stepErr)},
			[]FunctionResults{{Function: "f", ExitCode: 1, Results: ran.Results}}, "f: " + why.Error()},
		{"a function's error results: all printed, the reason names none", &Report{Runs: []FunctionResults{ran, failed}, Err: failedErr},
			[]FunctionResults{ran, failed}, "g: function failed (exit code 1): its error results above say why"},
		{"a function that failed with no result: its standard error says why", &Report{Runs: []FunctionResults{ran, crashed}, Err: crashedErr},
			[]FunctionResults{ran, crashed}, "h: function failed (exit code 2): its standard error above says why"},
		{"error results the last run does not hold", &Report{Runs: []FunctionResults{failed, ran}, Err: failedErr}, []FunctionResults{failed, ran}, failedErr.Error()},
		{"a failure nothing else tells", &Report{Runs: []FunctionResults{{Function: "x", ExitCode: 1}}, Err: fmt.Errorf("x: %w", &FunctionError{Err: errors.New("no such file")})},
			[]FunctionResults{{Function: "x", ExitCode: 1}}, "x: no such file"},
		{"no error", &Report{Runs: []FunctionResults{ran}}, []FunctionResults{ran}, ""},
		{"a rejection the runs do not record", &Report{Runs: []FunctionResults{ran}, Err: &RejectedError{Err: why}}, []FunctionResults{ran}, why.Error()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tc.want, tc.rep.Shown()); diff != "" {
				t.Errorf("shown (-want +got):\n%s", diff)
			}
			if got := tc.rep.Reason(); got != tc.wantReason {
				t.Errorf("reason %q, want %q", got, tc.wantReason)
			}
		})
	}
	if !errors.Is(stepErr, why) || stepErr.Error() != why.Error() {
		t.Errorf("a step's rejection %v does not carry %v as it is", stepErr, why)
	}
	if !errors.Is(failedErr, ErrFunctionFailed) || failedErr.Error() != "g: function failed: 2 error results, the first: [error]: bad" {
		t.Errorf("ResultsError says %q", failedErr)
	}
	if diff := cmp.Diff(why.Error(), stepFR.Results[len(stepFR.Results)-1].Message); diff != "" {
		t.Errorf("the step's record (-want +got):\n%s", diff)
	}
	if len(ran.Results) != 1 {
		t.Error("Shown changed the runs it was given")
	}
}

// TestReportRejectUnrecorded: a failure no run records is added to the results as a rejection;
// one a run already records (a non-zero exit code) is left alone.
func TestReportRejectUnrecorded(t *testing.T) {
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
			rep := (&Report{Runs: tc.runs}).RejectUnrecorded("render", tc.err)
			if diff := cmp.Diff(tc.want, rep.Results()); diff != "" {
				t.Errorf("results (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.runs, rep.Shown()); diff != "" {
				t.Errorf("shown (-want +got):\n%s", diff)
			}
			var rej *RejectedError
			if errors.As(rep.Err, &rej) != tc.rejected || !errors.Is(rep.Err, tc.err) {
				t.Errorf("error %v (%T), want %v, rejected %v", rep.Err, rep.Err, tc.err, tc.rejected)
			}
		})
	}
}

// TestShowsStderr: a function's standard error is printed unless it reported an error result.
func TestShowsStderr(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		fr   FunctionResults
		want bool
	}{
		{"none", FunctionResults{}, false},
		{"progress", FunctionResults{Stderr: "pulling\n"}, true},
		{"beside an info result", FunctionResults{Stderr: "made 1\n", Results: []Result{{Message: "done"}}}, true},
		{"beside an error result", FunctionResults{ExitCode: 1, Stderr: "[error] bad\n", Results: []Result{{Message: "bad", Severity: SeverityError}}}, false},
		{"a crash", FunctionResults{ExitCode: 2, Stderr: "panic\n"}, true},
	}
	for _, tc := range tests {
		if got := tc.fr.ShowsStderr(); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	if diff := cmp.Diff([]StepLine{{Name: "f", ExitCode: 3}, {Name: "g"}}, StepLines([]FunctionResults{{Function: "f", ExitCode: 3, Stderr: "x"}, {Function: "g"}})); diff != "" {
		t.Errorf("step lines (-want +got):\n%s", diff)
	}
}

// A result's empty fields are left out of the results file, as kpt writes its results (kyaml's
// ResourceIdentifier and framework.File, kpt's Field: every field omitempty): set-namespace's
// "FunctionConfig is missing" result, as its own case (krm-functions-catalog tests/set-namespace/
// no-fnconfig-resource) expects it.
func TestWriteResultsLeavesOutEmptyFields(t *testing.T) {
	t.Parallel()
	rs, err := decodeResults(t, "results:\n- message: FunctionConfig is missing. Expect `ConfigMap.v1` or `SetNamespace.v1alpha1.fn.kpt.dev`\n  severity: error\n  resourceRef: {}\n  field: {}\n  file:\n    index: -1\n")
	if err != nil {
		t.Fatal(err)
	}
	path, err := WriteResults(t.TempDir(), []FunctionResults{{Function: "set-namespace", Results: rs}})
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := "  - message: FunctionConfig is missing. Expect `ConfigMap.v1` or `SetNamespace.v1alpha1.fn.kpt.dev`\n" +
		"    severity: error\n    resourceRef: {}\n    field: {}\n    file:\n      index: -1\n"
	if !strings.Contains(string(data), want) {
		t.Errorf("results file:\n%s\nwant it to hold kpt's\n%s", data, want)
	}
}

func decodeResults(t *testing.T, doc string) ([]Result, error) {
	t.Helper()
	var v struct {
		Results []Result `yaml:"results"`
	}
	err := yaml.Unmarshal([]byte(doc), &v)
	return v.Results, err
}
