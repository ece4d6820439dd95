package web

import (
	"container/list"
	"context"
	"errors"
	"sync"
)

// DefaultCatalogCacheBytes is the default bound on the catalog cache: the function lists of a few
// large catalogs (a 9,000-function catalog's list is about 3 MiB).
const DefaultCatalogCacheBytes = 32 << 20

// catalogCache keeps the function lists of catalog versions, keyed by the stored version (name,
// version and content digest), so that a catalog page decodes its catalog once, not once per
// request: decoding a 4 MiB catalog takes most of a second of a core and hundreds of MiB. Versions
// are immutable, so an entry never goes stale; the least recently used give way past the bound.
// Requests for a list being decoded wait for that decode rather than start their own, and one
// list is decoded at a time, so a flood of pages of different large catalogs costs one decode's
// memory at a time.
type catalogCache struct {
	max    int
	decode chan struct{} // one decode at a time

	mu       sync.Mutex
	size     int
	lru      *list.List // of *catalogEntry, most recent first
	byKey    map[string]*list.Element
	inFlight map[string]*decoding
}

type catalogEntry struct {
	key   string
	fns   []catalogFunction
	bytes int
}

type decoding struct {
	done chan struct{}
	fns  []catalogFunction
	err  error
}

func newCatalogCache(maxBytes int) *catalogCache {
	return &catalogCache{max: maxBytes, decode: make(chan struct{}, 1), lru: list.New(),
		byKey: map[string]*list.Element{}, inFlight: map[string]*decoding{}}
}

// functions returns the list under key, calling load (once, however many ask at once) when the
// cache does not hold it.
func (c *catalogCache) functions(ctx context.Context, key string, load func(context.Context) ([]catalogFunction, error)) ([]catalogFunction, error) {
	for {
		fns, err := c.once(ctx, key, load)
		// a decode that ended because its own request left is tried again by one still here
		if err != nil && ctx.Err() == nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
			continue
		}
		return fns, err
	}
}

func (c *catalogCache) once(ctx context.Context, key string, load func(context.Context) ([]catalogFunction, error)) ([]catalogFunction, error) {
	c.mu.Lock()
	if e, ok := c.byKey[key]; ok {
		c.lru.MoveToFront(e)
		c.mu.Unlock()
		return e.Value.(*catalogEntry).fns, nil
	}
	if d, ok := c.inFlight[key]; ok {
		c.mu.Unlock()
		select {
		case <-d.done:
			return d.fns, d.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	d := &decoding{done: make(chan struct{})}
	c.inFlight[key] = d
	c.mu.Unlock()

	d.fns, d.err = c.load(ctx, load)
	c.mu.Lock()
	delete(c.inFlight, key)
	if d.err == nil {
		c.add(key, d.fns)
	}
	c.mu.Unlock()
	close(d.done)
	return d.fns, d.err
}

func (c *catalogCache) load(ctx context.Context, load func(context.Context) ([]catalogFunction, error)) ([]catalogFunction, error) {
	select {
	case c.decode <- struct{}{}:
		defer func() { <-c.decode }()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return load(ctx)
}

// add stores a list, evicting the least recently used past the bound. A list larger than the
// whole bound is served but not kept. The caller holds mu.
func (c *catalogCache) add(key string, fns []catalogFunction) {
	n := sizeOf(fns)
	if n > c.max {
		return
	}
	c.byKey[key] = c.lru.PushFront(&catalogEntry{key: key, fns: fns, bytes: n})
	c.size += n
	for c.size > c.max {
		e := c.lru.Back().Value.(*catalogEntry)
		c.lru.Remove(c.lru.Back())
		delete(c.byKey, e.key)
		c.size -= e.bytes
	}
}

// sizeOf estimates the memory a list holds.
func sizeOf(fns []catalogFunction) int {
	n := 0
	for _, f := range fns {
		n += 160 + len(f.Group) + len(f.Kind) + len(f.Description) + len(f.URL)
		for _, v := range f.Versions {
			n += 16 + len(v)
		}
		for _, r := range f.Runtimes {
			n += 16 + len(r)
		}
	}
	return n
}
