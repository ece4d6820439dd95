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

// readCacheBytes bounds what readCache holds.
const readCacheBytes = 32 << 20

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
	key := "function:" + group + "/" + kind + "@" + digest
	f := s.reads.get(key)
	if f == nil {
		d, err := s.store.GetFunction(ctx, group, kind)
		if err != nil {
			return err
		}
		f, err = newCachedRead(d)
		if err != nil {
			return err
		}
		s.reads.put(key, f)
	}
	if err := s.paceDownload(r, len(f.body)); err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-cache")
	if s.signatures == nil {
		// nothing to annotate: the JSON made once
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(f.body)
		return nil
	}
	d := f.value.(store.FunctionDetail)
	d.Entries = slices.Clone(d.Entries)
	s.signatures.AnnotateFunctionVersions(ctx, d.Entries)
	return serveJSON(w, d)
}

// listProposals serves a catalog's open proposals, without their definitions, cached as
// getFunction caches a function: by the digest of the list (store.ProposalsDigest).
func (s *Server) listProposals(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	name := chi.URLParam(r, "name")
	digest, err := s.store.ProposalsDigest(ctx, name)
	if err != nil {
		return err
	}
	key := "proposals:" + name + "@" + digest
	f := s.reads.get(key)
	if f == nil {
		ps, err := s.store.ListProposals(ctx, name)
		if err != nil {
			return err
		}
		if f, err = newCachedRead(map[string]any{"proposals": ps}); err != nil {
			return err
		}
		s.reads.put(key, f)
	}
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(f.body)
	return nil
}

// cachedRead is what a read of the API returned, and its JSON.
type cachedRead struct {
	value any // never changed: a request that adds to it changes a copy
	body  []byte
}

func newCachedRead(v any) (*cachedRead, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b) // as writeJSON writes
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return &cachedRead{value: v, body: b.Bytes()}, nil
}

// size estimates the memory a cached read takes: its JSON, and its value, a few times its JSON.
func (f *cachedRead) size() int64 { return 5 * int64(len(f.body)) }

// readCache is a least-recently-used cache of reads by key, bounded in bytes.
type readCache struct {
	mu       sync.Mutex
	entries  map[string]*list.Element
	lru      *list.List
	size     int64
	maxBytes int64
}

type readEntry struct {
	key string
	f   *cachedRead
}

func newReadCache(maxBytes int64) *readCache {
	return &readCache{entries: map[string]*list.Element{}, lru: list.New(), maxBytes: maxBytes}
}

func (c *readCache) get(key string) *cachedRead {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[key]
	if !ok {
		return nil
	}
	c.lru.MoveToFront(el)
	return el.Value.(*readEntry).f
}

// put keeps f under key, unless it alone would take more than the cache.
func (c *readCache) put(key string, f *cachedRead) {
	size := f.size()
	c.mu.Lock()
	defer c.mu.Unlock()
	if size > c.maxBytes {
		return
	}
	if el, ok := c.entries[key]; ok {
		c.remove(el)
	}
	c.entries[key] = c.lru.PushFront(&readEntry{key: key, f: f})
	c.size += size
	for c.size > c.maxBytes {
		c.remove(c.lru.Back())
	}
}

func (c *readCache) remove(el *list.Element) {
	e := el.Value.(*readEntry)
	c.lru.Remove(el)
	delete(c.entries, e.key)
	c.size -= e.f.size()
}
