package oci

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

type failingWriter struct{ after int }

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.after -= len(p); w.after < 0 {
		return 0, errors.New("disk full")
	}
	return len(p), nil
}

func TestStreamVerified(t *testing.T) {
	t.Parallel()
	blob := make([]byte, 2*copyBufSize+copyWriteChunk+17)
	if _, err := rand.Read(blob); err != nil {
		t.Fatal(err)
	}
	flipped := bytes.Clone(blob)
	flipped[len(flipped)/2] ^= 1
	descOf := func(b []byte) ocispec.Descriptor {
		return ocispec.Descriptor{Digest: digest.FromBytes(b), Size: int64(len(b))}
	}
	for _, tc := range []struct {
		name     string
		desc     ocispec.Descriptor
		src      io.Reader
		writeErr bool
		// wantErr is "" for success, else what the error says; mismatch says it must be a
		// *DigestMismatchError, received the digest it must name as received.
		wantErr  string
		mismatch bool
		received digest.Digest
	}{
		{name: "several buffers", desc: descOf(blob), src: bytes.NewReader(blob)},
		{name: "one byte at a time", desc: descOf(blob[:3000]), src: iotest.OneByteReader(bytes.NewReader(blob[:3000]))},
		{name: "exactly one buffer", desc: descOf(blob[:copyBufSize]), src: bytes.NewReader(blob[:copyBufSize])},
		{name: "empty", desc: descOf(nil), src: bytes.NewReader(nil)},
		{name: "altered byte", desc: descOf(blob), src: bytes.NewReader(flipped), wantErr: "digest mismatch", mismatch: true, received: digest.FromBytes(flipped)},
		{name: "longer than announced", desc: descOf(blob[:copyBufSize]), src: bytes.NewReader(blob), wantErr: "received more", mismatch: true},
		{name: "shorter than announced", desc: descOf(blob), src: bytes.NewReader(blob[:copyBufSize+5]), wantErr: "received 1048581", mismatch: true},
		{name: "read error", desc: descOf(blob), src: io.MultiReader(bytes.NewReader(blob[:10]), iotest.ErrReader(errors.New("connection reset"))), wantErr: "connection reset"},
		{name: "write error", desc: descOf(blob), src: bytes.NewReader(blob), writeErr: true, wantErr: "disk full"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var a, b bytes.Buffer
			dsts := []io.Writer{&a, &b}
			if tc.writeErr {
				dsts = append(dsts, &failingWriter{after: copyBufSize})
			}
			err := streamVerified(tc.src, tc.desc, "blob fn", dsts...)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				for _, got := range []*bytes.Buffer{&a, &b} {
					if digest.FromBytes(got.Bytes()) != tc.desc.Digest {
						t.Errorf("a writer received %d bytes that are not the blob", got.Len())
					}
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want one saying %q", err, tc.wantErr)
			}
			var dm *DigestMismatchError
			if errors.As(err, &dm) != tc.mismatch {
				t.Fatalf("err = %v: a digest mismatch is %v, want %v", err, !tc.mismatch, tc.mismatch)
			}
			if tc.received != "" && (dm.Received != tc.received || dm.Expected != tc.desc.Digest) {
				t.Errorf("the mismatch names expected %s and received %s, want %s and %s", dm.Expected, dm.Received, tc.desc.Digest, tc.received)
			}
		})
	}
}

// A pull's writer refuses the write that would pass its cap, and writes nothing of it.
func TestCapWriter(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	w := &capWriter{w: &buf, left: 10, what: "f"}
	if _, err := w.Write([]byte("123456")); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("12345")); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
	if buf.String() != "123456" {
		t.Errorf("wrote %q past the cap", buf.String())
	}
}

// FuzzCheckLayers: layer titles and sizes come from registries; a title that passes is one plain
// file name in the output directory, and the sizes that pass fit the cap.
func FuzzCheckLayers(f *testing.F) {
	for _, s := range []string{"catalog.yaml", ".bashrc", "../x", "a/b", "fn\x00", "C.yaml", "x\u202e.yaml"} {
		f.Add(s, "c.yaml", int64(10), int64(20))
	}
	f.Fuzz(func(t *testing.T, a, b string, sa, sb int64) {
		const maxBytes = 1 << 20
		layers := []ocispec.Descriptor{
			{Size: sa, Annotations: map[string]string{ocispec.AnnotationTitle: a}},
			{Size: sb, Annotations: map[string]string{ocispec.AnnotationTitle: b}},
		}
		if err := checkLayers(layers, maxBytes); err != nil {
			return
		}
		for _, title := range []string{a, b} {
			dir := "/out"
			if p := filepath.Join(dir, title); filepath.Dir(p) != dir || strings.HasPrefix(title, ".") || title != filepath.Base(p) {
				t.Fatalf("title %q passed but writes %s", title, p)
			}
		}
		if strings.EqualFold(a, b) {
			t.Fatalf("titles %q and %q passed: one file", a, b)
		}
		if sa < 0 || sb < 0 || sa+sb > maxBytes {
			t.Fatalf("sizes %d and %d passed a cap of %d", sa, sb, maxBytes)
		}
	})
}
