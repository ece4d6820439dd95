package server

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestDeadlineContext: the request's deadline context holds no timer until something waits on
// it, and then behaves as context.WithDeadline: done at the deadline, with its parent, or when the
// request ends, and its children with it.
func TestDeadlineContext(t *testing.T) {
	t.Parallel()
	past := func() *deadlineContext {
		return &deadlineContext{Context: context.Background(), deadline: time.Now().Add(-time.Second)}
	}
	future := func(parent context.Context) *deadlineContext {
		return &deadlineContext{Context: parent, deadline: time.Now().Add(time.Hour)}
	}
	type key struct{}
	tests := []struct {
		name string
		ctx  func() (context.Context, *deadlineContext)
		want error // Err once Done is closed; nil: Done must stay open
	}{
		{"deadline passed, asked Err first", func() (context.Context, *deadlineContext) { c := past(); return c, c }, context.DeadlineExceeded},
		{"deadline passed, a child", func() (context.Context, *deadlineContext) {
			c := past()
			child, cancel := context.WithCancel(c)
			t.Cleanup(cancel)
			return child, c
		}, context.DeadlineExceeded},
		{"deadline to come", func() (context.Context, *deadlineContext) { c := future(context.Background()); return c, c }, nil},
		{"parent canceled", func() (context.Context, *deadlineContext) {
			parent, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
			cancel()
			c := future(parent)
			return c, c
		}, context.Canceled},
		{"request ended, a child made before", func() (context.Context, *deadlineContext) {
			c := future(context.Background())
			child := context.WithValue(c, key{}, "w") // no wait yet: no timer
			if c.timed.Load() != nil {
				t.Error("a value context started the timer")
			}
			c.stop()
			return child, c
		}, context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, c := tt.ctx()
			if d, ok := ctx.Deadline(); !ok || !d.Equal(c.deadline) {
				t.Errorf("Deadline = %v, %v; want %v", d, ok, c.deadline)
			}
			if tt.name == "deadline passed, asked Err first" {
				if err := ctx.Err(); !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("Err before Done = %v", err)
				}
			}
			// each ending is synchronous, as context.WithDeadline's: no waiting needed
			select {
			case <-ctx.Done():
				if tt.want == nil {
					t.Fatalf("done early: %v", ctx.Err())
				}
				if err := ctx.Err(); !errors.Is(err, tt.want) {
					t.Errorf("Err = %v, want %v", err, tt.want)
				}
			default:
				if tt.want != nil {
					t.Fatalf("not done, want %v", tt.want)
				}
			}
			c.stop()
			<-ctx.Done() // the request's end ends it, whatever came first
		})
	}
}

// TestDeadlineContextNoTimer: serving without waiting on the context starts no timer, and values
// pass through.
func TestDeadlineContextNoTimer(t *testing.T) {
	t.Parallel()
	type key struct{}
	c := &deadlineContext{Context: context.WithValue(context.Background(), key{}, "v"), deadline: time.Now().Add(time.Hour)}
	if got := c.Value(key{}); got != "v" {
		t.Errorf("Value = %v", got)
	}
	c.stop()
	if c.timed.Load() != nil {
		t.Error("a timer was started")
	}
	if c.Err() == nil {
		t.Error("Err after the request ended = nil")
	}
	if got := c.Value(key{}); got != "v" {
		t.Errorf("Value once started = %v", got)
	}
}
