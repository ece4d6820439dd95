package oci

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"

	"github.com/krm-catalog/krm-catalog/oci/sign"
)

// CopyResult says what a copy did.
type CopyResult struct {
	// Reference is the destination, pinned to the digest of what was copied.
	Reference  Reference
	Descriptor ocispec.Descriptor
	// Copied counts the manifests and blobs sent; Present those the destination already had.
	Copied, Present int
	// Referrers counts the referrers found (attached definitions, bundle signatures and others);
	// LegacySignature says whether a sha256-<hex>.sig signature was copied along.
	Referrers       int
	LegacySignature bool
}

// Copy copies what src names (an image, an image index with every platform, or an artifact) to the
// repository dst (optionally with a tag, never a digest), with everything that refers to it: the
// OCI 1.1 referrers (attached definitions, sigstore bundles, and theirs), found through the
// referrers API or its tag schema, and cosign's legacy signature tag. Content the destination has is
// not sent again, so an interrupted copy is completed by running it again. Digests do not change.
func (c *Client) Copy(ctx context.Context, src, dst string) (CopyResult, error) {
	res, err := c.copy(ctx, src, dst)
	if err != nil {
		return res, fmt.Errorf("copy %s to %s: %w", src, dst, err)
	}
	return res, nil
}

func (c *Client) copy(ctx context.Context, srcStr, dstStr string) (CopyResult, error) {
	sref, err := ParseReference(srcStr)
	if err != nil {
		return CopyResult{}, err
	}
	dref, err := ParseReference(dstStr)
	if err != nil {
		return CopyResult{}, err
	}
	if dref.Digest != "" {
		return CopyResult{}, fmt.Errorf("%w: copy to a tag or a bare repository, not to a digest", ErrInvalidReference)
	}
	srepo, drepo := c.repository(sref), c.repository(dref)
	root, err := srepo.Resolve(ctx, sref.target())
	if err != nil {
		return CopyResult{}, registryErr(err)
	}
	if sref.Digest != "" && root.Digest != sref.Digest {
		return CopyResult{}, &DigestMismatchError{What: "manifest " + sref.String(), Expected: sref.Digest, Received: root.Digest}
	}
	var copied, present, referrers atomic.Int64
	opts := oras.ExtendedCopyGraphOptions{
		CopyGraphOptions: oras.CopyGraphOptions{
			Concurrency: 3,
			PreCopy: func(_ context.Context, desc ocispec.Descriptor) error {
				copied.Add(1)
				return nil
			},
			OnCopySkipped: func(_ context.Context, desc ocispec.Descriptor) error {
				present.Add(1)
				return nil
			},
		},
		FindPredecessors: func(ctx context.Context, src content.ReadOnlyGraphStorage, desc ocispec.Descriptor) ([]ocispec.Descriptor, error) {
			preds, err := srepo.Predecessors(ctx, desc)
			referrers.Add(int64(len(preds)))
			return preds, err
		},
	}
	if err := oras.ExtendedCopyGraph(ctx, srepo, drepo, root, opts); err != nil {
		return CopyResult{}, registryErr(err)
	}
	res := CopyResult{Reference: dref.WithDigest(root.Digest), Descriptor: root}
	if dref.Tag != "" {
		if err := tagIfMoved(ctx, drepo, root, dref.Tag, &copied); err != nil {
			return res, err
		}
	}
	sigTag := sign.LegacyTag(root.Digest)
	sig, err := srepo.Resolve(ctx, sigTag)
	switch {
	case errors.Is(err, errdef.ErrNotFound):
	case err != nil:
		return res, fmt.Errorf("look for the legacy signature: %w", registryErr(err))
	default:
		if err := oras.CopyGraph(ctx, srepo, drepo, sig, opts.CopyGraphOptions); err != nil {
			return res, fmt.Errorf("copy the legacy signature: %w", registryErr(err))
		}
		if err := tagIfMoved(ctx, drepo, sig, sigTag, &copied); err != nil {
			return res, err
		}
		res.LegacySignature = true
	}
	res.Copied, res.Present, res.Referrers = int(copied.Load()), int(present.Load()), int(referrers.Load())
	return res, nil
}

// tagIfMoved points tag at desc unless it already does: a re-run sends nothing.
func tagIfMoved(ctx context.Context, repo interface {
	Resolve(context.Context, string) (ocispec.Descriptor, error)
	Tag(context.Context, ocispec.Descriptor, string) error
}, desc ocispec.Descriptor, tag string, copied *atomic.Int64) error {
	if cur, err := repo.Resolve(ctx, tag); err == nil && cur.Digest == desc.Digest {
		return nil
	}
	if err := repo.Tag(ctx, desc, tag); err != nil {
		return fmt.Errorf("tag %s: %w", tag, registryErr(err))
	}
	copied.Add(1)
	return nil
}

// Exists reports whether ref (a reference with a digest or a tag) names a manifest in its registry.
func (c *Client) Exists(ctx context.Context, ref string) (ocispec.Descriptor, bool, error) {
	r, err := ParseReference(ref)
	if err != nil {
		return ocispec.Descriptor{}, false, err
	}
	desc, err := c.repository(r).Resolve(ctx, r.target())
	if errors.Is(err, errdef.ErrNotFound) {
		return ocispec.Descriptor{}, false, nil
	}
	if err != nil {
		return ocispec.Descriptor{}, false, registryErr(err)
	}
	return desc, true, nil
}
