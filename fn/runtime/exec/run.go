package exec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
	// Env (NAME=VALUE) is added to the minimal environment the function gets (Environ).
	Env     []string
	Stderr  io.Writer
	Timeout time.Duration
	Format  fn.Format
}

// Run implements fn.Function.
func (f *Function) Run(ctx context.Context, in *fn.ResourceList) (*fn.ResourceList, error) {
	var list *fn.ResourceList
	err := f.call(ctx, in, func(cmd *exec.Cmd, input []byte, o proc.Options) error {
		out, err := proc.Run(ctx, cmd, input, o)
		list = out.List
		return err
	})
	return list, err
}

// RunRaw implements fn.RawFunction.
func (f *Function) RunRaw(ctx context.Context, in *fn.ResourceList, stdout io.Writer) (*fn.RawCall, error) {
	var call *fn.RawCall
	err := f.call(ctx, in, func(cmd *exec.Cmd, input []byte, o proc.Options) (err error) {
		call, err = proc.RunRaw(ctx, cmd, input, stdout, o)
		return err
	})
	return call, err
}

// call sends in to one process of the executable through run, in its home directory, started
// again when it could not start for a moment (textBusy).
func (f *Function) call(ctx context.Context, in *fn.ResourceList, run func(cmd *exec.Cmd, input []byte, o proc.Options) error) error {
	input, err := in.Encode(f.Format)
	if err != nil {
		return err
	}
	home, err := NewHome()
	if err != nil {
		return &fn.FunctionError{Err: err}
	}
	defer home.Remove()
	for attempt := 1; ; attempt++ {
		cmd := exec.Command(f.Path, f.Args...)
		cmd.Env = home.Environ(f.Env)
		err := run(cmd, input, proc.Options{Format: f.Format, Stderr: f.Stderr, Timeout: f.Timeout, Sent: in})
		if textBusy(err) && attempt < 5 {
			time.Sleep(time.Duration(attempt) * 10 * time.Millisecond)
			continue
		}
		return err
	}
}

// RunEncoded runs the executable over input as it came and returns what it wrote, unread
// (fn/evaluator's pass-through, which answers as Porch's runner does); output past maxOutput bytes
// fails the call. exited is whether it exited 0, which is then its verdict.
func (f *Function) RunEncoded(ctx context.Context, input []byte, _ fn.Format, maxOutput int) (out []byte, stderr string, exited bool, err error) {
	home, err := NewHome()
	if err != nil {
		return nil, "", false, &fn.FunctionError{Err: err}
	}
	defer home.Remove()
	for attempt := 1; ; attempt++ {
		cmd := exec.Command(f.Path, f.Args...)
		cmd.Env = home.Environ(f.Env)
		out, stderr, err := proc.RunEncoded(ctx, cmd, input, proc.Options{Stderr: f.Stderr, Timeout: f.Timeout, MaxOutput: maxOutput})
		if textBusy(err) && attempt < 5 {
			time.Sleep(time.Duration(attempt) * 10 * time.Millisecond)
			continue
		}
		return out, stderr, err == nil, err
	}
}

// textBusy reports an executable that could not start because a process forked at the wrong moment
// still holds it open for writing (ETXTBSY, golang.org/issue/22315): a fresh download raced with
// another function being started. It goes away within milliseconds.
func textBusy(err error) bool { return errors.Is(err, syscall.ETXTBSY) }

// Home is the empty directory an exec function gets as HOME and TMPDIR, one per call or server.
type Home struct{ dir string }

// NewHome creates the directory.
func NewHome() (Home, error) {
	dir, err := os.MkdirTemp("", "krm-fn-home-")
	if err != nil {
		return Home{}, fmt.Errorf("create the function's home directory: %w", err)
	}
	for _, sub := range []string{"home", "tmp"} {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o700); err != nil {
			_ = os.RemoveAll(dir)
			return Home{}, fmt.Errorf("create the function's home directory: %w", err)
		}
	}
	return Home{dir: dir}, nil
}

// Remove deletes the directory and what the function left in it.
func (h Home) Remove() { _ = os.RemoveAll(h.dir) }

// inherited are the variables of the caller an exec function gets: where to find programs, and the
// locale, which changes no output a conforming function writes but its messages.
var inherited = []string{"PATH", "LANG", "LANGUAGE", "TZ"}

// Environ is the environment of an exec function: PATH and the locale variables (LANG, LANGUAGE,
// LC_*, TZ) of the caller, HOME and TMPDIR in the home directory, then extra (NAME=VALUE: what the
// user passed with --env and what the function config names). Nothing else of the caller's reaches
// the function: a function pinned in a catalog must not read the user's credentials
// (AWS_SECRET_ACCESS_KEY, GITHUB_TOKEN, KRM_CATALOG_TOKEN...), nor the variable that would start a
// function in server mode (a v1 call must not turn into a server).
func (h Home) Environ(extra []string) []string {
	env := Inherited()
	env = append(env, "HOME="+filepath.Join(h.dir, "home"), "TMPDIR="+filepath.Join(h.dir, "tmp"))
	return append(env, extra...)
}

// Inherited are the variables of this process that an exec function gets (Environ).
func Inherited() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "LC_") || slices.Contains(inherited, name) {
			env = append(env, kv)
		}
	}
	return env
}
