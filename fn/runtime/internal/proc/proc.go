// Package proc runs a function as a process speaking the v1 wire protocol: a ResourceList on
// standard input, a ResourceList on standard output, messages on standard error, success as exit 0.
// The exec and container runtimes share it.
package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/krm-catalog/krm-catalog/fn"
)

// StderrTail is how much of a function's standard error is kept for its results; all of it is passed
// through as it is written.
const StderrTail = 8 << 10

// Options control one call.
type Options struct {
	// Format is the wire format sent to the function. Functions must read YAML, and JSON is YAML, so
	// JSON (cheaper at both ends) is safe for any conforming function.
	Format fn.Format
	// Stderr receives the function's standard error as it is written; nil discards it.
	Stderr io.Writer
	// Timeout bounds the call; zero means no bound beyond the context.
	Timeout time.Duration
	// Kill ends the call when the context ends or the timeout passes; nil kills the process. The
	// container runtime removes the container: killing the engine client alone would leave it running.
	Kill func()
	// Sent is the list the input encodes. Output that holds its items as they were sent gets them
	// back unread (fn.DecodeOutput).
	Sent *fn.ResourceList
	// MaxOutput bounds what the function may write on standard output; 0 means
	// fn.MaxResourceListBytes.
	MaxOutput int

	stdout io.Writer // where standard output goes (RunRaw); nil: a buffer of the call's
	pipe   bool      // standard output through a pipe even where a memory file can be made (tests)
}

// Call runs cmd with the list on standard input and reads the list it writes. cmd must not have been
// started; its Stdin, Stdout and Stderr are set here. When the context ends or the timeout passes,
// o.Kill runs (by default the process is killed).
func Call(ctx context.Context, cmd *exec.Cmd, in *fn.ResourceList, o Options) (*fn.ResourceList, error) {
	input, err := in.Encode(o.Format)
	if err != nil {
		return nil, err
	}
	o.Sent = in
	out, err := Run(ctx, cmd, input, o)
	return out.List, err
}

// CallRaw is Call leaving the output unread (RunRaw).
func CallRaw(ctx context.Context, cmd *exec.Cmd, in *fn.ResourceList, stdout io.Writer, o Options) (*fn.RawCall, error) {
	input, err := in.Encode(o.Format)
	if err != nil {
		return nil, err
	}
	o.Sent = in
	return RunRaw(ctx, cmd, input, stdout, o)
}

// Output is what a process call produced.
type Output struct {
	List   *fn.ResourceList
	Stderr string
}

// Run is Call on pre-encoded input.
func Run(ctx context.Context, cmd *exec.Cmd, input []byte, o Options) (Output, error) {
	r := run(ctx, cmd, input, o)
	res := Output{Stderr: r.stderr}
	if r.err != nil {
		return res, r.err
	}
	call := fn.RawCall{Sent: input, Format: o.Format, In: o.Sent, Stderr: r.stderr, ExitErr: r.exitErr}
	list, err := call.Decode(r.stdout)
	res.List = list
	return res, err
}

// RunRaw is Run leaving the output unread: what the process writes on standard output goes to
// stdout (fn.RawFunction).
func RunRaw(ctx context.Context, cmd *exec.Cmd, input []byte, stdout io.Writer, o Options) (*fn.RawCall, error) {
	o.stdout = stdout
	r := run(ctx, cmd, input, o)
	if r.err != nil {
		return nil, r.err
	}
	return &fn.RawCall{Sent: input, Format: o.Format, In: o.Sent, Stderr: r.stderr, ExitErr: r.exitErr}, nil
}

// RunEncoded runs cmd over input as it is and returns what it wrote on standard output, unread: what
// a runner that hands lists through unchanged (Porch's) answers. A process that exits non-zero is a
// *fn.FunctionError, returned with what it wrote; output past o.MaxOutput fails the call.
func RunEncoded(ctx context.Context, cmd *exec.Cmd, input []byte, o Options) (stdout []byte, stderr string, err error) {
	r := run(ctx, cmd, input, o)
	if r.err != nil {
		return nil, r.stderr, r.err
	}
	if r.exitErr != nil {
		return r.stdout, r.stderr, r.exitErr
	}
	return r.stdout, r.stderr, nil
}

// result is what running a process gave: err when it could not run or did not finish, exitErr
// when it exited non-zero.
type result struct {
	stdout       []byte
	stderr       string
	err, exitErr error
}

func run(ctx context.Context, cmd *exec.Cmd, input []byte, o Options) result {
	if o.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.Timeout)
		defer cancel()
	}
	limit := fn.MaxResourceListBytes
	if o.MaxOutput > 0 {
		limit = o.MaxOutput
	}
	var stdout bytes.Buffer
	var lw *limitWriter
	var mem *memOutput
	// where it can be made, a memory file (memOutput); a pipe otherwise
	if !o.pipe {
		if m, err := newMemOutput(limit); err == nil {
			mem = m
			defer mem.Close()
			cmd.Stdout = mem.file()
		}
	}
	if mem == nil {
		var sink io.Writer = &stdout
		if o.stdout != nil {
			sink = o.stdout
		} else {
			// a function's output is about the size of its input: grown once, not through a dozen copies
			stdout.Grow(min(len(input)+len(input)/4+4096, limit))
		}
		lw = &limitWriter{w: sink, n: limit, max: limit}
		cmd.Stdout = lw
	}
	tail := &Tail{Max: StderrTail}
	cmd.Stdin = bytes.NewReader(input)
	if o.Stderr != nil {
		cmd.Stderr = io.MultiWriter(o.Stderr, tail)
	} else {
		cmd.Stderr = tail
	}
	if cmd.WaitDelay == 0 {
		// a function that leaves a child holding its pipes must not hang the run
		cmd.WaitDelay = 2 * time.Second
	}
	if err := cmd.Start(); err != nil {
		return result{err: &fn.FunctionError{Err: err}}
	}
	// exec.CommandContext semantics for a command made without a context: kill on context end.
	// Registered after Start, so that the process is known to the goroutine that kills it.
	stop := context.AfterFunc(ctx, func() {
		if o.Kill != nil {
			o.Kill()
		}
		_ = cmd.Process.Kill()
	})
	defer stop()
	runErr := cmd.Wait()
	r := result{stdout: stdout.Bytes(), stderr: tail.String()}
	if ctxErr := ctx.Err(); ctxErr != nil {
		if errors.Is(ctxErr, context.DeadlineExceeded) && o.Timeout > 0 {
			ctxErr = fmt.Errorf("timed out after %s", o.Timeout)
		}
		r.err = &fn.FunctionError{ExitCode: -1, Stderr: r.stderr, Err: ctxErr}
		return r
	}
	over := lw != nil && lw.over
	if mem != nil {
		var err error
		if o.stdout != nil {
			over, err = mem.copyTo(o.stdout, limit)
		} else {
			r.stdout, over, err = mem.read(limit)
		}
		if err != nil {
			r.err = &fn.FunctionError{ExitCode: -1, Stderr: r.stderr, Err: err}
			return r
		}
	}
	if over {
		// the function was cut off (its write failed, or it died of the closed pipe): say why
		r.exitErr = &fn.FunctionError{ExitCode: -1, Stderr: r.stderr, Err: fmt.Errorf("function output exceeds %d bytes", limit)}
		return r
	}
	if runErr != nil {
		var ee *exec.ExitError
		code := -1
		if errors.As(runErr, &ee) {
			code = ee.ExitCode()
		}
		msg := runErr
		if r.stderr != "" {
			msg = fmt.Errorf("%w; stderr: %s", runErr, lastLine(r.stderr))
		}
		r.exitErr = &fn.FunctionError{ExitCode: code, Stderr: r.stderr, Err: msg}
	}
	return r
}

// lastLine is the last line of stderr that says something: docker ends its errors with a line
// that points at --help ("See 'docker run --help'."), after the one that gives the cause.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i := len(lines) - 1; i > 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" && !helpHint(l) {
			return lines[i]
		}
	}
	return lines[0]
}

// helpHint reports whether a line is the trailing one of a docker or podman error that only names
// --help ("See 'docker run --help'.", "Run 'podman run --help' for more information").
func helpHint(l string) bool {
	return (strings.HasPrefix(l, "See '") || strings.HasPrefix(l, "Run '")) && strings.Contains(l, " --help'")
}

// Tail keeps the last Max bytes written to it.
type Tail struct {
	Max int
	mu  sync.Mutex
	buf []byte
}

func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.Max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.Max:]...)
	}
	return len(p), nil
}

func (t *Tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// limitWriter fails writes beyond n bytes, so a runaway function cannot exhaust memory.
type limitWriter struct {
	w      io.Writer
	n, max int
	over   bool
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if len(p) > l.n {
		l.over = true
		return 0, fmt.Errorf("function output exceeds %d bytes", l.max)
	}
	l.n -= len(p)
	return l.w.Write(p)
}
