// Package outbuf holds what a function writes on standard output, up to a known limit, outside the
// Go heap where the system allows it.
//
// A function's output is read whole before anything of it is used (its results, which decide
// whether it is printed at all, come after its items), and it may be as large as the limit
// (256 MiB). Held in the heap, that much live data lets the garbage collector grow the heap to
// twice it before it collects (GOGC=100), so the work done on the output afterwards, item by
// item, would cost as much again; and growing a slice to that size copies it, the old and the
// new one both resident at the last doubling. A private anonymous mapping of the limit costs
// only the pages written, is never copied, and is not heap: the collector paces itself on what
// the run allocates besides.
package outbuf

import (
	"fmt"
	"io"
)

// Buffer collects bytes up to its limit. Its zero value is not usable: call New. Bytes stays
// valid until Release; nothing that outlives the Buffer may keep a slice of it (strings read
// from it must be copies).
type Buffer struct {
	data []byte // len: what was written; cap: the limit
	free func([]byte)
}

// New returns an empty Buffer that takes at most limit bytes: mapped memory where the system
// allows (only the pages written become resident), else a heap slice grown as written.
func New(limit int) *Buffer {
	if data, free, ok := mapped(limit); ok {
		return &Buffer{data: data[:0], free: free}
	}
	return &Buffer{}
}

// Write appends p; past the limit of a mapped buffer it writes nothing and fails (the caller
// bounds what it writes: see proc's limit).
func (b *Buffer) Write(p []byte) (int, error) {
	if b.free != nil && len(p) > cap(b.data)-len(b.data) {
		return 0, fmt.Errorf("output buffer: %w", io.ErrShortBuffer)
	}
	b.data = append(b.data, p...)
	return len(p), nil
}

// Bytes is what was written.
func (b *Buffer) Bytes() []byte { return b.data }

// Len is how many bytes were written.
func (b *Buffer) Len() int { return len(b.data) }

// Release gives the memory back; the Buffer and every slice of it must not be used afterwards.
// It may be called more than once.
func (b *Buffer) Release() {
	if b.free != nil {
		b.free(b.data[:cap(b.data)])
		b.free = nil
	}
	b.data = nil
}
