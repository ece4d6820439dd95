package starlark

// The sandbox process. go.starlark.net bounds execution steps, but one step can allocate without
// bound (`[0] * (1 << 28)` is 4 GiB in one step, `list(range(n))`, str.replace and join likewise), and
// Go cannot bound the memory of one goroutine: a check of sizes in some operations would leave the
// others open. So a script runs in a child process whose data segment the kernel bounds
// (RLIMIT_DATA, which counts the Go heap); past it the child's allocation fails and the child dies,
// however the script allocated, and the parent reports the bound.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime/debug"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/fn"
	"github.com/krm-catalog/krm-catalog/fn/runtime/internal/proc"
)

// DefaultMaxMemory bounds what a sandbox process allocates once started: the script's values and
// the list it reads and writes. A function over thousands of resources needs tens of megabytes.
const DefaultMaxMemory = 1 << 30

// sandboxFailed is the exit status of a sandbox process that could not do its work; a Go runtime
// that dies exits with 2.
const sandboxFailed = 3

// SandboxArg is the argument that makes the krm-catalog binary a sandbox process (ServeSandbox).
const SandboxArg = "__starlark-sandbox"

// Sandbox runs scripts in child processes.
type Sandbox struct {
	// Command starts a process that calls ServeSandbox: the krm-catalog binary with SandboxArg.
	Command []string
	// MaxMemory bounds each process in bytes; 0 means DefaultMaxMemory.
	MaxMemory int64
}

// envSandbox marks a sandbox process. A program started as one that is not (a test binary without
// the TestMain that serves SandboxArg) would run its own work instead, and must not start sandboxes
// in turn.
const envSandbox = "KRM_CATALOG_STARLARK_SANDBOX"

// request is the first line a sandbox process reads; the ResourceList (YAML) follows.
type request struct {
	Name      string        `json:"name"`
	Script    string        `json:"script"`
	MaxSteps  uint64        `json:"maxSteps"`
	Timeout   time.Duration `json:"timeout"`
	MaxMemory int64         `json:"maxMemory"`
	Network   bool          `json:"network,omitempty"`
	Kpt       bool          `json:"kpt,omitempty"`
	// MaxOutputNodes bounds the values of the list the script returns (outputBoundOf): the child
	// refuses a larger one before it writes it, as writing it could take more than its memory.
	MaxOutputNodes int `json:"maxOutputNodes,omitempty"`
}

// sandboxGrace is how long past the script's own timeout the parent waits before it kills the
// process: the child cancels the script itself and reports the bound.
const sandboxGrace = 10 * time.Second

func (s *Sandbox) maxMemory() int64 {
	if s.MaxMemory > 0 {
		return s.MaxMemory
	}
	return DefaultMaxMemory
}

func (s *Sandbox) run(ctx context.Context, f *Function, in *fn.ResourceList) (*fn.ResourceList, error) {
	if len(s.Command) == 0 {
		return nil, &fn.FunctionError{Err: errors.New("starlark sandbox: no command")}
	}
	if _, inside := os.LookupEnv(envSandbox); inside {
		return nil, &fn.FunctionError{Err: fmt.Errorf("starlark sandbox: %s was started as a sandbox process but does not serve %s", s.Command[0], SandboxArg)}
	}
	timeout := f.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	list, err := in.Encode(fn.YAML)
	if err != nil {
		return nil, &fn.FunctionError{Err: err}
	}
	bound := outputBoundOf(list)
	req, err := json.Marshal(request{Name: f.Name, Script: f.Script, MaxSteps: f.MaxSteps, Timeout: timeout, MaxMemory: s.maxMemory(),
		Network: f.Network, Kpt: f.Kpt, MaxOutputNodes: bound.limits.Nodes})
	if err != nil {
		return nil, &fn.FunctionError{Err: err}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout+sandboxGrace)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.Command[0], s.Command[1:]...)
	// The script reads no environment. GOTRACEBACK keeps a dying runtime's report short; one P is
	// all a single-threaded interpreter needs, and fewer threads leave more of the bound to it.
	cmd.Env = []string{"GOTRACEBACK=none", "GOMAXPROCS=1", envSandbox + "=1"}
	cmd.Stdin = io.MultiReader(bytes.NewReader(req), strings.NewReader("\n"), bytes.NewReader(list))
	var stdout bytes.Buffer
	answer := &limitedBuffer{buf: &stdout, left: bound.bytes + maxPrinted + 1<<20}
	cmd.Stdout = answer
	// the child's standard error is the runtime's, kept for a failure; prints come on a pipe of their
	// own, passed through as they are written
	tail := &proc.Tail{Max: proc.StderrTail}
	// a dying runtime says why first ("fatal error: out of memory ..."), then its stacks
	head := &headBuffer{left: 4 << 10}
	cmd.Stderr = io.MultiWriter(head, tail)
	prints, printsW, err := os.Pipe()
	if err != nil {
		return nil, &fn.FunctionError{Err: err}
	}
	cmd.ExtraFiles = []*os.File{printsW}
	cmd.WaitDelay = 2 * time.Second
	stderr := f.Stderr
	if stderr == nil {
		stderr = io.Discard
	}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = io.Copy(stderr, prints)
	}()
	runErr := cmd.Run()
	printsW.Close()
	<-copied
	prints.Close()

	o, decodeErr := decodeOutcome(stdout.Bytes(), bound.limits)
	if decodeErr == nil {
		return o.result(in)
	}
	if answer.over || errors.Is(decodeErr, fn.ErrReadLimit) {
		return nil, &fn.FunctionError{Err: fmt.Errorf("%w: the script's output is past what its input lets it write (%s, %d values): %v",
			ErrLimit, humanize.IBytes(uint64(bound.bytes)), bound.limits.Nodes, decodeErr)}
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return nil, &fn.FunctionError{ExitCode: -1, Err: fmt.Errorf("starlark sandbox: %w", ctxErr)}
	}
	// A Go runtime whose allocation the kernel refused dies with exit status 2 and says so first
	// ("fatal error: runtime: out of memory", "cannot allocate memory"), or, when the collector's
	// own allocation fails, with a fault it reports the same way. ServeSandbox's own failures exit 3.
	var ee *exec.ExitError
	if errors.As(runErr, &ee) && ee.ExitCode() == 2 {
		return nil, &fn.FunctionError{Err: fmt.Errorf("%w: the script used more than its memory bound of %s (raise it with --starlark-max-memory); the sandbox process ended with %q",
			ErrLimit, humanize.IBytes(uint64(s.maxMemory())), firstLine(head.String()))}
	}
	if runErr == nil {
		runErr = decodeErr
	}
	return nil, &fn.FunctionError{Stderr: tail.String(), Err: fmt.Errorf("starlark sandbox: %w; stderr: %s", runErr, firstLine(head.String()))}
}

// outputBound is what the parent reads of a script's output: the bytes it keeps and the limits it
// decodes them within. A script writes what its input and its work make, and the parent reads it
// into nodes that cost tens of times their bytes, so the bound follows the input (four times its
// bytes and twice its nodes) above a floor that any script's own output fits (16 MiB, a million
// values).
type outputBound struct {
	bytes  int
	limits fn.ReadLimits
}

func outputBoundOf(input []byte) outputBound {
	const minBytes, minNodes = 16 << 20, 1_000_000
	nodes := max(minNodes, 2*fn.ScanNodes(input))
	return outputBound{
		bytes:  min(fn.MaxResourceListBytes, max(minBytes, 4*len(input))),
		limits: fn.ReadLimits{Nodes: nodes, Expanded: 2 * nodes},
	}
}

// decodeOutcome reads a sandbox process's answer: the outcome as one JSON line, then the list,
// within limits.
func decodeOutcome(b []byte, limits fn.ReadLimits) (outcome, error) {
	line, rest, ok := bytes.Cut(b, []byte("\n"))
	if !ok {
		return outcome{}, errors.New("no answer")
	}
	var o outcome
	if err := json.Unmarshal(line, &o); err != nil {
		return outcome{}, fmt.Errorf("its answer: %w", err)
	}
	if o.ScriptError != "" || o.Limit != "" || o.Failure != "" {
		return o, nil
	}
	list, _, err := fn.DecodeResourceListContext(context.Background(), rest, limits)
	if err != nil {
		return outcome{}, fmt.Errorf("its output: %w", err)
	}
	// The list crossed as YAML, whose encoder quotes strings such as "0" and "yes"; the nodes a
	// script's values become have no style (fromStarlark), and the writers choose it.
	for _, it := range list.Items {
		clearStyle(it.YNode())
	}
	o.List = list
	return o, nil
}

func clearStyle(n *yaml.Node) {
	n.Style = 0
	for _, c := range n.Content {
		clearStyle(c)
	}
}

// ServeSandbox is the sandbox process: it bounds its own memory, reads a request and a list from
// stdin, runs the script and writes the outcome to stdout. print() goes to file descriptor 3 when
// Sandbox.run started the process, else to stderr. It returns the exit code.
func ServeSandbox(stdin io.Reader, stdout, stderr io.Writer) int {
	r := bufio.NewReaderSize(stdin, 1<<20)
	line, err := r.ReadBytes('\n')
	if err != nil {
		fmt.Fprintln(stderr, "starlark sandbox: read the request:", err)
		return sandboxFailed
	}
	var req request
	if err := json.Unmarshal(line, &req); err != nil {
		fmt.Fprintln(stderr, "starlark sandbox: read the request:", err)
		return sandboxFailed
	}
	if req.MaxMemory <= 0 {
		req.MaxMemory = DefaultMaxMemory
	}
	if err := limitMemory(req.MaxMemory); err != nil {
		fmt.Fprintln(stderr, "starlark sandbox: bound the memory:", err)
		return sandboxFailed
	}
	// the collector works harder as the bound nears, so that garbage does not take the script
	// past it
	debug.SetMemoryLimit(req.MaxMemory / 4 * 3)
	data, err := io.ReadAll(io.LimitReader(r, fn.MaxResourceListBytes+1))
	if err != nil {
		fmt.Fprintln(stderr, "starlark sandbox: read the list:", err)
		return sandboxFailed
	}
	in, _, err := fn.DecodeResourceList(data)
	if err != nil {
		fmt.Fprintln(stderr, "starlark sandbox: read the list:", err)
		return sandboxFailed
	}
	data = nil
	var prints io.Writer = stderr
	if _, fromParent := os.LookupEnv(envSandbox); fromParent {
		// Sandbox.run passes the prints pipe as the first extra file
		f := os.NewFile(3, "prints")
		defer f.Close()
		prints = f
	}
	f := &Function{Name: req.Name, Script: req.Script, MaxSteps: req.MaxSteps, Timeout: req.Timeout, Network: req.Network, Kpt: req.Kpt}
	o := f.execute(context.Background(), in, prints)
	if o.List != nil && req.MaxOutputNodes > 0 && !withinNodes(o.List, req.MaxOutputNodes) {
		o = outcome{Limit: fmt.Sprintf("the script's output is past what its input lets it write (%d values)", req.MaxOutputNodes), Printed: o.Printed}
	}
	head, err := json.Marshal(o)
	if err != nil {
		fmt.Fprintln(stderr, "starlark sandbox:", err)
		return sandboxFailed
	}
	w := bufio.NewWriterSize(stdout, 1<<20)
	w.Write(head)
	w.WriteByte('\n')
	if o.List != nil {
		out, err := o.List.Encode(fn.YAML)
		if err != nil {
			fmt.Fprintln(stderr, "starlark sandbox: write the list:", err)
			return sandboxFailed
		}
		w.Write(out)
	}
	if err := w.Flush(); err != nil {
		fmt.Fprintln(stderr, "starlark sandbox: write the answer:", err)
		return sandboxFailed
	}
	return 0
}

// limitedBuffer fails writes past left bytes: a sandbox answers with one list at most.
type limitedBuffer struct {
	buf  *bytes.Buffer
	left int
	over bool // a write went past the bound
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if len(p) > l.left {
		l.over = true
		return 0, errors.New("starlark sandbox: answer too large")
	}
	l.left -= len(p)
	return l.buf.Write(p)
}

// headBuffer keeps the first bytes written to it.
type headBuffer struct {
	buf  bytes.Buffer
	left int
}

func (h *headBuffer) Write(p []byte) (int, error) {
	n := min(len(p), h.left)
	h.buf.Write(p[:n])
	h.left -= n
	return len(p), nil
}

func (h *headBuffer) String() string { return h.buf.String() }

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimLeft(s, "\n"), "\n")
	return line
}

// withinNodes reports whether the items of list hold at most max nodes, counting no further.
func withinNodes(list *fn.ResourceList, max int) bool {
	left := max
	var walk func(n *yaml.Node) bool
	walk = func(n *yaml.Node) bool {
		if left--; left < 0 {
			return false
		}
		for _, c := range n.Content {
			if !walk(c) {
				return false
			}
		}
		return true
	}
	for _, it := range list.Items {
		if !walk(it.YNode()) {
			return false
		}
	}
	return true
}
