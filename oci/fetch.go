package oci

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
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

// copyBlob writes the bytes of desc to dst: from the cache when it has them, else from the
// registry, verified while they stream and cached on the way. On error, dst may have received
// unverified bytes: callers write to a temporary file and discard it.
func (c *Client) copyBlob(ctx context.Context, repo *remote.Repository, desc ocispec.Descriptor, title string, dst io.Writer) (fromCache bool, err error) {
	if err := desc.Digest.Validate(); err != nil {
		return false, fmt.Errorf("blob %s: %w", desc.Digest, err)
	}
	if desc.Size < 0 {
		return false, fmt.Errorf("blob %s: negative size %d", desc.Digest, desc.Size)
	}
	cache := c.opts.Cache
	if cache != nil {
		ok, err := cache.copyTo(desc, dst)
		if err != nil || ok {
			return ok, err
		}
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
	err = c.fetchInto(src, desc, "blob "+title, dst)
	done(err)
	if err != nil {
		return false, fmt.Errorf("fetch %s: %w", desc.Digest, err)
	}
	return false, nil
}

// fetchInto streams src, verified, into dst and, when there is a cache, into a temporary file of the
// cache at the same time: the bytes are read and hashed once, however many copies are written. The
// cache file gets its name only once the digest matched.
func (c *Client) fetchInto(src io.Reader, desc ocispec.Descriptor, what string, dst io.Writer) error {
	if c.opts.Cache == nil {
		return streamVerified(src, desc, what, dst)
	}
	pending, err := c.opts.Cache.ingest(desc)
	if err != nil {
		return err
	}
	if err := streamVerified(src, desc, what, pending, dst); err != nil {
		pending.discard()
		return err
	}
	return pending.commit()
}

// Buffers a blob streams through. Reads, hashing and hand-overs to the writer go 1 MiB at a time;
// io.Copy's 32 KiB would mean 1,600 of each for a 50 MB binary. Writes go 64 KiB at a time: on the
// benchmark machine (Linux 6.18, ext4, a VM), writing 50 MB to a new file took 10-12 ms in writes
// of 32 or 64 KiB and 23-29 ms in writes of 128 KiB to 1 MiB (the kernel backs larger writes with
// larger page-cache folios, which seem costlier to allocate there); a pull writing 1 MiB at a time
// used twice the CPU.
const (
	copyBufSize    = 1 << 20
	copyBufs       = 4 // the reader can run this many buffers ahead of the writer
	copyWriteChunk = 64 << 10
)

var copyBufPool = sync.Pool{New: func() any { b := make([]byte, copyBufSize); return &b }}

// streamVerified copies src, which must be the blob desc names, to every dst. It returns a
// *DigestMismatchError naming the expected and the received digest (or sizes) when the bytes are
// not that blob, after having written them: the writers must be temporary files (or buffers) that
// the caller discards on error and names only on success.
//
// The calling goroutine reads and hashes; another writes, a buffer behind. Hashing is the larger
// half of the work and writing two files the other, so on two cores they overlap instead of adding
// up.
func streamVerified(src io.Reader, desc ocispec.Descriptor, what string, dsts ...io.Writer) error {
	vr := newVerifyingReader(src, desc, what)
	// One byte more than the blob, so that a longer stream shows in the first read past the end.
	size := int(min(desc.Size+1, copyBufSize))
	free := make(chan *[]byte, copyBufs)
	filled := make(chan *[]byte, copyBufs)
	for range copyBufs {
		free <- copyBufPool.Get().(*[]byte)
	}
	var (
		werr    error // the writer's first error, read once written is closed
		failed  atomic.Bool
		written = make(chan struct{})
	)
	go func() {
		defer close(written)
		for b := range filled {
			for _, w := range dsts {
				if werr == nil {
					werr = writeChunked(w, *b)
				}
			}
			if werr != nil {
				failed.Store(true)
			}
			free <- b
		}
	}()
	var rerr error
	for !failed.Load() {
		b := <-free
		n, err := io.ReadFull(vr, (*b)[:size])
		if n > 0 && vr.failure() == nil {
			*b = (*b)[:n]
			filled <- b
		} else {
			free <- b
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF || vr.failure() != nil {
			break
		}
		if err != nil {
			rerr = err
			break
		}
	}
	close(filled)
	<-written
	for range copyBufs {
		b := <-free
		*b = (*b)[:cap(*b)]
		copyBufPool.Put(b)
	}
	switch f := vr.failure(); {
	case f != nil:
		return f
	case rerr != nil:
		return fmt.Errorf("read %s: %w", what, rerr)
	case werr != nil:
		return fmt.Errorf("write %s: %w", what, werr)
	}
	return nil
}

func writeChunked(w io.Writer, p []byte) error {
	for len(p) > 0 {
		n := min(len(p), copyWriteChunk)
		if _, err := w.Write(p[:n]); err != nil {
			return err
		}
		p = p[n:]
	}
	return nil
}

// readBlob returns the verified bytes of a blob of at most limit bytes.
func (c *Client) readBlob(ctx context.Context, repo *remote.Repository, desc ocispec.Descriptor, limit int64) ([]byte, error) {
	if desc.Size > limit || desc.Size < 0 {
		return nil, fmt.Errorf("blob %s is %d bytes, above the %d-byte limit", desc.Digest, desc.Size, limit)
	}
	var buf bytes.Buffer
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
