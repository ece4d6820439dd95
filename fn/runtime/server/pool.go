// Package server runs KRM functions that conform to spec v2 as servers: each is started once,
// waited on until it accepts connections, sent ResourceLists by HTTP POST, reused across calls and
// pipeline steps, restarted once if it dies, and stopped when the pool closes.
package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/krm-catalog/krm-catalog/fn"
)

// Instance is one running function server.
type Instance interface {
	// URL is where it answers POSTs, e.g. http://127.0.0.1:40123/.
	URL() string
	// Done is closed when the server has exited.
	Done() <-chan struct{}
	// Stderr returns the end of what it wrote to standard error.
	Stderr() string
	// Stop ends it and waits for it to be gone.
	Stop() error
}

// Launcher starts a function server.
type Launcher interface {
	Launch(ctx context.Context) (Instance, error)
}

// Pool keeps running function servers by key (the verified executable, or the pinned image).
// It is safe for concurrent use. Close stops every server.
type Pool struct {
	// StartTimeout bounds how long a server may take to accept connections; default 30 s.
	StartTimeout time.Duration
	// Format is the wire format; JSON unless set otherwise (docs/design.md §9: YAML encoding dominates).
	Format fn.Format
	// Client sends the requests; nil uses a client without timeout (calls are bounded by their
	// context).
	Client *http.Client

	mu      sync.Mutex
	servers map[string]*entry
	closed  atomic.Bool
}

type entry struct {
	mu       sync.Mutex
	launcher Launcher
	inst     Instance
	restarts int
	err      error // a start that failed for good
}

// deathWait is how long a request that failed in transport waits to learn whether its server
// died (then it is restarted, or its exit status is the call's): the client of a container server
// exits some time after the container does.
const deathWait = 5 * time.Second

// ErrServerDied: a function server died, was restarted once, and died again.
var ErrServerDied = errors.New("function server died")

// exitCode is the exit status of an instance that has exited, when it knows it (a *Process does);
// 0 otherwise.
func exitCode(inst Instance) int {
	if e, ok := inst.(interface{ ExitCode() int }); ok {
		return e.ExitCode()
	}
	return 0
}

// Function returns an fn.Function that runs through the server for key, starting it on first use.
func (p *Pool) Function(key string, l Launcher, timeout time.Duration) fn.Function {
	return &function{pool: p, key: key, launcher: l, timeout: timeout}
}

type function struct {
	pool     *Pool
	key      string
	launcher Launcher
	timeout  time.Duration
}

func (f *function) Run(ctx context.Context, in *fn.ResourceList) (*fn.ResourceList, error) {
	body, err := in.Encode(f.pool.Format)
	if err != nil {
		return nil, err
	}
	data, inst, err := f.call(ctx, body, f.pool.Format, fn.MaxResourceListBytes)
	if err != nil {
		return nil, err
	}
	out, _, err := fn.DecodeResourceList(data)
	if err != nil {
		return nil, &fn.FunctionError{Stderr: inst.Stderr(), Err: fmt.Errorf("its response: %w", err)}
	}
	// a server's answer has no exit status: fn.Verdict reads its results (out.Exited unset)
	out.SentJSON = f.pool.Format == fn.JSON
	return out, nil
}

// RunEncoded posts input as it came, in format, and returns the server's answer unread
// (fn/evaluator's pass-through); an answer past maxOutput bytes fails the call. A server's answer
// has no exit status: exited is false, and its results are its verdict.
func (f *function) RunEncoded(ctx context.Context, input []byte, format fn.Format, maxOutput int) (out []byte, stderr string, exited bool, err error) {
	out, _, err = f.call(ctx, input, format, maxOutput)
	var fe *fn.FunctionError
	if errors.As(err, &fe) {
		return nil, fe.Stderr, false, err
	}
	return out, "", false, err
}

// call posts one list to the function's server, starting it (or restarting it once, if it died),
// and returns the answer and the server that gave it.
func (f *function) call(ctx context.Context, body []byte, format fn.Format, maxOutput int) ([]byte, Instance, error) {
	parent := ctx
	if f.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.timeout)
		defer cancel()
	}
	e, err := f.pool.entry(f.key, f.launcher)
	if err != nil {
		return nil, nil, err
	}
	for attempt := 0; ; attempt++ {
		inst, err := f.pool.instance(ctx, e)
		if err != nil {
			if f.timedOut(parent, ctx) {
				// its start took the whole bound: the call's bound, as for a process (not the caller's deadline)
				return nil, nil, &fn.FunctionError{ExitCode: -1, Err: fmt.Errorf("timed out after %s: %v", f.timeout, err)}
			}
			return nil, nil, &fn.FunctionError{Err: err}
		}
		out, err := f.pool.post(ctx, inst, body, format, maxOutput)
		if err == nil {
			return out, inst, nil
		}
		var fe *fn.FunctionError
		if errors.As(err, &fe) {
			return nil, inst, err // the server answered
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			// the caller gave up, or the call ran past its bound: not a death
			if f.timedOut(parent, ctx) {
				ctxErr = fmt.Errorf("timed out after %s", f.timeout)
			}
			return nil, inst, &fn.FunctionError{ExitCode: -1, Stderr: inst.Stderr(), Err: ctxErr}
		}
		select {
		case <-inst.Done():
			if attempt == 0 {
				continue // it died: restart it once and send the list again
			}
			// it died on this list twice: its exit status is the call's, as a process's would be
			return nil, inst, &fn.FunctionError{ExitCode: exitCode(inst), Stderr: inst.Stderr(), Err: fmt.Errorf("%w again after a restart: %v", ErrServerDied, err)}
		case <-time.After(deathWait):
			return nil, inst, &fn.FunctionError{Stderr: inst.Stderr(), Err: err}
		}
	}
}

// timedOut reports whether the call's own bound ended it (ctx, under parent), rather than its caller.
func (f *function) timedOut(parent, ctx context.Context) bool {
	return f.timeout > 0 && errors.Is(ctx.Err(), context.DeadlineExceeded) && parent.Err() == nil
}

func (p *Pool) entry(key string, l Launcher) (*entry, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed.Load() {
		return nil, errors.New("function server pool is closed")
	}
	if p.servers == nil {
		p.servers = map[string]*entry{}
	}
	e, ok := p.servers[key]
	if !ok {
		e = &entry{launcher: l}
		p.servers[key] = e
	}
	return e, nil
}

// instance returns the running server of e, starting it if needed. A server found dead is
// restarted once over the life of the pool; a second death is final.
func (p *Pool) instance(ctx context.Context, e *entry) (Instance, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.err != nil {
		return nil, e.err
	}
	if e.inst != nil {
		select {
		case <-e.inst.Done():
			if e.restarts >= 1 {
				e.err = fmt.Errorf("%w twice; not restarting it again; its last messages: %s", ErrServerDied, e.inst.Stderr())
				return nil, e.err
			}
			e.restarts++
			_ = e.inst.Stop()
			e.inst = nil
		default:
			return e.inst, nil
		}
	}
	timeout := p.StartTimeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	startCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var inst Instance
	for launch := 1; ; launch++ {
		var err error
		inst, err = e.launcher.Launch(startCtx)
		if err != nil {
			return nil, fmt.Errorf("start function server: %w", err)
		}
		err = WaitReady(startCtx, inst)
		if err == nil {
			break
		}
		_ = inst.Stop()
		// a server that exited before it listened most often found its port taken by another
		// process between the moment it was chosen and its bind: launched again, it gets another
		if !errors.Is(err, errExitedEarly) || launch == maxLaunches {
			return nil, fmt.Errorf("start function server: %w", err)
		}
	}
	if p.closed.Load() {
		_ = inst.Stop()
		return nil, errors.New("function server pool is closed")
	}
	e.inst = inst
	return inst, nil
}

// maxLaunches bounds the launches of a server that exits before it accepts connections.
const maxLaunches = 3

// errExitedEarly: a server exited before it accepted a connection.
var errExitedEarly = errors.New("it exited before accepting connections")

// WaitReady polls until the server accepts a TCP connection, it exits, or ctx ends.
func WaitReady(ctx context.Context, inst Instance) error {
	u, err := url.Parse(inst.URL())
	if err != nil {
		return err
	}
	var d net.Dialer
	for delay := 5 * time.Millisecond; ; delay = min(delay*2, 200*time.Millisecond) {
		attempt, cancel := context.WithTimeout(ctx, time.Second)
		c, err := d.DialContext(attempt, "tcp", u.Host)
		cancel()
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-inst.Done():
			return fmt.Errorf("%w: %s", errExitedEarly, inst.Stderr())
		case <-ctx.Done():
			return fmt.Errorf("it did not accept connections on %s in time: %w; its messages: %s", u.Host, ctx.Err(), inst.Stderr())
		case <-time.After(delay):
		}
	}
}

// post sends one list, in format, and returns the answer's body, unread. A response other than 200
// is a *fn.FunctionError (the function answered); a transport error is returned as is (the server
// may have died).
func (p *Pool) post(ctx context.Context, inst Instance, body []byte, format fn.Format, maxOutput int) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, inst.URL(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", format.ContentType())
	req.Header.Set("Accept", format.ContentType())
	client := p.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, int64(maxOutput)+1))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		msg := string(bytes.TrimSpace(data))
		if len(msg) > 2048 {
			msg = msg[:2048] + "..."
		}
		return nil, &fn.FunctionError{Stderr: inst.Stderr(), Err: fmt.Errorf("POST: %s: %s", resp.Status, msg)}
	}
	if len(data) > maxOutput {
		return nil, &fn.FunctionError{Stderr: inst.Stderr(), Err: fmt.Errorf("its response exceeds %d bytes", maxOutput)}
	}
	return data, nil
}

// Close stops every server of the pool and waits for them.
func (p *Pool) Close() error {
	p.mu.Lock()
	p.closed.Store(true)
	entries := p.servers
	p.servers = nil
	p.mu.Unlock()
	var errs []error
	var wg sync.WaitGroup
	var emu sync.Mutex
	for _, e := range entries {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.mu.Lock()
			defer e.mu.Unlock()
			if e.inst != nil {
				if err := e.inst.Stop(); err != nil {
					emu.Lock()
					errs = append(errs, err)
					emu.Unlock()
				}
				e.inst = nil
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Running reports how many servers the pool has running; for tests and diagnostics.
func (p *Pool) Running() int {
	p.mu.Lock()
	entries := make([]*entry, 0, len(p.servers))
	for _, e := range p.servers {
		entries = append(entries, e)
	}
	p.mu.Unlock()
	n := 0
	for _, e := range entries {
		e.mu.Lock()
		if e.inst != nil {
			select {
			case <-e.inst.Done():
			default:
				n++
			}
		}
		e.mu.Unlock()
	}
	return n
}
