package oci

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content/oci"
	"oras.land/oras-go/v2/errdef"
)

// Cache is a local OCI image layout (oras-go content/oci) holding content pulled from registries,
// keyed by digest. Content enters it only through Push, which checks the bytes against their
// digest while they are written (oras-go ingests into a temporary file and renames it into place
// only after the check), so what is in the cache has been verified once and is served as is.
//
// Several processes may share a cache: blobs are written atomically by digest, and index.json,
// which only records which manifests are present, is rewritten under a file lock.
type Cache struct {
	dir   string
	store *oci.Store
}

// DefaultCacheDir is $XDG_CACHE_HOME/krm-catalog/oci, falling back to the user cache directory
// of the platform (os.UserCacheDir).
func DefaultCacheDir() (string, error) {
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		d, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("cache directory: %w", err)
		}
		base = d
	}
	return filepath.Join(base, "krm-catalog", "oci"), nil
}

// OpenCache opens (creating it if needed) the OCI layout at dir.
func OpenCache(ctx context.Context, dir string) (*Cache, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("open cache %s: %w", dir, err)
	}
	var store *oci.Store
	err := withLock(dir, false, func() error {
		var err error
		store, err = oci.NewWithContext(ctx, dir)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("open cache %s: %w", dir, err)
	}
	// index.json is written by record, under the lock, merged with what other processes wrote.
	store.AutoSaveIndex = false
	return &Cache{dir: dir, store: store}, nil
}

// Dir is the cache's directory.
func (c *Cache) Dir() string { return c.dir }

// has reports whether the blob d is in the cache.
func (c *Cache) has(ctx context.Context, d digest.Digest) bool {
	ok, err := c.store.Exists(ctx, ocispec.Descriptor{Digest: d})
	return err == nil && ok
}

// open returns the cached bytes of d.
func (c *Cache) open(ctx context.Context, desc ocispec.Descriptor) (io.ReadCloser, error) {
	rc, err := c.store.Fetch(ctx, desc)
	if errors.Is(err, errdef.ErrNotFound) {
		return nil, fmt.Errorf("%s: %w", desc.Digest, ErrNotCached)
	}
	return rc, err
}

// readAll returns the cached bytes of d, which are at most limit bytes.
func (c *Cache) readAll(ctx context.Context, d digest.Digest, limit int64) ([]byte, error) {
	rc, err := c.open(ctx, ocispec.Descriptor{Digest: d})
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("cached %s is larger than %d bytes", d, limit)
	}
	return b, nil
}

// push stores r as desc. oras-go verifies size and digest while ingesting; content that does not
// match is removed before it is ever visible under its digest.
func (c *Cache) push(ctx context.Context, desc ocispec.Descriptor, r io.Reader) error {
	err := c.store.Push(ctx, desc, r)
	if errors.Is(err, errdef.ErrAlreadyExists) {
		return nil
	}
	return err
}

// record adds manifests to index.json, so that the layout lists them for other OCI tools. It
// reloads the index under an exclusive lock, so entries other processes added are kept.
func (c *Cache) record(ctx context.Context, manifests ...ocispec.Descriptor) error {
	if len(manifests) == 0 {
		return nil
	}
	return withLock(c.dir, true, func() error {
		fresh, err := oci.NewWithContext(ctx, c.dir)
		if err != nil {
			return fmt.Errorf("record in cache: %w", err)
		}
		for _, m := range manifests {
			if err := fresh.Tag(ctx, plain(m), m.Digest.String()); err != nil {
				return fmt.Errorf("record %s in cache: %w", m.Digest, err)
			}
		}
		return nil
	})
}

// plain strips a descriptor to what identifies content.
func plain(d ocispec.Descriptor) ocispec.Descriptor {
	return ocispec.Descriptor{MediaType: d.MediaType, Digest: d.Digest, Size: d.Size, ArtifactType: d.ArtifactType, Platform: d.Platform}
}
