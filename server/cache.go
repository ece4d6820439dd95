package server

import (
	"container/list"
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/krm-catalog/krm-catalog/store"
)

// ContentCache holds prepared catalog.yaml and definition.yaml responses in memory, so that serving
// them does not query PostgreSQL for content the replica already holds.
//
// Pinned catalog versions never change and are cached as they are. "Latest" catalogs and
// definitions change when anyone publishes, on any replica: they are cached only while a LISTEN on
// store.NotifyChannel is connected, every publish's notification drops the entries of its subject,
// and a fill that raced with a notification is discarded (see ticket). When the listener loses its
// connection, everything mutable is dropped and not cached again until it is back.
type ContentCache struct {
	mu       sync.Mutex
	entries  map[string]*list.Element // key → element of lru holding *cacheEntry
	lru      *list.List
	size     int64
	maxBytes int64
	gen      map[string]uint64 // subject → invalidations seen
	epoch    uint64            // bumped when the listener (re)connects or drops
	live     bool              // the listener is connected

	hits, misses prometheus.Counter
}

type cacheEntry struct {
	key       string
	subject   string // "catalog:NAME" or "function:GROUP/KIND"; "" for immutable content
	content   *preparedContent
	sizeBytes int64
}

// ticket records the cache state before a store read, so the result is only kept if nothing
// changed meanwhile.
type ticket struct {
	subject string
	gen     uint64
	epoch   uint64
	ok      bool
}

// NewContentCache returns a cache bounded to maxBytes of content.
func NewContentCache(maxBytes int64) *ContentCache {
	return &ContentCache{
		entries:  map[string]*list.Element{},
		lru:      list.New(),
		maxBytes: maxBytes,
		gen:      map[string]uint64{},
		hits:     prometheus.NewCounter(prometheus.CounterOpts{Name: "krm_catalog_content_cache_hits_total", Help: "catalog.yaml and definition.yaml responses served from memory."}),
		misses:   prometheus.NewCounter(prometheus.CounterOpts{Name: "krm_catalog_content_cache_misses_total", Help: "catalog.yaml and definition.yaml responses read from the database."}),
	}
}

func (c *ContentCache) register(reg prometheus.Registerer) error {
	for _, m := range []prometheus.Collector{c.hits, c.misses} {
		if err := reg.Register(m); err != nil {
			return err
		}
	}
	return nil
}

// get returns the content cached under key, or nil. The key is bytes so that a caller's buffer
// serves the lookup without a string allocated for it.
func (c *ContentCache) get(key []byte) *preparedContent {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[string(key)]
	if !ok {
		c.misses.Inc()
		return nil
	}
	c.lru.MoveToFront(el)
	c.hits.Inc()
	return el.Value.(*cacheEntry).content
}

// ticket is taken before reading content of subject ("" for immutable content) from the store.
func (c *ContentCache) ticket(subject string) ticket {
	c.mu.Lock()
	defer c.mu.Unlock()
	return ticket{subject: subject, gen: c.gen[subject], epoch: c.epoch, ok: subject == "" || c.live}
}

// put keeps content read under t, unless the subject changed since t was taken.
func (c *ContentCache) put(key string, t ticket, content *preparedContent) {
	size := content.size()
	c.mu.Lock()
	defer c.mu.Unlock()
	// an entry takes at most a quarter of the cache, or what the largest generated definition
	// takes (store.MaxDerivedBytes, and its JSON): those are kept whatever their size
	if !t.ok || size > max(c.maxBytes/4, 2*store.MaxDerivedBytes+256) || size > c.maxBytes {
		return
	}
	if t.subject != "" && (!c.live || c.epoch != t.epoch || c.gen[t.subject] != t.gen) {
		return
	}
	if el, ok := c.entries[key]; ok {
		c.remove(el)
	}
	c.entries[key] = c.lru.PushFront(&cacheEntry{key: key, subject: t.subject, content: content, sizeBytes: size})
	c.size += size
	for c.size > c.maxBytes {
		c.remove(c.lru.Back())
	}
}

func (c *ContentCache) remove(el *list.Element) {
	e := el.Value.(*cacheEntry)
	c.lru.Remove(el)
	delete(c.entries, e.key)
	c.size -= e.sizeBytes
}

// invalidate drops what is cached of a subject.
func (c *ContentCache) invalidate(subject string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen[subject]++
	for el := c.lru.Front(); el != nil; {
		next := el.Next()
		if el.Value.(*cacheEntry).subject == subject {
			c.remove(el)
		}
		el = next
	}
}

// setLive records whether the listener is connected; either way, every mutable entry is dropped,
// since notifications may have been missed.
func (c *ContentCache) setLive(live bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.live = live
	c.epoch++
	for el := c.lru.Front(); el != nil; {
		next := el.Next()
		if el.Value.(*cacheEntry).subject != "" {
			c.remove(el)
		}
		el = next
	}
}

// Subscriber follows the publishes of every replica (store.Store.Subscribe).
type Subscriber interface {
	Subscribe(ctx context.Context, fn func(store.Change)) error
}

// Listen follows publishes on every replica through sub until ctx ends, subscribing again with
// backoff when the subscription fails. A failure is logged once, and its end once, however long
// the database stays away.
func (c *ContentCache) Listen(ctx context.Context, sub Subscriber, logger *slog.Logger) {
	const minBackoff, maxBackoff = 100 * time.Millisecond, 5 * time.Second
	backoff := minBackoff
	down := false
	for ctx.Err() == nil {
		err := sub.Subscribe(ctx, func(ch store.Change) {
			if ch.Resync {
				c.setLive(true)
				if down {
					logger.InfoContext(ctx, "content cache listener connected again")
					down = false
				}
				backoff = minBackoff
				return
			}
			c.invalidate(ch.Subject)
		})
		c.setLive(false)
		if ctx.Err() != nil {
			return
		}
		if !down {
			logger.WarnContext(ctx, "content cache listener disconnected; serving from the database until it is back", slog.Any("error", err))
			down = true
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, maxBackoff)
	}
}

// Live reports whether the cache is following publishes.
func (c *ContentCache) Live() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.live
}
