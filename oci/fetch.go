package oci

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

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

// copyBlob writes the bytes of desc to w: from the cache when it has them, else from the registry,
// verified while they stream and cached on the way. On error, w may have received unverified
// bytes: callers write to a temporary file and discard it.
func (c *Client) copyBlob(ctx context.Context, repo *remote.Repository, desc ocispec.Descriptor, title string, w io.Writer) (fromCache bool, err error) {
	cache := c.opts.Cache
	if cache != nil && cache.has(ctx, desc.Digest) {
		rc, err := cache.open(ctx, desc)
		if err != nil {
			return false, err
		}
		defer rc.Close()
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
	vr := newVerifyingReader(src, desc, "blob "+title)
	if cache != nil {
		err = cache.push(ctx, desc, io.TeeReader(vr, w))
	} else {
		_, err = io.Copy(w, vr)
	}
	if f := vr.failure(); f != nil {
		err = f
	}
	done(err)
	if err != nil {
		return false, fmt.Errorf("fetch %s: %w", desc.Digest, err)
	}
	return false, nil
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
