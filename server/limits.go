package server

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Limit bounds one class of work: how many requests run at once, and how fast one client (an IP
// address, or a publisher for publishes) may send them. Zero fields mean no bound.
type Limit struct {
	// Concurrent requests of the class in flight on this replica; more get 429.
	Concurrent int
	// Rate is the requests per second one client may make, in bursts of Burst.
	Rate  float64
	Burst int
	// MaxWait is how long a request over a limit may wait for its turn before it is refused.
	// Waiting, rather than refusing at once, also slows a client that ignores Retry-After and
	// would otherwise send its next large body straight away.
	MaxWait time.Duration
}

// Limits are the bounds of the service's classes of work. DefaultLimits are generous enough for
// interactive use and tools, and keep one client from taking a replica's memory or database.
type Limits struct {
	Validate Limit
	Search   Limit
	Publish  Limit
}

// DefaultLimits returns the defaults: validation is CPU and memory bound (a 4 MiB document takes
// seconds of a core and about 100 MiB), so at most half the cores validate and the rest keep
// serving reads; search is bound by database connections.
func DefaultLimits(cores int) Limits {
	return Limits{
		Validate: Limit{Concurrent: max(1, cores/2), Rate: 5, Burst: 10, MaxWait: time.Second},
		Search:   Limit{Concurrent: 32, Rate: 200, Burst: 400, MaxWait: 250 * time.Millisecond},
		Publish:  Limit{Concurrent: 8, Rate: 2, Burst: 20, MaxWait: time.Second},
	}
}

// tooManyRequests is a request over a limit (429).
type tooManyRequests struct {
	message    string
	retryAfter time.Duration
}

func (e *tooManyRequests) Error() string { return e.message }

// limiter enforces one Limit.
type limiter struct {
	class   string
	slots   chan struct{} // nil: no concurrency bound
	buckets *buckets      // nil: no rate bound
	maxWait time.Duration
}

func newLimiter(class string, l Limit) *limiter {
	lim := &limiter{class: class, maxWait: l.MaxWait}
	if l.Concurrent > 0 {
		lim.slots = make(chan struct{}, l.Concurrent)
	}
	if l.Rate > 0 {
		lim.buckets = newBuckets(l.Rate, max(1, l.Burst))
	}
	return lim
}

// admit takes a slot for client's request, waiting up to the limit's MaxWait (or until ctx ends)
// for its turn, or says when to come back. The caller calls the returned release when the work is
// done.
func (l *limiter) admit(ctx context.Context, client string) (release func(), err error) {
	if l.buckets != nil {
		wait, ok := l.buckets.reserve(client, time.Now(), l.maxWait)
		if !ok {
			// refuse no faster than a waiting request would be served: a client that retries at
			// once, with a large body, is held back here rather than spinning
			if err := sleep(ctx, l.maxWait); err != nil {
				return nil, err
			}
			return nil, &tooManyRequests{message: fmt.Sprintf("too many %s requests from %s; slow down", l.class, client), retryAfter: max(time.Second, wait-l.maxWait)}
		}
		if wait > 0 {
			if err := sleep(ctx, wait); err != nil {
				return nil, err
			}
		}
	}
	if l.slots == nil {
		return func() {}, nil
	}
	release = func() { <-l.slots }
	select {
	case l.slots <- struct{}{}:
		return release, nil
	default:
	}
	busy := &tooManyRequests{message: fmt.Sprintf("the service is busy with %s requests; try again shortly", l.class), retryAfter: time.Second}
	if l.maxWait <= 0 {
		return nil, busy
	}
	t := time.NewTimer(l.maxWait)
	defer t.Stop()
	select {
	case l.slots <- struct{}{}:
		return release, nil
	case <-t.C:
		return nil, busy
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// clientIP is the address a request came from. Proxies' forwarding headers are not trusted: behind
// a load balancer, limit per client there, or accept that the balancer is one client.
func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// limit wraps a handler in a limiter keyed by client IP, taken before the body is read.
func (s *Server) limit(l *limiter, h handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		release, err := l.admit(r.Context(), clientIP(r))
		if err != nil {
			return err
		}
		defer release()
		return h(w, r)
	}
}

// limitPublisher wraps a handler in a limiter keyed by the publisher the token acts for.
func (s *Server) limitPublisher(l *limiter, h handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		release, err := l.admit(r.Context(), "publisher "+strconv.Quote(publisherOf(r.Context())))
		if err != nil {
			return err
		}
		defer release()
		return h(w, r)
	}
}

// Deadlines bound each class of request: when its deadline passes, the database calls it makes
// fail (answering 503) instead of waiting on a stalled database.
type Deadlines struct {
	Read     time.Duration // GET and HEAD
	Validate time.Duration // POST /api/v1/validate
	Write    time.Duration // PUT and DELETE: publishes (which may push to a registry), keys
}

// DefaultDeadlines returns the defaults: a few seconds for what reads the database, longer for
// publishes, which may push to a registry.
func DefaultDeadlines() Deadlines {
	return Deadlines{Read: 5 * time.Second, Validate: 15 * time.Second, Write: 60 * time.Second}
}

// deadline bounds every request by its class's deadline.
func (s *Server) deadline(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d := s.deadlines.Read
		switch r.Method {
		case http.MethodGet, http.MethodHead:
		case http.MethodPost:
			d = s.deadlines.Validate
		default:
			d = s.deadlines.Write
		}
		ctx, cancel := context.WithTimeout(r.Context(), d)
		defer cancel()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// buckets are token buckets per client, forgotten once full again so that the map stays as
// small as the set of clients currently sending.
type buckets struct {
	mu    sync.Mutex
	rate  float64 // tokens per second
	burst float64
	m     map[string]*bucket
	sweep time.Time
}

type bucket struct {
	tokens float64
	at     time.Time
}

func newBuckets(rate float64, burst int) *buckets {
	return &buckets{rate: rate, burst: float64(burst), m: map[string]*bucket{}}
}

// reserve spends a token of client's bucket at now. When the bucket is empty but a token comes
// within maxWait, it is spent in advance (the bucket goes below zero) and reserve returns how long
// to wait for it; otherwise ok is false and wait says how long until one is there.
func (b *buckets) reserve(client string, now time.Time, maxWait time.Duration) (wait time.Duration, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if now.Sub(b.sweep) > time.Minute {
		b.sweep = now
		for k, v := range b.m {
			if v.level(now, b.rate, b.burst) >= b.burst {
				delete(b.m, k)
			}
		}
	}
	bk, found := b.m[client]
	if !found {
		bk = &bucket{tokens: b.burst, at: now}
		b.m[client] = bk
	}
	bk.tokens, bk.at = bk.level(now, b.rate, b.burst), now
	if bk.tokens >= 1 {
		bk.tokens--
		return 0, true
	}
	wait = time.Duration(math.Ceil((1 - bk.tokens) / b.rate * float64(time.Second)))
	if wait <= maxWait {
		bk.tokens--
		return wait, true
	}
	return wait, false
}

func (bk *bucket) level(now time.Time, rate, burst float64) float64 {
	return min(burst, bk.tokens+now.Sub(bk.at).Seconds()*rate)
}
