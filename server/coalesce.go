package server

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// coalescer logs a failure once per burst: the first occurrence at once, with its error, then,
// when the same kind of failure has not recurred for quiet, one line with how many there were
// and for how long. An outage of a minute at a thousand requests a second is two lines, not
// sixty thousand.
type coalescer struct {
	logger *slog.Logger
	quiet  time.Duration
	now    func() time.Time
	after  func(time.Duration, func()) // time.AfterFunc, replaceable in tests

	mu     sync.Mutex
	bursts map[string]*burst
}

type burst struct {
	count       int
	first, last time.Time
}

func newCoalescer(logger *slog.Logger, quiet time.Duration) *coalescer {
	return &coalescer{logger: logger, quiet: quiet, now: time.Now,
		after:  func(d time.Duration, f func()) { time.AfterFunc(d, f) },
		bursts: map[string]*burst{}}
}

// failed records one failure of kind; msg and attrs are logged if it starts a burst.
func (c *coalescer) failed(ctx context.Context, level slog.Level, kind, msg string, attrs ...slog.Attr) {
	now := c.now()
	c.mu.Lock()
	b, ok := c.bursts[kind]
	if ok {
		b.count++
		b.last = now
		c.mu.Unlock()
		return
	}
	c.bursts[kind] = &burst{count: 1, first: now, last: now}
	c.mu.Unlock()
	c.logger.LogAttrs(ctx, level, msg, append(attrs, slog.String("kind", kind),
		slog.String("note", "further failures of this kind are counted and reported when they stop"))...)
	c.after(c.quiet, func() { c.flush(kind) })
}

// flush ends kind's burst if it has been quiet long enough, else checks again later.
func (c *coalescer) flush(kind string) {
	now := c.now()
	c.mu.Lock()
	b := c.bursts[kind]
	if b == nil {
		c.mu.Unlock()
		return
	}
	if wait := b.last.Add(c.quiet).Sub(now); wait > 0 {
		c.mu.Unlock()
		c.after(wait, func() { c.flush(kind) })
		return
	}
	delete(c.bursts, kind)
	c.mu.Unlock()
	c.logger.LogAttrs(context.Background(), slog.LevelInfo, "failures stopped",
		slog.String("kind", kind), slog.Int("count", b.count), slog.Duration("lasted", b.last.Sub(b.first)))
}
