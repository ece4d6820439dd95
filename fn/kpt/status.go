package kpt

import (
	"fmt"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/fn"
)

// The Rendered condition kpt writes into the root Kptfile after every render.
const (
	ConditionRendered   = "Rendered"
	ReasonRenderSuccess = "RenderSuccess"
	ReasonRenderFailed  = "RenderFailed"
)

// RenderStatus is kpt's status.renderStatus: every step that ran, or failed to start, in order.
type RenderStatus struct {
	MutationSteps   []StepStatus `yaml:"mutationSteps,omitempty"`
	ValidationSteps []StepStatus `yaml:"validationSteps,omitempty"`
	// ErrorSummary names each failed step and how it failed, one a line; empty on success.
	ErrorSummary string `yaml:"errorSummary,omitempty"`
}

// StepStatus is one step in RenderStatus, with kpt's field names and order.
type StepStatus struct {
	Name string `yaml:"name,omitempty"`
	// Image is the image that ran: with a tag constraint, the version it resolved to.
	Image string `yaml:"image,omitempty"`
	Exec  string `yaml:"exec,omitempty"`
	// ExecutionError says why a step could not start; its ExitCode is then 1.
	ExecutionError string      `yaml:"executionError,omitempty"`
	Stderr         string      `yaml:"stderr,omitempty"`
	ExitCode       int         `yaml:"exitCode"`
	Results        []fn.Result `yaml:"results,omitempty"`
	ErrorResults   []fn.Result `yaml:"errorResults,omitempty"`
	// Skipped says the step's condition was false, so it did not run.
	Skipped bool `yaml:"skipped,omitempty"`
}

// Condition is one of a Kptfile's status.conditions.
type Condition struct {
	Type    string `yaml:"type"`
	Status  string `yaml:"status"`
	Reason  string `yaml:"reason,omitempty"`
	Message string `yaml:"message,omitempty"`
}

// stepStatus records a step that ran: its function results as the runner returned them.
func stepStatus(f Function, image string, fr fn.FunctionResults) StepStatus {
	s := StepStatus{Name: stepName(f), Image: image, Exec: f.Exec, Stderr: fr.Stderr, ExitCode: fr.ExitCode, Results: fr.Results}
	for _, r := range fr.Results {
		if r.IsError() {
			s.ErrorResults = append(s.ErrorResults, r)
		}
	}
	return s
}

// stepName is the name a step is recorded by: its own, or for a step named by its config's kind
// alone (no image, no exec), its configPath.
func stepName(f Function) string {
	if f.Name == "" && f.Image == "" && f.Exec == "" {
		return f.ConfigPath
	}
	return f.Name
}

// skipped records a step whose condition was false.
func skipped(f Function) StepStatus {
	return StepStatus{Name: stepName(f), Image: displayImage(f.Image), Exec: f.Exec, Skipped: true}
}

// notStarted records a step that could not start (not resolved, not fetched, not allowed).
func notStarted(f Function, image string, err error) StepStatus {
	return StepStatus{Name: stepName(f), Image: image, Exec: f.Exec, ExitCode: 1, ExecutionError: err.Error()}
}

// RejectLast records that the output of the last step that ran was refused (a path leaving the
// package, say), as kpt fails the step whose output it refuses.
func (rs *RenderStatus) RejectLast(err error) {
	steps := rs.MutationSteps
	if len(rs.ValidationSteps) > 0 {
		steps = rs.ValidationSteps
	}
	if len(steps) == 0 {
		return
	}
	last := &steps[len(steps)-1]
	last.ExitCode = 1
	last.ExecutionError = err.Error()
}

func (s StepStatus) label() string {
	switch {
	case s.Name != "":
		return s.Name
	case s.Image != "":
		return s.Image
	}
	return s.Exec
}

// summarize fills ErrorSummary after a failed render: each step that failed, as kpt words it.
func (rs *RenderStatus) summarize() {
	var lines []string
	for _, steps := range [][]StepStatus{rs.MutationSteps, rs.ValidationSteps} {
		for _, s := range steps {
			switch {
			case s.ExecutionError != "":
				lines = append(lines, fmt.Sprintf("%s: %s", s.label(), s.ExecutionError))
			case s.ExitCode != 0:
				lines = append(lines, fmt.Sprintf("%s: exit code %d", s.label(), s.ExitCode))
			}
		}
	}
	rs.ErrorSummary = strings.Join(lines, "\n")
}

// SetStatus writes the Rendered condition and the render status into a Kptfile node, as kpt does
// after each render: any earlier Rendered condition is replaced, other conditions are kept, and no
// other field is touched (the package writer keeps the file's comments and layout). renderErr nil
// means success; pkgDir is replaced by "." in the message, so that it does not depend on where the
// package is.
func SetStatus(kf *yaml.RNode, rs *RenderStatus, renderErr error, pkgDir string) error {
	cond := Condition{Type: ConditionRendered, Status: "True", Reason: ReasonRenderSuccess}
	var status *RenderStatus
	if rs != nil && (len(rs.MutationSteps) > 0 || len(rs.ValidationSteps) > 0) {
		c := *rs
		status = &c
	}
	if renderErr != nil {
		cond = Condition{Type: ConditionRendered, Status: "False", Reason: ReasonRenderFailed,
			Message: strings.ReplaceAll(renderErr.Error(), pkgDir, ".")}
		if status != nil {
			status.summarize()
		}
	}
	st, err := kf.Pipe(yaml.LookupCreate(yaml.MappingNode, "status"))
	if err != nil {
		return fmt.Errorf("set Kptfile status: %w", err)
	}
	var conds []*yaml.Node
	if old := st.Field("conditions"); old != nil && old.Value.YNode().Kind == yaml.SequenceNode {
		for _, c := range old.Value.YNode().Content {
			if yaml.NewRNode(c).Field("type") == nil || yaml.GetValue(yaml.NewRNode(c).Field("type").Value) != ConditionRendered {
				conds = append(conds, c)
			}
		}
	}
	cn, err := toNode(cond)
	if err != nil {
		return err
	}
	seq := yaml.NewListRNode()
	seq.YNode().Content = append(conds, cn)
	if err := st.PipeE(yaml.SetField("conditions", seq)); err != nil {
		return fmt.Errorf("set Kptfile status: %w", err)
	}
	if status == nil {
		return st.PipeE(yaml.Clear("renderStatus"))
	}
	sn, err := statusNode(status)
	if err != nil {
		return err
	}
	return st.PipeE(yaml.SetField("renderStatus", yaml.NewRNode(sn)))
}

func toNode(v any) (*yaml.Node, error) {
	data, err := yaml.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode Kptfile status: %w", err)
	}
	n, err := yaml.Parse(string(data))
	if err != nil {
		return nil, fmt.Errorf("encode Kptfile status: %w", err)
	}
	return n.YNode(), nil
}

// rootKptfile finds the root package's Kptfile among items.
func rootKptfile(items []*yaml.RNode) *yaml.RNode {
	for _, it := range items {
		if it.GetKind() == KptfileKind && itemPath(it) == KptfileName {
			return it
		}
	}
	return nil
}
