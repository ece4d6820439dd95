package execfn

import (
	"context"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/krm-catalog/krm-catalog/fn"
	"github.com/krm-catalog/krm-catalog/fn/internal/proc"
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
	cmd := exec.Command(f.Path, f.Args...)
	cmd.Env = Environ(f.Env)
	return proc.Call(ctx, cmd, in, proc.Options{Format: f.Format, Stderr: f.Stderr, Timeout: f.Timeout})
}

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
