package oci

import (
	"github.com/dustin/go-humanize"

	"fmt"
	"io"
	"sync"
	"time"
)

// Progress is told about blob transfers.
type Progress interface {
	// Start announces a transfer of size bytes named title. Every byte transferred is written to w;
	// done is called once with the outcome.
	Start(title string, size int64) (w io.Writer, done func(error))
}

// TerminalProgress draws a line per transfer that updates in place: meant for a terminal, which
// the caller checks. Transfers of at most Threshold bytes are not shown; they finish before a
// display would help.
type TerminalProgress struct {
	W         io.Writer
	Threshold int64
	// Interval is the least time between redraws.
	Interval time.Duration
}

// NewTerminalProgress draws on w transfers larger than 1 MiB, at most ten redraws a second.
func NewTerminalProgress(w io.Writer) *TerminalProgress {
	return &TerminalProgress{W: w, Threshold: 1 << 20, Interval: 100 * time.Millisecond}
}

// Start implements Progress.
func (p *TerminalProgress) Start(title string, size int64) (io.Writer, func(error)) {
	if size <= p.Threshold {
		return io.Discard, func(error) {}
	}
	b := &bar{out: p.W, title: title, size: size, interval: p.Interval}
	b.draw(true)
	return b, b.done
}

type bar struct {
	mu       sync.Mutex
	out      io.Writer
	title    string
	size, n  int64
	interval time.Duration
	last     time.Time
}

func (b *bar) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.n += int64(len(p))
	b.draw(false)
	return len(p), nil
}

func (b *bar) draw(force bool) {
	now := time.Now()
	if !force && now.Sub(b.last) < b.interval {
		return
	}
	b.last = now
	pct := 100 * b.n / max(b.size, 1)
	fmt.Fprintf(b.out, "\r%s  %s / %s  %3d%%", b.title, humanize.IBytes(uint64(b.n)), humanize.IBytes(uint64(b.size)), pct)
}

func (b *bar) done(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.draw(true)
	if err != nil {
		fmt.Fprintln(b.out, "  failed")
		return
	}
	fmt.Fprintln(b.out, "  done")
}
