package fn

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// Severity of a result (KRM Functions Specification v1). Empty is read as info, as kpt and kyaml's
// framework read it: a function that reports a result without a severity has not failed.
type Severity string

// The severities of the specification.
const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
	SeverityInfo    Severity = "info"
)

// Result is one result a function reports.
type Result struct {
	Message     string            `yaml:"message" json:"message"`
	Severity    Severity          `yaml:"severity,omitempty" json:"severity,omitempty"`
	ResourceRef *ResourceRef      `yaml:"resourceRef,omitempty" json:"resourceRef,omitempty"`
	Field       *Field            `yaml:"field,omitempty" json:"field,omitempty"`
	File        *File             `yaml:"file,omitempty" json:"file,omitempty"`
	Tags        map[string]string `yaml:"tags,omitempty" json:"tags,omitempty"`
}

// ResourceRef names the object a result is about. Its YAML, as kpt's results (kyaml's
// ResourceIdentifier), leaves out what is empty: a function's `resourceRef: {}` stays that.
type ResourceRef struct {
	APIVersion string `yaml:"apiVersion,omitempty" json:"apiVersion"`
	Kind       string `yaml:"kind,omitempty" json:"kind"`
	Name       string `yaml:"name,omitempty" json:"name"`
	Namespace  string `yaml:"namespace,omitempty" json:"namespace,omitempty"`
}

// Field names the field a result is about.
type Field struct {
	Path          string `yaml:"path,omitempty" json:"path"`
	CurrentValue  any    `yaml:"currentValue,omitempty" json:"currentValue,omitempty"`
	ProposedValue any    `yaml:"proposedValue,omitempty" json:"proposedValue,omitempty"`
}

// File names the file of the object a result is about.
type File struct {
	Path  string `yaml:"path,omitempty" json:"path"`
	Index int    `yaml:"index,omitempty" json:"index,omitempty"`
}

// IsError reports whether the result is an error; a result without a severity is not.
func (r Result) IsError() bool { return r.Severity == SeverityError }

func (r Result) String() string {
	var b strings.Builder
	sev := r.Severity
	if sev == "" {
		sev = SeverityInfo
	}
	fmt.Fprintf(&b, "[%s]", sev)
	if r.ResourceRef != nil {
		fmt.Fprintf(&b, " %s/%s", r.ResourceRef.Kind, r.ResourceRef.Name)
		if r.ResourceRef.Namespace != "" {
			fmt.Fprintf(&b, " (namespace %s)", r.ResourceRef.Namespace)
		}
	}
	if r.File != nil && r.File.Path != "" {
		fmt.Fprintf(&b, " in %s", r.File.Path)
	}
	if r.Field != nil && r.Field.Path != "" {
		fmt.Fprintf(&b, " at %s", r.Field.Path)
	}
	fmt.Fprintf(&b, ": %s", r.Message)
	return b.String()
}

// HasErrors reports whether any result is an error.
func HasErrors(rs []Result) bool { return slices.ContainsFunc(rs, Result.IsError) }

// FunctionResults are the results of one function run in a pipeline.
type FunctionResults struct {
	// Function names what ran: the functionConfig's apiVersion/kind and the runtime.
	Function string   `yaml:"function" json:"function"`
	ExitCode int      `yaml:"exitCode" json:"exitCode"`
	Stderr   string   `yaml:"stderr,omitempty" json:"stderr,omitempty"`
	Results  []Result `yaml:"results,omitempty" json:"results,omitempty"`
}

// RejectedError is a run rejected after its functions ran: the package cannot be written as they
// left it, or a step's path annotations disagree. A step's rejection is recorded as the last error
// result of its entry (rejected), a later one by the Report (Reject).
type RejectedError struct {
	Err  error
	step bool // recorded in the step's own results
}

func (e *RejectedError) Error() string { return e.Err.Error() }
func (e *RejectedError) Unwrap() error { return e.Err }

// rejected marks a step's results as failed by err, and err as recorded there.
func rejected(fr FunctionResults, err error) (FunctionResults, error) {
	fr.ExitCode = 1
	fr.Results = append(fr.Results, Result{Message: err.Error(), Severity: SeverityError})
	return fr, &RejectedError{Err: err, step: true}
}

// ResultsError is a function that reported error results: its message names the first of them
// (and how many there are), which the last result list of the runs also holds.
type ResultsError struct{ Results []Result }

func (e *ResultsError) Error() string {
	return fmt.Sprintf("%v: %s", ErrFunctionFailed, errorSummary(e.Results))
}

// Is makes errors.Is(err, ErrFunctionFailed) true.
func (e *ResultsError) Is(target error) bool { return target == ErrFunctionFailed }

// firstError returns the index of the first error result, -1 when there is none.
func firstError(rs []Result) int {
	return slices.IndexFunc(rs, Result.IsError)
}

// ResultsFileName is the file WriteResults writes in a results directory.
const ResultsFileName = "results.yaml"

// WriteResults writes the results of a run to dir/results.yaml as a FunctionResultList, the shape
// kpt writes, so that tools reading kpt's results read these too.
func WriteResults(dir string, runs []FunctionResults) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("write results: %w", err)
	}
	doc := struct {
		APIVersion string            `yaml:"apiVersion"`
		Kind       string            `yaml:"kind"`
		Metadata   map[string]string `yaml:"metadata"`
		ExitCode   int               `yaml:"exitCode"`
		Items      []FunctionResults `yaml:"items"`
	}{
		APIVersion: "kpt.dev/v1",
		Kind:       "FunctionResultList",
		Metadata:   map[string]string{"name": "fnresults"},
		Items:      runs,
	}
	for _, r := range runs {
		if r.ExitCode != 0 {
			doc.ExitCode = 1
		}
	}
	var n yaml.Node
	if err := n.Encode(doc); err != nil {
		return "", fmt.Errorf("write results: %w", err)
	}
	data, err := EncodeYAML(&n)
	if err != nil {
		return "", fmt.Errorf("write results: %w", err)
	}
	path := filepath.Join(dir, ResultsFileName)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return "", fmt.Errorf("write results: %w", err)
	}
	return path, nil
}
