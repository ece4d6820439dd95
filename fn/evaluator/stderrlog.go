package evaluator

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"time"
)

// Bounds of StderrLog.
const (
	maxStderrLine  = 1 << 10  // bytes of one line logged; the rest of it is dropped
	stderrRate     = 64 << 10 // bytes per second logged, on average
	stderrBurst    = 256 << 10
	stderrLogLevel = slog.LevelInfo
)

// StderrLog turns what functions write on standard error outside of any one call (a function
// server's own messages) into log records: one per line, the line a string attribute that the
// handler escapes (a function cannot write a log line of its own, or forge one), each cut at 1 KiB,
// and at most 64 KiB a second on average; what is dropped is counted in the next record.
// A call's own standard error is not written here: it travels in the call's answer.
type StderrLog struct {
	logger *slog.Logger

	mu      sync.Mutex
	line    []byte
	cut     int // bytes of the current line past maxStderrLine
	tokens  float64
	last    time.Time
	dropped int
}

// NewStderrLog returns a StderrLog writing to logger.
func NewStderrLog(logger *slog.Logger) *StderrLog {
	return &StderrLog{logger: logger, tokens: stderrBurst}
}

// Write logs each complete line of p; it never fails.
func (l *StderrLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if room := maxStderrLine - len(l.line); room > 0 {
			keep := min(room, len(chunk))
			l.line = append(l.line, chunk[:keep]...)
			l.cut += len(chunk) - keep
		} else {
			l.cut += len(chunk)
		}
		if i < 0 {
			break
		}
		l.emit()
		p = p[i+1:]
	}
	return n, nil
}

// emit logs the line gathered, if the rate allows.
func (l *StderrLog) emit() {
	now := time.Now()
	if !l.last.IsZero() {
		l.tokens = min(stderrBurst, l.tokens+now.Sub(l.last).Seconds()*stderrRate)
	}
	l.last = now
	cost := float64(len(l.line) + l.cut)
	if l.tokens < cost {
		l.dropped++
	} else {
		l.tokens -= cost
		attrs := []slog.Attr{slog.String("line", string(l.line))}
		if l.cut > 0 {
			attrs = append(attrs, slog.Int("cut_bytes", l.cut))
		}
		if l.dropped > 0 {
			attrs = append(attrs, slog.Int("lines_dropped_before", l.dropped))
			l.dropped = 0
		}
		l.logger.LogAttrs(context.Background(), stderrLogLevel, "function stderr", attrs...)
	}
	l.line, l.cut = l.line[:0], 0
}
