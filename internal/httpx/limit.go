package httpx

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"sync"
	"time"
)

// Limit bounds one class of work: how many requests run at once, and how fast one client (an IP
// address, or a publisher for publishes) may send them. Zero fields mean no bound.
type Limit struct {
	// Concurrent requests of the class in flight on this replica; more get 429.
	Concurrent int
	// PerClient is how many of them one client may have in flight: the rest of the slots stay
	// for other clients, whatever one sends at once.
	PerClient int
	// Rate is the requests per second one client may make, in bursts of Burst.
	Rate  float64
	Burst int
	// MaxWait is how long a request over a limit may wait for its turn before it is refused.
	// Waiting, rather than refusing at once, also slows a client that ignores Retry-After and
	// would otherwise send its next large body straight away.
	MaxWait time.Duration
}

// TooManyRequests is a request over a limit (429). RetryAfter says when to come back.
type TooManyRequests struct {
	Message    string
	RetryAfter time.Duration
}

func (e *TooManyRequests) Error() string { return e.Message }

// Limiter enforces one Limit. The API and the website share limiters, so that a client has one
// budget of each class whichever way it asks.
type Limiter struct {
	class   string
	slots   chan struct{} // nil: no concurrency bound
	buckets *buckets      // nil: no rate bound
	maxWait time.Duration

	perClient int
	mu        sync.Mutex
	inFlight  map[string]int           // per client, when perClient > 0
	freed     map[string]chan struct{} // closed when one of a client's requests ends
	pending   map[string]int           // Take's work under way, per client
	settled   map[string]chan struct{} // closed when some of a client's Take work ends
}

// NewLimiter returns the limiter of a class of work named class (the name appears in refusals).
func NewLimiter(class string, l Limit) *Limiter {
	lim := &Limiter{class: class, maxWait: l.MaxWait, perClient: l.PerClient, inFlight: map[string]int{}, freed: map[string]chan struct{}{},
		pending: map[string]int{}, settled: map[string]chan struct{}{}}
	if l.Concurrent > 0 {
		lim.slots = make(chan struct{}, l.Concurrent)
	}
	if l.Rate > 0 {
		lim.buckets = newBuckets(l.Rate, max(1, l.Burst))
	}
	return lim
}

// MaxWait is how long a request of the class waits for its turn before it is refused.
func (l *Limiter) MaxWait() time.Duration {
	if l == nil {
		return 0
	}
	return l.maxWait
}

// Admit paces client's request and takes a slot for it (Pace, then Slot). The caller calls the
// returned release when the work is done.
func (l *Limiter) Admit(ctx context.Context, client string) (release func(), err error) {
	if err := l.Pace(ctx, client); err != nil {
		return nil, err
	}
	return l.Slot(ctx)
}

// Pace spends one of client's requests, waiting up to the limit's MaxWait (or until ctx ends) for
// its turn, or says when to come back. It holds nothing: a request may read its body between Pace
// and Slot without keeping others from their slot.
func (l *Limiter) Pace(ctx context.Context, client string) error {
	if l == nil {
		return nil
	}
	return l.pace(ctx, client, 1, l.class+" requests")
}

// PaceN is Pace of a request that costs n of client's requests (a download of n units). A cost
// above the burst is the burst.
func (l *Limiter) PaceN(ctx context.Context, client string, n int) error {
	if l == nil {
		return nil
	}
	return l.pace(ctx, client, n, l.class)
}

// pace spends n of client's requests, what naming them in a refusal.
func (l *Limiter) pace(ctx context.Context, client string, n int, what string) error {
	if l.buckets == nil || n <= 0 {
		return nil
	}
	n = min(n, int(l.buckets.burst))
	wait, ok := l.buckets.reserveN(client, time.Now(), l.maxWait, float64(n))
	if !ok {
		// refuse no faster than a waiting request would be served: a client that retries at
		// once, with a large body, is held back here rather than spinning
		if err := sleep(ctx, l.maxWait); err != nil {
			return err
		}
		return &TooManyRequests{Message: fmt.Sprintf("too many %s from %s; slow down", what, client), RetryAfter: max(time.Second, wait-l.maxWait)}
	}
	if wait > 0 {
		return sleep(ctx, wait)
	}
	return nil
}

// Hold takes one of client's own slots (Limit.PerClient), waiting up to MaxWait for one of its
// requests to end. The caller calls release when the work is done.
func (l *Limiter) Hold(ctx context.Context, client string) (release func(), err error) {
	if l == nil || l.perClient <= 0 {
		return func() {}, nil
	}
	var timeout <-chan time.Time
	for {
		l.mu.Lock()
		if l.inFlight[client] < l.perClient {
			l.inFlight[client]++
			l.mu.Unlock()
			return func() { l.release(client) }, nil
		}
		freed, ok := l.freed[client]
		if !ok {
			freed = make(chan struct{})
			l.freed[client] = freed
		}
		l.mu.Unlock()
		if timeout == nil {
			if l.maxWait <= 0 {
				return nil, l.busyClient(client)
			}
			t := time.NewTimer(l.maxWait)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-freed:
		case <-timeout:
			return nil, l.busyClient(client)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (l *Limiter) release(client string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inFlight[client]--; l.inFlight[client] <= 0 {
		delete(l.inFlight, client)
	}
	if ch, ok := l.freed[client]; ok {
		close(ch)
		delete(l.freed, client)
	}
}

func (l *Limiter) busyClient(client string) error {
	return &TooManyRequests{Message: fmt.Sprintf("%s has %d %s requests in flight, the most one client may; wait for them", client, l.perClient, l.class), RetryAfter: time.Second}
}

// Slot takes one of the class's concurrent slots, waiting up to MaxWait for one to free.
func (l *Limiter) Slot(ctx context.Context) (release func(), err error) {
	if l == nil || l.slots == nil {
		return func() {}, nil
	}
	release = func() { <-l.slots }
	select {
	case l.slots <- struct{}{}:
		return release, nil
	default:
	}
	busy := &TooManyRequests{Message: fmt.Sprintf("the service is busy with %s requests; try again shortly", l.class), RetryAfter: time.Second}
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

// Exhausted reports, without spending anything, whether client has no request of its budget left,
// and when one will be. With Charge it limits what only some requests cost: failed
// authentications spend the budget, and a client that spent it is refused before any work.
func (l *Limiter) Exhausted(client string) (retryAfter time.Duration, exhausted bool) {
	if l == nil || l.buckets == nil {
		return 0, false
	}
	return l.buckets.peek(client, time.Now())
}

// Charge spends one of client's requests, never waiting.
func (l *Limiter) Charge(client string) {
	if l == nil || l.buckets == nil {
		return
	}
	l.buckets.reserve(client, time.Now(), time.Duration(math.MaxInt64))
}

// Take spends one of client's requests for work whose cost is known only once it is done (a
// token looked up: a wrong one costs the budget, a right one does not), in one step: of requests
// that arrive at once, no more than the budget's tokens go ahead. A request that finds none left
// while others' work is under way waits for it (up to ctx) and tries again, so that work that turns
// out free gives its token to the next; when none is under way the budget is spent, and ok is
// false (retryAfter says when a token will be there). The caller calls done with whether the
// work cost the budget: if not, the token is given back.
func (l *Limiter) Take(ctx context.Context, client string) (done func(cost bool), retryAfter time.Duration, ok bool, err error) {
	if l == nil || l.buckets == nil {
		return func(bool) {}, 0, true, nil
	}
	for {
		// reserve under mu, as settle refunds under it: otherwise a token refunded, and its
		// work's end counted, between this reserve and the pending check below would refuse a
		// request that the budget has room for
		l.mu.Lock()
		wait, ok := l.buckets.reserve(client, time.Now(), 0)
		if ok {
			l.pending[client]++
			l.mu.Unlock()
			return func(cost bool) { l.settle(client, cost) }, 0, true, nil
		}
		if l.pending[client] == 0 {
			l.mu.Unlock()
			return nil, wait, false, nil
		}
		settled, exists := l.settled[client]
		if !exists {
			settled = make(chan struct{})
			l.settled[client] = settled
		}
		l.mu.Unlock()
		select {
		case <-settled:
		case <-ctx.Done():
			return nil, 0, false, ctx.Err()
		}
	}
}

// settle ends one of client's Take: the token is given back unless the work cost it, and the
// requests waiting for it try again.
func (l *Limiter) settle(client string, cost bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !cost {
		l.buckets.refund(client)
	}
	if l.pending[client]--; l.pending[client] <= 0 {
		delete(l.pending, client)
	}
	if ch, ok := l.settled[client]; ok {
		close(ch)
		delete(l.settled, client)
	}
}

// Refusal is the error of a client whose budget Exhausted reports spent.
func (l *Limiter) Refusal(client string, retryAfter time.Duration) error {
	return &TooManyRequests{Message: fmt.Sprintf("too many %s from %s; slow down", l.class, client), RetryAfter: max(time.Second, retryAfter)}
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

// ClientIP is the address a request came from. Proxies' forwarding headers are not trusted: behind
// a load balancer, limit per client there, or accept that the balancer is one client.
func ClientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
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
	return b.reserveN(client, now, maxWait, 1)
}

// reserveN is reserve of n tokens.
func (b *buckets) reserveN(client string, now time.Time, maxWait time.Duration, n float64) (wait time.Duration, ok bool) {
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
	if bk.tokens >= n {
		bk.tokens -= n
		return 0, true
	}
	wait = b.untilN(bk.tokens, n)
	if wait <= maxWait {
		bk.tokens -= n
		return wait, true
	}
	return wait, false
}

// refund gives client's bucket back the token a request took.
func (b *buckets) refund(client string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if bk, ok := b.m[client]; ok {
		bk.tokens = min(b.burst, bk.tokens+1)
	}
}

// peek reports whether client's bucket is empty at now, and how long until it holds a token.
func (b *buckets) peek(client string, now time.Time) (wait time.Duration, empty bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	bk, found := b.m[client]
	if !found {
		return 0, false
	}
	if level := bk.level(now, b.rate, b.burst); level < 1 {
		return b.until(level), true
	}
	return 0, false
}

// until is how long a bucket at level takes to hold one token.
func (b *buckets) until(level float64) time.Duration { return b.untilN(level, 1) }

// untilN is how long a bucket at level takes to hold n tokens.
func (b *buckets) untilN(level, n float64) time.Duration {
	return time.Duration(math.Ceil((n - level) / b.rate * float64(time.Second)))
}

func (bk *bucket) level(now time.Time, rate, burst float64) float64 {
	return min(burst, bk.tokens+now.Sub(bk.at).Seconds()*rate)
}
