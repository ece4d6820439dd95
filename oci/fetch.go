package oci

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote"
)

// maxManifestBytes bounds what is read of a manifest or index: real ones are a few KB, and the
// whole document is held in memory to be parsed.
const maxManifestBytes = 4 << 20

// fetchManifest returns the verified bytes of the manifest or index ref names. A reference by
// digest is served from the cache when the cache has it, without touching the network; everything
// else is fetched, checked against the digest asked for (or, for a tag, the one the registry
// announced) and then cached.
func (c *Client) fetchManifest(ctx context.Context, repo *remote.Repository, ref Reference) (ocispec.Descriptor, []byte, error) {
	if ref.target() == "" {
		return ocispec.Descriptor{}, nil, fmt.Errorf("%w %q: it names no tag or digest", ErrInvalidReference, ref.String())
	}
	if ref.Digest != "" {
		if desc, raw, ok := c.cachedManifest(ctx, ref.Digest); ok {
			return desc, raw, nil
		}
	}
	desc, rc, err := repo.FetchReference(ctx, ref.target())
	if err != nil {
		return ocispec.Descriptor{}, nil, registryErr(err)
	}
	defer rc.Close()
	if ref.Digest != "" {
		desc.Digest = ref.Digest
	}
	raw, err := readVerified(rc, desc, "manifest "+ref.String())
	if err != nil {
		return ocispec.Descriptor{}, nil, err
	}
	return c.keepManifest(ctx, desc, raw)
}

// fetchManifestByDesc is fetchManifest for a manifest named by a descriptor, such as an entry of an
// index or a referrer.
func (c *Client) fetchManifestByDesc(ctx context.Context, repo *remote.Repository, desc ocispec.Descriptor) (ocispec.Descriptor, []byte, error) {
	if d, raw, ok := c.cachedManifest(ctx, desc.Digest); ok {
		return d, raw, nil
	}
	rc, err := repo.Fetch(ctx, desc)
	if err != nil {
		return ocispec.Descriptor{}, nil, registryErr(err)
	}
	defer rc.Close()
	raw, err := readVerified(rc, desc, "manifest "+desc.Digest.String())
	if err != nil {
		return ocispec.Descriptor{}, nil, err
	}
	return c.keepManifest(ctx, desc, raw)
}

func readVerified(r io.Reader, desc ocispec.Descriptor, what string) ([]byte, error) {
	if desc.Size > maxManifestBytes {
		return nil, fmt.Errorf("%s is %d bytes, above the %d-byte limit for manifests", what, desc.Size, maxManifestBytes)
	}
	if err := desc.Digest.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	vr := newVerifyingReader(r, desc, what)
	raw, err := io.ReadAll(vr)
	if f := vr.failure(); f != nil {
		return nil, f
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	return raw, nil
}

// keepManifest fixes the descriptor's media type from the document itself and caches the bytes.
func (c *Client) keepManifest(ctx context.Context, desc ocispec.Descriptor, raw []byte) (ocispec.Descriptor, []byte, error) {
	if mt := manifestMediaType(raw); mt != "" {
		desc.MediaType = mt
	}
	if c.opts.Cache != nil {
		if err := c.opts.Cache.push(ctx, plain(desc), bytes.NewReader(raw)); err != nil {
			return ocispec.Descriptor{}, nil, fmt.Errorf("cache %s: %w", desc.Digest, err)
		}
	}
	return plain(desc), raw, nil
}

func (c *Client) cachedManifest(ctx context.Context, d digest.Digest) (ocispec.Descriptor, []byte, bool) {
	if c.opts.Cache == nil || !c.opts.Cache.has(ctx, d) {
		return ocispec.Descriptor{}, nil, false
	}
	raw, err := c.opts.Cache.readAll(ctx, d, maxManifestBytes)
	if err != nil {
		return ocispec.Descriptor{}, nil, false
	}
	return ocispec.Descriptor{MediaType: manifestMediaType(raw), Digest: d, Size: int64(len(raw))}, raw, true
}

// manifestMediaType reads the mediaType a manifest or index declares, guessing from its shape when
// it declares none (the field is optional in OCI 1.0).
func manifestMediaType(raw []byte) string {
	var m struct {
		MediaType string            `json:"mediaType"`
		Manifests []json.RawMessage `json:"manifests"`
		Layers    []json.RawMessage `json:"layers"`
	}
	if json.Unmarshal(raw, &m) != nil {
		return ""
	}
	switch {
	case m.MediaType != "":
		return m.MediaType
	case m.Manifests != nil:
		return ocispec.MediaTypeImageIndex
	case m.Layers != nil:
		return ocispec.MediaTypeImageManifest
	}
	return ""
}

// sink receives a blob's bytes. received hashes what it got; it is called only to explain a
// mismatch, since the bytes are hashed once on the way in and hashing is the expensive part of a
// large pull.
type sink interface {
	io.Writer
	received() (digest.Digest, int64, error)
}

// fileSink writes to a file opened for reading and writing. The writes happen in a goroutine of
// their own, so that writing the output file overlaps with hashing the same bytes into the cache
// instead of adding to it: on a pull of a large binary that is most of the difference from a
// client without a cache. Call wait before using the file.
type fileSink struct {
	f       *os.File
	n       int64
	chunks  chan []byte
	free    chan []byte
	done    chan struct{}
	err     error // of the writing goroutine; read after done is closed
	started bool
}

// asyncChunks bounds how far the writer may lag behind: 32 chunks of oras-go's 32 KiB buffers.
const asyncChunks = 32

func (s *fileSink) Write(p []byte) (int, error) {
	if !s.started {
		s.start()
	}
	select {
	case <-s.done:
		return 0, s.err
	default:
	}
	var buf []byte
	select {
	case buf = <-s.free:
	default:
	}
	buf = append(buf[:0], p...)
	select {
	case s.chunks <- buf:
	case <-s.done:
		return 0, s.err
	}
	s.n += int64(len(p))
	return len(p), nil
}

func (s *fileSink) start() {
	s.started = true
	s.chunks, s.free, s.done = make(chan []byte, asyncChunks), make(chan []byte, asyncChunks), make(chan struct{})
	go func() {
		defer close(s.done)
		for buf := range s.chunks {
			if _, err := s.f.Write(buf); err != nil {
				s.err = err
				for range s.chunks { // drain, so that Write never blocks on a dead writer
				}
				return
			}
			select {
			case s.free <- buf:
			default:
			}
		}
	}()
}

// wait flushes the writes and returns the first error.
func (s *fileSink) wait() error {
	if !s.started {
		return nil
	}
	close(s.chunks)
	<-s.done
	s.started = false
	return s.err
}

func (s *fileSink) received() (digest.Digest, int64, error) {
	if err := s.wait(); err != nil {
		return "", s.n, err
	}
	if _, err := s.f.Seek(0, io.SeekStart); err != nil {
		return "", s.n, err
	}
	d, err := digest.Canonical.FromReader(s.f)
	return d, s.n, err
}

type bufferSink struct{ bytes.Buffer }

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func (s *bufferSink) received() (digest.Digest, int64, error) {
	return digest.FromBytes(s.Bytes()), int64(s.Len()), nil
}

// copyBlob writes the bytes of desc to dst: from the cache when it has them, else from the
// registry, verified while they stream and cached on the way. On error, dst may have received
// unverified bytes: callers write to a temporary file and discard it.
//
// On the way into the cache, the bytes are checked by oras-go's verifying reader as the OCI
// layout ingests them, and nowhere else: one hash per blob. Without a cache, verifyingReader does
// the same.
func (c *Client) copyBlob(ctx context.Context, repo *remote.Repository, desc ocispec.Descriptor, title string, dst sink) (fromCache bool, err error) {
	cache := c.opts.Cache
	if cache != nil && cache.has(ctx, desc.Digest) {
		rc, err := cache.open(ctx, desc)
		if err != nil {
			return false, err
		}
		defer rc.Close()
		var w io.Writer = dst
		if fs, ok := dst.(*fileSink); ok {
			// File to file, so that io.Copy uses copy_file_range: the kernel copies (or, on
			// file systems that can, shares) the pages without a pass through user space.
			w = fs.f
		}
		if _, err := io.Copy(w, rc); err != nil {
			return false, fmt.Errorf("copy %s from cache: %w", desc.Digest, err)
		}
		return true, nil
	}
	if err := desc.Digest.Validate(); err != nil {
		return false, fmt.Errorf("blob %s: %w", desc.Digest, err)
	}
	rc, err := repo.Fetch(ctx, desc)
	if err != nil {
		return false, registryErr(err)
	}
	defer rc.Close()
	var src io.Reader = rc
	done := func(error) {}
	if c.opts.Progress != nil {
		var pw io.Writer
		pw, done = c.opts.Progress.Start(title, desc.Size)
		src = io.TeeReader(rc, pw)
	}
	if cache != nil {
		cw := &countingWriter{w: dst}
		err = cache.push(ctx, desc, io.TeeReader(src, cw))
		err = explainMismatch(err, desc, "blob "+title, dst)
		if err == nil && cw.n == 0 && desc.Size > 0 {
			// Another process cached the blob between our look and our push, and oras-go
			// returned without reading the stream: serve the copy that is there now.
			done(nil)
			return c.copyBlob(ctx, repo, desc, title, dst)
		}
	} else {
		vr := newVerifyingReader(src, desc, "blob "+title)
		_, err = io.Copy(dst, vr)
		if f := vr.failure(); f != nil {
			err = f
		}
	}
	done(err)
	if err != nil {
		return false, fmt.Errorf("fetch %s: %w", desc.Digest, err)
	}
	return false, nil
}

// explainMismatch turns oras-go's verification errors (which say only "mismatched digest") into a
// DigestMismatchError naming the digest that was expected and the one received.
func explainMismatch(err error, desc ocispec.Descriptor, what string, got sink) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, content.ErrTrailingData):
		return &DigestMismatchError{What: what, Expected: desc.Digest, ExpectedSize: desc.Size, ReceivedSize: desc.Size + 1}
	case errors.Is(err, io.ErrUnexpectedEOF):
		_, n, _ := got.received()
		return &DigestMismatchError{What: what, Expected: desc.Digest, ExpectedSize: desc.Size, ReceivedSize: n}
	case errors.Is(err, content.ErrMismatchedDigest):
		d, _, rerr := got.received()
		if rerr != nil {
			return fmt.Errorf("%s: %w: expected %s (%v)", what, ErrDigestMismatch, desc.Digest, rerr)
		}
		return &DigestMismatchError{What: what, Expected: desc.Digest, Received: d}
	}
	return err
}

// readBlob returns the verified bytes of a blob of at most limit bytes.
func (c *Client) readBlob(ctx context.Context, repo *remote.Repository, desc ocispec.Descriptor, limit int64) ([]byte, error) {
	if desc.Size > limit || desc.Size < 0 {
		return nil, fmt.Errorf("blob %s is %d bytes, above the %d-byte limit", desc.Digest, desc.Size, limit)
	}
	var buf bufferSink
	buf.Grow(int(desc.Size))
	if _, err := c.copyBlob(ctx, repo, desc, desc.Digest.String(), &buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// registryErr maps oras-go's not-found to ErrNotFound. oras-go's message only repeats the
// reference or digest, which callers already name when they wrap the error.
func registryErr(err error) error {
	if errors.Is(err, errdef.ErrNotFound) {
		return ErrNotFound
	}
	return err
}

// subject is a manifest an operation acts on: where it lives and what it is.
type subject struct {
	ref  Reference // pinned to desc's digest
	repo *remote.Repository
	desc ocispec.Descriptor
}

// lookup parses ref and fetches, verified, the manifest it names.
func (c *Client) lookup(ctx context.Context, refStr string) (subject, error) {
	ref, err := ParseReference(refStr)
	if err != nil {
		return subject{}, err
	}
	repo := c.repository(ref)
	desc, _, err := c.fetchManifest(ctx, repo, ref)
	if err != nil {
		return subject{}, err
	}
	return subject{ref: ref.WithDigest(desc.Digest), repo: repo, desc: desc}, nil
}
