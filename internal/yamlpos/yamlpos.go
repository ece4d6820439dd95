// Package yamlpos says where a YAML syntax error is. yaml.v3 (which kyaml and kustomize read
// with) names the line of the construct it was reading, often the line before the problem, and no
// column; on the error path only, the failed bytes are read again with yaml.v4, whose errors carry
// the line and column of the offending token and of the construct it was reading.
package yamlpos

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	yamlv4 "go.yaml.in/yaml/v4"
)

// SyntaxError is a YAML syntax error with the position of the offending token.
type SyntaxError struct {
	// Line and Column (1-based, Column in characters) locate the offending token: where the
	// scanner or parser stopped, or the alias whose anchor is unknown.
	Line, Column int
	// Problem is what is wrong, without position.
	Problem string
	// Context is what was being read ("while parsing a flow sequence"), and ContextLine and
	// ContextColumn where it started; empty and 0 when there is none or it is the token itself.
	Context                    string
	ContextLine, ContextColumn int
}

func (e *SyntaxError) Error() string {
	s := fmt.Sprintf("yaml: line %d, column %d: %s", e.Line, e.Column, e.Problem)
	if e.Context != "" {
		s += fmt.Sprintf(" (%s started at line %d, column %d)", e.Context, e.ContextLine, e.ContextColumn)
	}
	return s
}

// Find reads data as one stream of YAML documents and returns its first syntax error, or nil
// when there is none (or none that has a position).
func Find(data []byte) *SyntaxError {
	dec := yamlv4.NewDecoder(bytes.NewReader(data))
	for {
		var n yamlv4.Node
		err := dec.Decode(&n)
		if err == nil {
			continue
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		var le *yamlv4.LoadError
		if !errors.As(err, &le) || le.Mark.Line == 0 {
			return nil
		}
		return fromLoadError(le)
	}
}

func fromLoadError(le *yamlv4.LoadError) *SyntaxError {
	e := &SyntaxError{Line: le.Mark.Line, Column: max(le.Mark.Column, 1), Problem: le.Message}
	if le.ContextMsg != "" && le.ContextMark.Line > 0 && le.ContextMark != le.Mark {
		e.Context, e.ContextLine, e.ContextColumn = le.ContextMsg, le.ContextMark.Line, max(le.ContextMark.Column, 1)
	}
	return e
}

// Locate returns err, or, when err is a YAML syntax error of a reader that gives no column
// (yaml.v3's "yaml: line N: ..."), err with that text replaced by the error found by reading data
// again, which says where. data is what the failed read was given: the line is counted from its
// start.
func Locate(data []byte, err error) error {
	if !IsSyntaxError(err) {
		return err
	}
	if se := Find(data); se != nil {
		return Replace(err, se)
	}
	return err
}

// Replace returns err with its yaml.v3 syntax error text (from "yaml: " to the end, or to
// kustomize's " in File: ") replaced by se's; errors.As finds se in it, errors.Is what err wraps.
func Replace(err error, se *SyntaxError) error {
	return &located{err: err, se: se}
}

type located struct {
	err error
	se  *SyntaxError
}

func (e *located) Error() string {
	msg := e.err.Error()
	i := textIndex(msg)
	if i < 0 {
		return msg + ": " + e.se.Error()
	}
	end := len(msg)
	if j := strings.Index(msg[i:], " in File: "); j >= 0 {
		end = i + j
	}
	return msg[:i] + e.se.Error() + msg[end:]
}

func (e *located) Unwrap() []error { return []error{e.err, e.se} }

// IsSyntaxError reports whether err is a YAML syntax error: a *SyntaxError, or yaml.v3's text,
// which is all kyaml and kustomize keep of it.
func IsSyntaxError(err error) bool {
	if err == nil {
		return false
	}
	var se *SyntaxError
	return errors.As(err, &se) || textIndex(err.Error()) >= 0
}

// textIndex is where yaml.v3's syntax error text starts in msg ("yaml: " at the start or after a
// space or colon, not "yaml: unmarshal errors", a type error), or -1.
func textIndex(msg string) int {
	const prefix = "yaml: "
	for off := 0; ; {
		i := strings.Index(msg[off:], prefix)
		if i < 0 {
			return -1
		}
		i += off
		if (i == 0 || msg[i-1] == ' ' || msg[i-1] == ':') && !strings.HasPrefix(msg[i:], "yaml: unmarshal errors") {
			return i
		}
		off = i + len(prefix)
	}
}
