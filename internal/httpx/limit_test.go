package httpx

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestLimiter(t *testing.T) {
	t.Parallel()
	t.Run("concurrency", func(t *testing.T) {
		t.Parallel()
		l := NewLimiter("validate", Limit{Concurrent: 2})
		ctx := context.Background()
		r1, err1 := l.Admit(ctx, "a")
		_, err2 := l.Admit(ctx, "b")
		_, err3 := l.Admit(ctx, "c")
		if err1 != nil || err2 != nil || err3 == nil {
			t.Fatalf("admits: %v %v %v; want the third refused", err1, err2, err3)
		}
		r1()
		if _, err := l.Admit(ctx, "c"); err != nil {
			t.Errorf("a released slot was not reused: %v", err)
		}
		var tooMany *TooManyRequests
		if !errors.As(err3, &tooMany) {
			t.Errorf("refusal %T, want *TooManyRequests", err3)
		}
	})
	t.Run("a full limiter waits for a slot up to MaxWait", func(t *testing.T) {
		t.Parallel()
		l := NewLimiter("validate", Limit{Concurrent: 1, MaxWait: time.Minute})
		ctx := context.Background()
		release, err := l.Admit(ctx, "a")
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan error, 1)
		go func() {
			r, err := l.Admit(ctx, "b")
			if err == nil {
				r()
			}
			got <- err
		}()
		release()
		if err := <-got; err != nil {
			t.Errorf("a waiting request was refused after a slot freed: %v", err)
		}
		canceled, cancel := context.WithCancel(ctx)
		hold, _ := l.Admit(ctx, "a")
		cancel()
		if _, err := l.Admit(canceled, "b"); !errors.Is(err, context.Canceled) {
			t.Errorf("a waiting request whose client left: %v", err)
		}
		hold()
	})
	t.Run("buckets refill, lend within MaxWait, and forget", func(t *testing.T) {
		t.Parallel()
		b := newBuckets(2, 2)
		now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		if w, ok := b.reserve("a", now, 0); !ok || w != 0 {
			t.Fatal("the first of a burst of 2 was refused")
		}
		if w, ok := b.reserve("a", now, 0); !ok || w != 0 {
			t.Fatal("the second of a burst of 2 was refused")
		}
		if wait, ok := b.reserve("a", now, 0); ok || wait != 500*time.Millisecond {
			t.Errorf("an empty bucket: wait %s ok %v, want a refusal saying 500ms at 2/s", wait, ok)
		}
		if wait, ok := b.reserve("a", now, time.Second); !ok || wait != 500*time.Millisecond {
			t.Errorf("within MaxWait: wait %s ok %v, want 500ms granted", wait, ok)
		}
		if wait, ok := b.reserve("a", now, time.Second); !ok || wait != time.Second {
			t.Errorf("the next one waits behind it: wait %s ok %v, want 1s", wait, ok)
		}
		if _, ok := b.reserve("a", now.Add(2*time.Second), 0); !ok {
			t.Error("the bucket did not refill")
		}
		b.reserve("b", now, 0)
		b.reserve("c", now.Add(5*time.Minute), 0) // sweeps the full buckets
		if len(b.m) != 1 {
			t.Errorf("%d buckets kept after a sweep, want 1", len(b.m))
		}
	})
	t.Run("failures: exhausted is told without spending, charged only on failure", func(t *testing.T) {
		t.Parallel()
		l := NewLimiter("failed authentications", Limit{Rate: 0.001, Burst: 2})
		for range 5 {
			if _, ex := l.Exhausted("a"); ex {
				t.Fatal("Exhausted spent the budget")
			}
		}
		l.Charge("a")
		l.Charge("a")
		wait, ex := l.Exhausted("a")
		if !ex || wait <= 0 {
			t.Errorf("after the burst of failures: exhausted %v wait %s, want exhausted", ex, wait)
		}
		if _, ex := l.Exhausted("b"); ex {
			t.Error("another client is exhausted too")
		}
	})
}

// TestTakeIsAtomic: of failures that arrive at once, no more than the budget are let through,
// and the budget is not overdrawn (a client is not locked out for the ones refused); requests
// whose work turns out free (valid tokens) beyond the budget wait for their turn instead of
// being refused.
func TestTakeIsAtomic(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l := NewLimiter("failed authentications", Limit{Rate: 1, Burst: 10})
	var passed, answered atomic.Int64
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for range 1000 {
		wg.Go(func() {
			defer answered.Add(1)
			done, _, ok, err := l.Take(ctx, "a")
			if err != nil || !ok {
				return
			}
			passed.Add(1)
			<-gate // the lookups take their time, and all fail
			done(true)
		})
	}
	for passed.Load() < 10 {
		runtime.Gosched()
	}
	close(gate)
	wg.Wait()
	if n := passed.Load(); n != 10 {
		t.Fatalf("%d of 1,000 at once passed; want the burst, 10", n)
	}
	if wait, spent := l.Exhausted("a"); !spent || wait > time.Second {
		t.Fatalf("after the burst: spent %v, next in %s; want spent, next within a second", spent, wait)
	}
	// 30 valid tokens at once from another client: none refused, 10 at a time
	var ok atomic.Int64
	for range 30 {
		wg.Go(func() {
			done, _, took, err := l.Take(ctx, "b")
			if err == nil && took {
				ok.Add(1)
				done(false)
			}
		})
	}
	wg.Wait()
	if n := ok.Load(); n != 30 {
		t.Fatalf("%d of 30 valid at once went ahead; want all", n)
	}
	n := 0
	for {
		done, _, took, _ := l.Take(ctx, "b")
		if !took {
			break
		}
		done(true)
		n++
	}
	if n != 10 {
		t.Fatalf("after the valid ones %d failures were let through; want the burst, 10", n)
	}
}

func TestPerClient(t *testing.T) {
	t.Parallel()
	l := NewLimiter("validate", Limit{Concurrent: 4, PerClient: 1, MaxWait: time.Minute})
	ctx := context.Background()
	release, err := l.Hold(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if r, err := l.Hold(ctx, "b"); err != nil {
		t.Fatalf("another client was held back: %v", err)
	} else {
		r()
	}
	got := make(chan error, 1)
	go func() {
		r, err := l.Hold(ctx, "a")
		if err == nil {
			r()
		}
		got <- err
	}()
	release()
	if err := <-got; err != nil {
		t.Fatalf("a's second request, after its first ended: %v", err)
	}
	short := NewLimiter("validate", Limit{PerClient: 1, MaxWait: time.Millisecond})
	hold, _ := short.Hold(ctx, "a")
	defer hold()
	var tooMany *TooManyRequests
	if _, err := short.Hold(ctx, "a"); !errors.As(err, &tooMany) {
		t.Fatalf("a second request past MaxWait: %v, want 429", err)
	}
}

func TestBudget(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := NewBudget("decoding", 100)
	big, err := b.Take(ctx, 80, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	waiting := make(chan error, 1)
	go func() {
		r, err := b.Take(ctx, 50, time.Minute) // waits for the big one
		if err == nil {
			r()
		}
		waiting <- err
	}()
	small, err := b.Take(ctx, 20, time.Minute) // fits, and goes ahead of the one waiting
	if err != nil {
		t.Fatalf("a share that fits waited: %v", err)
	}
	small()
	big()
	if err := <-waiting; err != nil {
		t.Fatalf("the waiting share, once the budget freed: %v", err)
	}
	huge, err := b.Take(ctx, 1000, time.Minute) // more than the budget: the whole of it
	if err != nil {
		t.Fatal(err)
	}
	short := NewBudget("decoding", 100)
	all, _ := short.Take(ctx, 100, time.Millisecond)
	var tooMany *TooManyRequests
	if _, err := short.Take(ctx, 1, time.Millisecond); !errors.As(err, &tooMany) {
		t.Fatalf("past MaxWait: %v, want 429", err)
	}
	all()
	huge()
}
