package cmd

import "fmt"

// Exit codes, shared by every command (docs/cli.md).
const (
	ExitOK      = 0
	ExitFailure = 1 // a check found errors, or an operation failed
	ExitUsage   = 2 // bad usage, or input that could not be read
)

// exitError carries an exit code out of a command; commands build it through usageErr and
// failure only. A nil err means the command already said why.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// usageErr exits 2: the command line was wrong, or its input could not be read. err nil: the
// command has already printed why.
func usageErr(err error) error { return &exitError{code: ExitUsage, err: err} }

// failure exits 1: a check found errors or an operation failed. err nil: the command has already
// printed why (its findings, its report).
func failure(err error) error { return &exitError{code: ExitFailure, err: err} }
