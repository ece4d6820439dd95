package httpx

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/dustin/go-humanize"
)

// Budget bounds an amount that requests in flight share, such as the memory the documents being
// decoded take: a request takes its share, waiting for others to give theirs back up to the wait
// it is given, and is refused (429) past it. A share that fits goes ahead of one that waits for
// more, so that small requests are not held behind a large one.
type Budget struct {
	class string
	size  int64

	mu    sync.Mutex
	used  int64
	freed chan struct{} // closed when a share is given back
}

// NewBudget returns a budget of size for what a class of work named class takes (the name
// appears in refusals). A share larger than size is taken as size: it waits for the whole budget.
func NewBudget(class string, size int64) *Budget {
	return &Budget{class: class, size: size, freed: make(chan struct{})}
}

// Size is the budget's size.
func (b *Budget) Size() int64 { return b.size }

// Take takes n of the budget, waiting up to maxWait for it. The caller calls release when the
// work is done.
func (b *Budget) Take(ctx context.Context, n int64, maxWait time.Duration) (release func(), err error) {
	if b == nil || b.size <= 0 {
		return func() {}, nil
	}
	n = min(max(n, 0), b.size)
	var timeout <-chan time.Time
	for {
		b.mu.Lock()
		if b.used+n <= b.size {
			b.used += n
			b.mu.Unlock()
			return func() { b.give(n) }, nil
		}
		freed := b.freed
		b.mu.Unlock()
		if timeout == nil {
			t := time.NewTimer(maxWait)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-freed:
		case <-timeout:
			return nil, &TooManyRequests{Message: fmt.Sprintf("the service is busy: %s of its %s for %s is taken; try again shortly",
				humanize.IBytes(uint64(b.inUse())), humanize.IBytes(uint64(b.size)), b.class), RetryAfter: time.Second}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (b *Budget) give(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
	close(b.freed)
	b.freed = make(chan struct{})
}

func (b *Budget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}
