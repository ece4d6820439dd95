package evaluator

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/semaphore"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Defaults of the admission bounds (Options).
const (
	DefaultMaxConcurrent  = 4
	DefaultMemoryBudget   = 512 << 20
	DefaultMaxQueuedBytes = 256 << 20
)

// callCostFactor and callCostBase estimate what a call holds in memory from the size of its
// ResourceList: the request itself, its decoded tree, the list sent to the function, the function's
// output and its decoded tree, and the response. BenchmarkCallCost measures what a call allocates
// in all, about 25 bytes per byte of request, an upper bound on what it holds at once.
const (
	callCostFactor = 32
	callCostBase   = 256 << 10
)

// callCost is the memory a call reserves before its list is decoded. A list dense in nodes can
// cost more than its bytes suggest; the readers' node budget bounds that (nodeBudget).
func callCost(size int, budget int64) int64 {
	return min(callCostBase+int64(size)*callCostFactor, budget)
}

// admission decides when a call may start: at most MaxConcurrent calls of one function run at once,
// and the calls in flight hold at most MemoryBudget bytes (callCost each, from the size of their
// request). A call that cannot start waits, in arrival order, until it can or its deadline passes;
// the requests waiting hold at most MaxQueuedBytes, past which a call is refused at once. The queue
// is bounded by what it holds, not by a count: a render's burst of small calls waits, a flood of
// large ones is refused.
type admission struct {
	memory        *semaphore.Weighted
	budget        int64
	maxQueued     int64
	maxConcurrent int64
	queued        atomic.Int64 // bytes of the requests waiting
	reserved      atomic.Int64 // bytes reserved by the calls admitted
	metrics       *Metrics

	mu    sync.Mutex
	slots map[string]*semaphore.Weighted // by function label: only what the catalogs list, and the fixed routes
}

func newAdmission(o Options) *admission {
	return &admission{
		memory: semaphore.NewWeighted(o.MemoryBudget), budget: o.MemoryBudget,
		maxQueued: o.MaxQueuedBytes, maxConcurrent: int64(o.MaxConcurrent),
		metrics: o.Metrics, slots: map[string]*semaphore.Weighted{},
	}
}

// admit waits for a slot of function (none when function is "") and for cost bytes of the memory
// budget. size is what the waiting request holds.
func (a *admission) admit(ctx context.Context, function string, size int, cost int64) (release func(), err error) {
	var slot *semaphore.Weighted
	if function != "" {
		a.mu.Lock()
		slot = a.slots[function]
		if slot == nil {
			slot = semaphore.NewWeighted(a.maxConcurrent)
			a.slots[function] = slot
		}
		a.mu.Unlock()
	}
	done := func() {
		a.memory.Release(cost)
		a.metrics.setReserved(a.reserved.Add(-cost))
		if slot != nil {
			slot.Release(1)
		}
	}
	if slot == nil || slot.TryAcquire(1) {
		if a.memory.TryAcquire(cost) {
			a.metrics.setReserved(a.reserved.Add(cost))
			return done, nil
		}
		if slot != nil {
			slot.Release(1)
		}
	}

	// wait, within the queue's bound
	if q := a.queued.Add(int64(size)); q > a.maxQueued {
		a.metrics.setQueued(a.queued.Add(-int64(size)))
		return nil, status.Errorf(codes.ResourceExhausted, "%d bytes of requests already wait for a slot (--max-queued-bytes %d)", q-int64(size), a.maxQueued)
	} else {
		a.metrics.setQueued(q)
	}
	defer func() { a.metrics.setQueued(a.queued.Add(-int64(size))) }()
	if slot != nil {
		if err := slot.Acquire(ctx, 1); err != nil {
			return nil, callError(ctx, codes.DeadlineExceeded, fmt.Errorf("waiting for a slot of %s: %w", function, err))
		}
	}
	if err := a.memory.Acquire(ctx, cost); err != nil {
		if slot != nil {
			slot.Release(1)
		}
		return nil, callError(ctx, codes.DeadlineExceeded, fmt.Errorf("waiting for %d bytes of the memory budget: %w", cost, err))
	}
	a.metrics.setReserved(a.reserved.Add(cost))
	return done, nil
}
