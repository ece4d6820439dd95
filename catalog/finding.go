package catalog

import (
	"cmp"
	"fmt"
	"slices"
)

// Severity says how much a finding matters.
type Severity string

// Severities, from most to least severe.
const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
	SeverityInfo    Severity = "info"
)

// Finding is one thing validation has to say about a document: where, and what.
type Finding struct {
	Severity Severity `json:"severity"`
	Message  string   `json:"message"`
	File     string   `json:"file,omitempty"`
	// Document is the index of the document in its file's stream, from 0.
	Document int `json:"document"`
	// Pointer is the JSON pointer (RFC 6901) of the value the finding is about; "" is the whole document.
	Pointer string `json:"pointer"`
	Line    int    `json:"line,omitempty"`
	Column  int    `json:"column,omitempty"`
}

// String renders a finding the way compilers do: file:line:col: severity: message (at /pointer).
func (f Finding) String() string {
	s := fmt.Sprintf("%s:%d:%d: %s: %s", f.File, f.Line, f.Column, f.Severity, f.Message)
	if f.Pointer != "" {
		s += " (at " + f.Pointer + ")"
	}
	return s
}

// Findings is a list of findings with the questions callers ask of it.
type Findings []Finding

// HasErrors reports whether any finding is an error.
func (fs Findings) HasErrors() bool {
	return slices.ContainsFunc(fs, func(f Finding) bool { return f.Severity == SeverityError })
}

// Count returns how many findings have the severity.
func (fs Findings) Count(s Severity) int {
	n := 0
	for _, f := range fs {
		if f.Severity == s {
			n++
		}
	}
	return n
}

// Strict returns a copy in which warnings are errors.
func (fs Findings) Strict() Findings {
	out := slices.Clone(fs)
	for i := range out {
		if out[i].Severity == SeverityWarning {
			out[i].Severity = SeverityError
		}
	}
	return out
}

// Sort orders findings by file, document, position and message, so output is stable.
func (fs Findings) Sort() {
	slices.SortStableFunc(fs, func(a, b Finding) int {
		return cmp.Or(
			cmp.Compare(a.File, b.File),
			cmp.Compare(a.Document, b.Document),
			cmp.Compare(a.Line, b.Line),
			cmp.Compare(a.Column, b.Column),
			cmp.Compare(a.Pointer, b.Pointer),
			cmp.Compare(a.Message, b.Message),
		)
	})
}
