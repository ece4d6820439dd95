//go:build !linux

package proc

import (
	"errors"
	"io"
	"os"
)

// memOutput is Linux's memory file for a function's standard output; elsewhere the output goes
// through a pipe.
type memOutput struct{}

func newMemOutput(int) (*memOutput, error) { return nil, errors.ErrUnsupported }

func (*memOutput) file() *os.File                      { return nil }
func (*memOutput) read(int) ([]byte, bool, error)      { return nil, false, errors.ErrUnsupported }
func (*memOutput) copyTo(io.Writer, int) (bool, error) { return false, errors.ErrUnsupported }
func (*memOutput) Close() error                        { return nil }
