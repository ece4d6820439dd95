package oci

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/krm-catalog/krm-catalog/oci/sign"

	"github.com/krm-catalog/krm-catalog/internal/atomicfile"
)

// PullOptions tune Pull.
type PullOptions struct {
	// Dir is where files are written; "" is the current directory.
	Dir string
	// Platform chooses the binary of an exec artifact; nil is the running platform.
	Platform *ocispec.Platform
	// Keys, when given, must verify a signature of the artifact before any file is written.
	Keys []sign.PublicKey
}

// PulledFile is one file Pull wrote.
type PulledFile struct {
	Path   string `json:"path"`
	Title  string `json:"title"`
	Digest string `json:"digest"`
	Size   int64  `json:"size"`
}

// PullResult says what Pull wrote.
type PullResult struct {
	Artifact
	Files []PulledFile
	// Cached is true when no byte came from the network.
	Cached bool
	// Signature is the signature that verified, when keys were given.
	Signature *Signature
}

// Pull fetches the artifact ref names and writes its files under their titles into opts.Dir, exec
// binaries with the executable bit. Content is verified before a file appears under its name; a
// reference by digest whose content is cached needs no network.
func (c *Client) Pull(ctx context.Context, ref string, opts PullOptions) (PullResult, error) {
	res, err := c.pull(ctx, ref, opts)
	if err != nil {
		return PullResult{}, fmt.Errorf("pull %s: %w", ref, err)
	}
	return res, nil
}

func (c *Client) pull(ctx context.Context, refStr string, opts PullOptions) (PullResult, error) {
	ref, err := ParseReference(refStr)
	if err != nil {
		return PullResult{}, err
	}
	repo := c.repository(ref)
	cachedRoot := ref.Digest != "" && c.opts.Cache != nil && c.opts.Cache.has(ctx, ref.Digest)
	a, err := c.resolve(ctx, repo, ref, opts.Platform)
	if err != nil {
		return PullResult{}, err
	}
	res := PullResult{Artifact: a, Cached: cachedRoot}
	if len(opts.Keys) > 0 {
		sig, err := c.verifySignatures(ctx, repo, a.Reference, a.Root, opts.Keys)
		if err != nil {
			return PullResult{}, err
		}
		res.Signature = &sig
	}
	for _, l := range a.Layers {
		if err := checkTitle(l.Annotations[ocispec.AnnotationTitle]); err != nil {
			return PullResult{}, fmt.Errorf("layer %s: %w", l.Digest, err)
		}
	}
	dir := opts.Dir
	if dir == "" {
		dir = "."
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return PullResult{}, err
	}
	mode := os.FileMode(0o644)
	if a.Kind == KindExec {
		mode = 0o755
	}
	for _, l := range a.Layers {
		title := l.Annotations[ocispec.AnnotationTitle]
		path := filepath.Join(dir, title)
		fromCache, err := c.writeLayer(ctx, repo, l, title, path, mode)
		if err != nil {
			return PullResult{}, err
		}
		res.Cached = res.Cached && fromCache
		res.Files = append(res.Files, PulledFile{Path: path, Title: title, Digest: l.Digest.String(), Size: l.Size})
	}
	if c.opts.Cache != nil {
		if err := c.opts.Cache.record(ctx, a.Root, a.Manifest); err != nil {
			return PullResult{}, err
		}
	}
	return res, nil
}

// writeLayer writes a layer to a temporary file next to path and renames it into place only when
// its digest checked out, so a failed pull never leaves a half-written or unverified file under
// the name a user (or a runner) would execute.
func (c *Client) writeLayer(ctx context.Context, repo *remote.Repository, l ocispec.Descriptor, title, path string, mode os.FileMode) (fromCache bool, err error) {
	err = atomicfile.Write(path, mode, func(tmp *os.File) error {
		preallocate(tmp, l.Size)
		var cerr error
		fromCache, cerr = c.copyBlob(ctx, repo, l, title, tmp)
		return cerr
	})
	if err != nil {
		return false, err
	}
	return fromCache, nil
}
