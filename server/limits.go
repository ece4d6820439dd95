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
}

// Limits are the bounds of the service's classes of work. DefaultLimits are generous enough for
// interactive use and tools, and keep one client from taking a replica's memory or database.
type Limits struct {
	Validate Limit
	Search   Limit
	Publish  Limit
}

// DefaultLimits returns the defaults: validation is CPU and memory bound (a 4 MiB document takes
// about 100 MiB to check), so two at a time per core; search is bound by database connections.
func DefaultLimits(cores int) Limits {
	return Limits{
		Validate: Limit{Concurrent: 2 * max(1, cores), Rate: 5, Burst: 10},
		Search:   Limit{Concurrent: 32, Rate: 200, Burst: 400},
		Publish:  Limit{Concurrent: 8, Rate: 2, Burst: 20},
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
}

func newLimiter(class string, l Limit) *limiter {
	lim := &limiter{class: class}
	if l.Concurrent > 0 {
		lim.slots = make(chan struct{}, l.Concurrent)
	}
	if l.Rate > 0 {
		lim.buckets = newBuckets(l.Rate, max(1, l.Burst))
	}
	return lim
}

// admit takes a slot for client's request, or says when to come back. The caller calls the
// returned release when the work is done.
func (l *limiter) admit(client string) (release func(), err error) {
	if l.buckets != nil {
		if wait := l.buckets.take(client, time.Now()); wait > 0 {
			return nil, &tooManyRequests{message: fmt.Sprintf("too many %s requests from %s; slow down", l.class, client), retryAfter: wait}
		}
	}
	if l.slots == nil {
		return func() {}, nil
	}
	select {
	case l.slots <- struct{}{}:
		return func() { <-l.slots }, nil
	default:
		return nil, &tooManyRequests{message: fmt.Sprintf("the service is busy with %s requests; try again shortly", l.class), retryAfter: time.Second}
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
		release, err := l.admit(clientIP(r))
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
		release, err := l.admit("publisher " + strconv.Quote(publisherOf(r.Context())))
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

// take spends a token of client's bucket at now, or returns how long until one is there.
func (b *buckets) take(client string, now time.Time) time.Duration {
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
	bk, ok := b.m[client]
	if !ok {
		bk = &bucket{tokens: b.burst, at: now}
		b.m[client] = bk
	}
	bk.tokens, bk.at = bk.level(now, b.rate, b.burst), now
	if bk.tokens >= 1 {
		bk.tokens--
		return 0
	}
	return time.Duration(math.Ceil((1 - bk.tokens) / b.rate * float64(time.Second)))
}

func (bk *bucket) level(now time.Time, rate, burst float64) float64 {
	return min(burst, bk.tokens+now.Sub(bk.at).Seconds()*rate)
}
