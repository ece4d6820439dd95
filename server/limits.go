package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/krm-catalog/krm-catalog/internal/httpx"
)

// Limits are the bounds of the service's classes of work, the website's included. DefaultLimits
// are generous enough for interactive use and tools, and keep one client from taking a replica's
// memory or database.
type Limits struct {
	Validate httpx.Limit
	// Search bounds API and website searches alike.
	Search  httpx.Limit
	Publish httpx.Limit
	// Pages bounds the website's pages that read the database.
	Pages httpx.Limit
	// AuthFailures bounds failed authentications per address: past the burst, a request with a
	// token is refused before the token is looked up.
	AuthFailures httpx.Limit
	// DecodeMemory bounds the memory the documents being validated and published take at once,
	// by an estimate from what each is (decodeCost) before it is read.
	DecodeMemory int64
	// Downloads bounds the large answers one client reads (catalog.yaml, definition.yaml, a
	// function's entries, read from the cache or not): each costs a request for every
	// downloadUnit of its size, smaller ones nothing.
	Downloads httpx.Limit
}

// downloadUnit is the size of a response that costs one request of the Downloads budget.
const downloadUnit = 256 << 10

// DefaultDecodeMemory is the default of Limits.DecodeMemory: one document at the largest a
// request may hold (about 165 MiB read whole, at the default body limit), with room for smaller
// ones beside it.
const DefaultDecodeMemory = 192 << 20

// DefaultLimits returns the defaults: validation is CPU and memory bound (a 4 MiB document takes
// a second or more of a core and up to 165 MiB), so half the cores validate, at least two, one a
// client, and what they decode shares DefaultDecodeMemory with publishes; search is bound by
// database connections; publishes are authenticated and rare, so one waits for its turn for up
// to 10 s rather be refused, and a publisher has half the slots at most, so that another's
// publishes find one. Pages allow a person's browsing and a crawler's politeness, not a flood; a catalog page of a
// large catalog is rendered from a cache, but its first rendering decodes the catalog, so pages
// also take one of a bounded number of slots. Ten wrong tokens in a row are a mistake; more, at
// a second each, are a guess.
func DefaultLimits(cores int) Limits {
	return Limits{
		Validate:     httpx.Limit{Concurrent: max(2, cores/2), PerClient: 1, Rate: 5, Burst: 10, MaxWait: time.Second},
		Search:       httpx.Limit{Concurrent: 32, Rate: 200, Burst: 400, MaxWait: 250 * time.Millisecond},
		Publish:      httpx.Limit{Concurrent: 8, PerClient: 4, Rate: 2, Burst: 20, MaxWait: 10 * time.Second},
		Pages:        httpx.Limit{Concurrent: max(2, 2*cores), Rate: 20, Burst: 60, MaxWait: time.Second},
		AuthFailures: httpx.Limit{Rate: 1, Burst: 10},
		DecodeMemory: DefaultDecodeMemory,
		// 8 MiB a second, 64 MiB at once: a client copying every catalog of a large service,
		// not eight copying one a hundred times a second
		Downloads: httpx.Limit{Rate: 32, Burst: 256, MaxWait: 2 * time.Second},
	}
}

// Limiters are the limiters of Limits' classes. The server and the website share one set.
type Limiters struct {
	Validate, Search, Publish, Pages, AuthFailures, Downloads *httpx.Limiter
	// Decode is the budget of DecodeMemory, which validations and publishes share.
	Decode *httpx.Budget
}

// NewLimiters builds the limiters of l.
func NewLimiters(l Limits) *Limiters {
	return &Limiters{
		Validate:     httpx.NewLimiter("validate", l.Validate),
		Search:       httpx.NewLimiter("search", l.Search),
		Publish:      httpx.NewLimiter("publish", l.Publish),
		Pages:        httpx.NewLimiter("page", l.Pages),
		AuthFailures: httpx.NewLimiter("failed authentications", l.AuthFailures),
		Downloads:    httpx.NewLimiter("large downloads", l.Downloads),
		Decode:       httpx.NewBudget("decoding documents", l.DecodeMemory),
	}
}

// limit wraps a handler in a limiter keyed by client IP. The client's pace is checked before the
// body is read, and the slot taken after: a slow body holds no slot.
func (s *Server) limit(l *httpx.Limiter, h handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		return s.limited(w, r, l, httpx.ClientIP(r), h)
	}
}

// limitPublisher wraps a handler in a limiter keyed by the publisher the token acts for.
func (s *Server) limitPublisher(l *httpx.Limiter, h handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		return s.limited(w, r, l, "publisher "+strconv.Quote(publisherOf(r.Context())), h)
	}
}

func (s *Server) limited(w http.ResponseWriter, r *http.Request, l *httpx.Limiter, client string, h handlerFunc) error {
	if err := l.Pace(r.Context(), client); err != nil {
		return err
	}
	done, err := l.Hold(r.Context(), client)
	if err != nil {
		return err
	}
	defer done()
	if r.ContentLength != 0 && r.Body != nil && r.Body != http.NoBody {
		body, err := s.readBody(w, r)
		if err != nil {
			return err
		}
		r.Body = &readBody{Reader: bytes.NewReader(body), data: body}
	}
	release, err := l.Slot(r.Context())
	if err != nil {
		return err
	}
	defer release()
	return h(w, r)
}

// readBody is a request body already read whole (under the body deadline).
type readBody struct {
	*bytes.Reader
	data []byte
}

func (*readBody) Close() error { return nil }

// bodyTimeout is a request body that did not arrive within the body deadline (408).
type bodyTimeout struct{ after time.Duration }

func (e *bodyTimeout) Error() string {
	return fmt.Sprintf("the request body did not arrive within %s", e.after)
}

// readBody reads a request body up to the limit and within the body deadline; above the limit, the
// error maps to 413, past the deadline to 408.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if b, ok := r.Body.(*readBody); ok {
		return b.data, nil
	}
	rc := http.NewResponseController(w)
	// a writer that cannot set deadlines (a test's recorder) reads without one
	if err := rc.SetReadDeadline(time.Now().Add(s.deadlines.Body)); err == nil {
		defer func() { _ = rc.SetReadDeadline(time.Time{}) }()
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.maxBody))
	if err != nil {
		var tooLarge *http.MaxBytesError
		switch {
		case errors.As(err, &tooLarge):
			return nil, err
		case errors.Is(err, os.ErrDeadlineExceeded):
			return nil, &bodyTimeout{after: s.deadlines.Body}
		}
		return nil, &badRequest{message: "reading the request body failed: " + err.Error()}
	}
	return body, nil
}

// Deadlines bound each class of request: when its deadline passes, the database calls it makes
// fail (answering 503) instead of waiting on a stalled database.
type Deadlines struct {
	Read     time.Duration // GET and HEAD
	Validate time.Duration // POST /api/v1/validate
	Write    time.Duration // PUT and DELETE: publishes (which may push to a registry), keys
	// Body bounds reading a request body, before any slot of a limited class is taken.
	Body time.Duration
}

// DefaultDeadlines returns the defaults: a few seconds for what reads the database, longer for
// publishes, which may push to a registry; a body of the largest size arrives within the body
// deadline at 2 Mbit/s.
func DefaultDeadlines() Deadlines {
	return Deadlines{Read: 5 * time.Second, Validate: 15 * time.Second, Write: 60 * time.Second, Body: 20 * time.Second}
}

// deadline bounds every request by its class's deadline, and gives it its ID. The deadline's
// timer starts only when something waits for the request's context to end (deadlineContext): a
// database call does, an answer from memory does not, and a timer, a context and its registration
// with the connection's context for each request were the largest cost of serving catalog.yaml
// from memory. The ID is the X-Request-Id the request came with, else one made when first asked
// for (the request log line at debug level, an error page). The context also holds the router's
// routing context, taken from a pool as the router would take it: the router then uses it rather
// than copying the request once more to add its own.
func (s *Server) deadline(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d := s.deadlines.Read
		switch r.Method {
		case http.MethodGet, http.MethodHead:
		case http.MethodPost:
			d = s.deadlines.Validate
			if strings.Contains(r.URL.Path, "/proposals") {
				d = s.deadlines.Write // an approval publishes, and may push to a registry
			}
		default:
			d = s.deadlines.Write
		}
		route := s.routes.Get().(*chi.Context)
		route.Reset()
		route.Routes = s.router
		ctx := &deadlineContext{Context: r.Context(), deadline: time.Now().Add(d), id: r.Header.Get(httpx.RequestIDHeader), ids: &s.ids, route: route}
		defer func() {
			ctx.stop()
			s.routes.Put(route)
		}()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// deadlineContext is a context with a deadline whose timer starts when something first asks
// whether it is done (Done, Err): until then it answers its deadline, and values, and holds no
// timer. Once started it is context.WithDeadline of its parent, and hands out that context's
// values, so that contexts derived from it are its children as from any other.
type deadlineContext struct {
	context.Context // the request's
	deadline        time.Time
	// the request's ID (httpx.RequestID): the X-Request-Id it came with, else one from ids made
	// when first asked for (under mu), as most requests never are
	id  string
	ids *httpx.RequestIDs
	// the router's routing context (chi.RouteCtxKey)
	route *chi.Context

	mu      sync.Mutex
	stopped bool
	timed   atomic.Pointer[timedContext]
}

type timedContext struct {
	context.Context
	cancel context.CancelFunc
}

func (c *deadlineContext) start() context.Context {
	if t := c.timed.Load(); t != nil {
		return t
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if t := c.timed.Load(); t != nil {
		return t
	}
	ctx, cancel := context.WithDeadline(c.Context, c.deadline)
	if c.stopped {
		cancel()
	}
	t := &timedContext{Context: ctx, cancel: cancel}
	c.timed.Store(t)
	return t
}

// stop ends the context when its request ends, as the cancel of context.WithDeadline would.
func (c *deadlineContext) stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopped = true
	if t := c.timed.Load(); t != nil {
		t.cancel()
	}
}

// Deadline is the earlier of the request's deadline and the parent's.
func (c *deadlineContext) Deadline() (time.Time, bool) {
	if d, ok := c.Context.Deadline(); ok && d.Before(c.deadline) {
		return d, true
	}
	return c.deadline, true
}

// Done starts the timer.
func (c *deadlineContext) Done() <-chan struct{} { return c.start().Done() }

// Err starts the timer: past the deadline, the context it starts is already done.
func (c *deadlineContext) Err() error { return c.start().Err() }

// Value is the started context's value, or the parent's before.
func (c *deadlineContext) Value(key any) any {
	if key == chi.RouteCtxKey && c.route != nil {
		return c.route
	}
	if httpx.IsRequestIDKey(key) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.id == "" {
			c.id = c.ids.New()
		}
		return c.id
	}
	if t := c.timed.Load(); t != nil {
		return t.Value(key)
	}
	return c.Context.Value(key)
}
