package oci

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"oras.land/oras-go/v2/registry/remote/retry"
)

// DefaultIdleTimeout is how long the command line waits for a registry that has stopped making
// progress: long enough for a registry hashing a large upload, short enough that a registry that
// accepts connections and never answers fails the command instead of hanging it.
const DefaultIdleTimeout = 30 * time.Second

// ErrRegistryTimeout: the registry made no progress for the client's bound (errors.Is).
var ErrRegistryTimeout = errors.New("registry timed out")

// TimeoutError names the registry that stopped answering and the bound it exceeded.
type TimeoutError struct {
	Host  string
	After time.Duration
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("registry %s timed out: nothing received for %s", e.Host, e.After)
}

// Is makes errors.Is(err, ErrRegistryTimeout) true.
func (e *TimeoutError) Is(target error) bool { return target == ErrRegistryTimeout }

// NewIdleBoundedHTTPClient returns oras-go's retrying client over a transport that fails a request
// with a *TimeoutError when the registry makes no progress for idle: from the request's start
// until its response headers (dialing and TLS included) no more than idle may pass without the
// registry taking a byte of the request body, and each read of the response body must return
// within idle. There is no bound on the whole request, so a large blob over a slow link still
// transfers, and none on the time the caller takes between reads. The error is not a net.Error,
// so oras-go's retry policy does not repeat a request that already waited the whole bound.
// idle <= 0 means DefaultIdleTimeout: a zero bound would fail every request.
func NewIdleBoundedHTTPClient(idle time.Duration) *http.Client {
	if idle <= 0 {
		idle = DefaultIdleTimeout
	}
	base := http.DefaultTransport.(*http.Transport).Clone()
	return &http.Client{Transport: retry.NewTransport(&idleTransport{base: base, idle: idle})}
}

type idleTransport struct {
	base http.RoundTripper
	idle time.Duration
}

// errStalled is the cause of a request's context cancelled by its watchdog.
var errStalled = errors.New("stalled")

func (t *idleTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancelCause(req.Context())
	w := &watchdog{ctx: ctx, cancel: cancel, idle: t.idle, host: req.URL.Host}
	w.timer = time.AfterFunc(t.idle, func() { cancel(errStalled) })
	r := req.WithContext(ctx)
	if req.Body != nil && req.Body != http.NoBody {
		r.Body = &uploadBody{ReadCloser: req.Body, w: w}
	}
	resp, err := t.base.RoundTrip(r)
	w.answer()
	if err != nil {
		cancel(nil)
		return nil, w.check(err)
	}
	if context.Cause(ctx) == errStalled {
		// The headers came as the bound ran out: the body would fail on its first read anyway.
		resp.Body.Close()
		cancel(nil)
		return nil, w.timeout()
	}
	resp.Body = &downloadBody{ReadCloser: resp.Body, w: w}
	return resp, nil
}

// watchdog cancels a request's context when the registry stalls.
type watchdog struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	timer  *time.Timer
	idle   time.Duration
	host   string

	mu sync.Mutex
	// answered stops the request body from re-arming the timer once the response has come (the
	// transport may still be reading it): from then on, only reads of the response arm it.
	answered bool
}

// answer stops the timer for good, as far as the request body is concerned.
func (w *watchdog) answer() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.answered = true
	w.timer.Stop()
}

// progress restarts the bound while the request is being sent.
func (w *watchdog) progress() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.answered {
		w.timer.Reset(w.idle)
	}
}

func (w *watchdog) timeout() error { return &TimeoutError{Host: w.host, After: w.idle} }

// check replaces the error of an operation the watchdog cut short.
func (w *watchdog) check(err error) error {
	if err != nil && !errors.Is(err, io.EOF) && context.Cause(w.ctx) == errStalled {
		return w.timeout()
	}
	return err
}

// uploadBody restarts the bound each time the transport takes more of the request body: the
// registry is accepting it.
type uploadBody struct {
	io.ReadCloser
	w *watchdog
}

func (b *uploadBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.w.progress()
	}
	return n, err
}

// downloadBody bounds each read, the time spent waiting on the registry, and not the time between
// reads, which is the caller's.
type downloadBody struct {
	io.ReadCloser
	w *watchdog
}

func (b *downloadBody) Read(p []byte) (int, error) {
	b.w.timer.Reset(b.w.idle)
	n, err := b.ReadCloser.Read(p)
	b.w.timer.Stop()
	return n, b.w.check(err)
}

func (b *downloadBody) Close() error {
	b.w.timer.Stop()
	err := b.ReadCloser.Close()
	b.w.cancel(nil)
	return err
}
