package exec

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/krm-catalog/krm-catalog/fn"
	"github.com/krm-catalog/krm-catalog/fn/runtime/internal/proc"
)

// Function runs an executable once per call (spec v1).
type Function struct {
	Path string
	Args []string
	// Env is added to the environment the function inherits.
	Env     []string
	Stderr  io.Writer
	Timeout time.Duration
	Format  fn.Format
}

// Run implements fn.Function.
func (f *Function) Run(ctx context.Context, in *fn.ResourceList) (*fn.ResourceList, error) {
	input, err := in.Encode(f.Format)
	if err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		cmd := exec.Command(f.Path, f.Args...)
		cmd.Env = Environ(f.Env)
		out, err := proc.Run(ctx, cmd, input, proc.Options{Format: f.Format, Stderr: f.Stderr, Timeout: f.Timeout})
		if textBusy(err) && attempt < 5 {
			time.Sleep(time.Duration(attempt) * 10 * time.Millisecond)
			continue
		}
		return out.List, err
	}
}

// textBusy reports an executable that could not start because a process forked at the wrong moment
// still holds it open for writing (ETXTBSY, golang.org/issue/22315): a fresh download raced with
// another function being started. It goes away within milliseconds.
func textBusy(err error) bool { return errors.Is(err, syscall.ETXTBSY) }

// Environ is the environment of an exec function: the caller's, without the variable that would
// start a function in server mode (a v1 call must not turn into a server), plus extra.
func Environ(extra []string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "KRM_FUNCTION_HTTP_ADDRESS=") || strings.HasPrefix(kv, "KRM_FUNCTION_GRPC_ADDRESS=") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}
