package outbuf

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

func TestBuffer(t *testing.T) {
	t.Parallel()
	b := New(1 << 20)
	defer b.Release()
	want := bytes.Repeat([]byte("0123456789abcdef"), 1<<14) // 256 KiB, written in pieces
	for p := want; len(p) > 0; p = p[min(len(p), 1000):] {
		if n, err := b.Write(p[:min(len(p), 1000)]); err != nil || n != min(len(p), 1000) {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	if !bytes.Equal(b.Bytes(), want) || b.Len() != len(want) {
		t.Fatalf("Bytes: %d bytes, want %d", b.Len(), len(want))
	}
	b.Release()
	b.Release()
	if b.Len() != 0 {
		t.Errorf("Len after Release = %d", b.Len())
	}
}

// A mapped buffer holds its limit and no more; a heap one (where nothing is mapped) is bounded
// by its writer.
func TestBufferLimit(t *testing.T) {
	t.Parallel()
	b := New(4096)
	defer b.Release()
	if _, err := b.Write(make([]byte, 4096)); err != nil {
		t.Fatal(err)
	}
	_, err := b.Write([]byte{1})
	if b.free != nil && !errors.Is(err, io.ErrShortBuffer) {
		t.Errorf("a write past the limit of a mapped buffer: %v, want io.ErrShortBuffer", err)
	}
	if b.free == nil && err != nil {
		t.Errorf("a heap buffer refused a write: %v", err)
	}
}
