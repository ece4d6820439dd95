package fn

import (
	"context"
	"fmt"
	"io"
)

// RawFunction is a Function that can hand back what it wrote on standard output unread, into a
// writer of the caller's: the process runtimes. A run whose result is only printed uses it to
// keep a large output as the bytes it came as (RunToPrint).
type RawFunction interface {
	Function
	// RunRaw runs the function over in as Run does, what it writes on standard output going to
	// stdout. The error is that of a call that could not run or did not finish (Run's, with no
	// list); a function that exited non-zero is RawCall.ExitErr.
	RunRaw(ctx context.Context, in *ResourceList, stdout io.Writer) (*RawCall, error)
}

// RawCall is one call of a RawFunction that ran to its end.
type RawCall struct {
	// Sent is the list as the function was sent it, in Format.
	Sent   []byte
	Format Format
	// In is the list Sent encodes.
	In     *ResourceList
	Stderr string
	// ExitErr is a *FunctionError when the function exited non-zero or was cut off.
	ExitErr error
}

// Decode is what Run returns for the call, given what the function wrote: the list it wrote (its
// results read even when it failed) and the call's error. The list's strings may share stdout's
// memory (DecodeOutput), which must then outlive it.
func (c *RawCall) Decode(stdout []byte) (*ResourceList, error) {
	list, decErr := DecodeOutput(stdout, c.Sent, c.In)
	if decErr == nil {
		list.Stderr = c.Stderr
		list.SentJSON = c.Format == JSON
		list.Exited = c.ExitErr == nil
	}
	if c.ExitErr != nil {
		return list, c.ExitErr
	}
	if decErr != nil {
		return nil, &FunctionError{Stderr: c.Stderr, Err: fmt.Errorf("its output: %w", decErr)}
	}
	return list, nil
}
