package server

import (
	"bytes"
	"container/list"
	"encoding/json"
	"net/http"
	"slices"
	"sync"

	"github.com/go-chi/chi/v5"

	"github.com/krm-catalog/krm-catalog/store"
)

// functionCacheBytes bounds what functionCache holds, by the size of the functions' JSON.
const functionCacheBytes = 32 << 20

// getFunction serves a function with every current entry. The function is read once a change:
// it is cached by the digest of its entries (store.FunctionDigest), which a publish of any of them
// changes; each request asks only for the digest. What is cached is bounded at publish
// (store.MaxDerivedBytes) and here by functionCacheBytes.
func (s *Server) getFunction(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	group, kind := chi.URLParam(r, "group"), chi.URLParam(r, "kind")
	digest, err := s.store.FunctionDigest(ctx, group, kind)
	if err != nil {
		return err
	}
	key := group + "/" + kind + "@" + digest
	f := s.functions.get(key)
	if f == nil {
		d, err := s.store.GetFunction(ctx, group, kind)
		if err != nil {
			return err
		}
		f, err = newCachedFunction(d)
		if err != nil {
			return err
		}
		s.functions.put(key, f)
	}
	w.Header().Set("Cache-Control", "no-cache")
	if s.signatures == nil {
		// nothing to annotate: the JSON made once
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(f.body)
		return nil
	}
	d := f.detail
	d.Entries = slices.Clone(d.Entries)
	s.signatures.AnnotateFunctionVersions(ctx, d.Entries)
	return serveJSON(w, d)
}

// cachedFunction is a function read from the store and its JSON without signatures.
type cachedFunction struct {
	detail store.FunctionDetail // never changed: a request annotates a copy of its entries
	body   []byte
}

func newCachedFunction(d store.FunctionDetail) (*cachedFunction, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b) // as writeJSON writes
	enc.SetEscapeHTML(false)
	if err := enc.Encode(d); err != nil {
		return nil, err
	}
	return &cachedFunction{detail: d, body: b.Bytes()}, nil
}

// size estimates the memory a cached function takes: its JSON, and its decoded entries, a few
// times their JSON.
func (f *cachedFunction) size() int64 { return 5 * int64(len(f.body)) }

// functionCache is a least-recently-used cache of functions by key, bounded in bytes.
type functionCache struct {
	mu       sync.Mutex
	entries  map[string]*list.Element
	lru      *list.List
	size     int64
	maxBytes int64
}

type functionEntry struct {
	key string
	f   *cachedFunction
}

func newFunctionCache(maxBytes int64) *functionCache {
	return &functionCache{entries: map[string]*list.Element{}, lru: list.New(), maxBytes: maxBytes}
}

func (c *functionCache) get(key string) *cachedFunction {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[key]
	if !ok {
		return nil
	}
	c.lru.MoveToFront(el)
	return el.Value.(*functionEntry).f
}

// put keeps f under key, unless it alone would take more than the cache.
func (c *functionCache) put(key string, f *cachedFunction) {
	size := f.size()
	c.mu.Lock()
	defer c.mu.Unlock()
	if size > c.maxBytes {
		return
	}
	if el, ok := c.entries[key]; ok {
		c.remove(el)
	}
	c.entries[key] = c.lru.PushFront(&functionEntry{key: key, f: f})
	c.size += size
	for c.size > c.maxBytes {
		c.remove(c.lru.Back())
	}
}

func (c *functionCache) remove(el *list.Element) {
	e := el.Value.(*functionEntry)
	c.lru.Remove(el)
	delete(c.entries, e.key)
	c.size -= e.f.size()
}
