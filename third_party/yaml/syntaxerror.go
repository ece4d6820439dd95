package yaml

import (
	"bytes"
	"fmt"
	"unicode/utf8"
)

// SyntaxError is a YAML syntax error with the position of the offending token (krm-catalog
// patch: upstream's message names the line of the construct being read, often the line before
// the problem, and no column).
type SyntaxError struct {
	// Line and Column (1-based, Column in characters) locate the offending token: where the
	// scanner or parser stopped, or the alias whose anchor is unknown; 0 when unknown.
	Line, Column int
	// Problem is what is wrong, without position.
	Problem string
	// Context is what was being read ("while parsing a flow sequence"), and ContextLine and
	// ContextColumn where it started; empty and 0 when there is none or it is the token itself.
	Context                    string
	ContextLine, ContextColumn int
}

func (e *SyntaxError) Error() string {
	if e.Line == 0 {
		return "yaml: " + e.Problem
	}
	s := fmt.Sprintf("yaml: line %d, column %d: %s", e.Line, e.Column, e.Problem)
	if e.Context != "" {
		s += fmt.Sprintf(" (%s started at line %d, column %d)", e.Context, e.ContextLine, e.ContextColumn)
	}
	return s
}

func newSyntaxError(parser *yaml_parser_t, problem string) *SyntaxError {
	e := &SyntaxError{Problem: problem}
	if parser.error == yaml_READER_ERROR {
		// the reader knows the byte offset only
		if parser.problem_offset >= 0 && parser.problem_offset <= len(parser.input) {
			before := parser.input[:parser.problem_offset]
			e.Line = bytes.Count(before, []byte{'\n'}) + 1
			e.Column = utf8.RuneCount(before[bytes.LastIndexByte(before, '\n')+1:]) + 1
		}
		return e
	}
	pm, cm := parser.problem_mark, parser.context_mark
	e.Line, e.Column = pm.line+1, pm.column+1
	if parser.context != "" && (cm.line != pm.line || cm.column != pm.column) {
		e.Context, e.ContextLine, e.ContextColumn = parser.context, cm.line+1, cm.column+1
	}
	return e
}
