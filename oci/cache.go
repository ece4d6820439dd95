package oci

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content/oci"
	"oras.land/oras-go/v2/errdef"

	"github.com/krm-catalog/krm-catalog/internal/cachedir"
)

// Cache is a local OCI image layout (oras-go content/oci) holding content pulled from registries,
// keyed by digest. Content is written to a temporary file and renamed to its digest only after the
// bytes were checked against it (manifests by oras-go's Store.Push, blobs by pendingBlob, fed by
// streamVerified), so what is in the cache has been verified once and is served as is.
//
// Several processes may share a cache: blobs are written atomically by digest, and index.json,
// which only records which manifests are present, is rewritten under a file lock.
type Cache struct {
	dir   string
	store *oci.Store
}

// DefaultCacheDir is the OCI cache of the default cache layout (internal/cachedir).
func DefaultCacheDir() (string, error) {
	return cachedir.Default().OCI(), nil
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
// match is removed before it is ever visible under its digest. Manifests go this way (oras-go
// indexes them); blobs go through ingest.
func (c *Cache) push(ctx context.Context, desc ocispec.Descriptor, r io.Reader) error {
	err := c.store.Push(ctx, desc, r)
	if errors.Is(err, errdef.ErrAlreadyExists) {
		return nil
	}
	return err
}

// copyTo writes the cached bytes of desc to w and reports whether the cache had them. A cached
// file of the wrong size is taken as absent, so that the blob is fetched (and replaced) again:
// blobs are not synced to disk when they are written, and a crash can leave one cut short; its
// content is trusted without hashing it again, its size is cheap to check.
func (c *Cache) copyTo(desc ocispec.Descriptor, w io.Writer) (bool, error) {
	f, err := os.Open(c.blobPath(desc.Digest))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("open cached %s: %w", desc.Digest, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || st.Size() != desc.Size {
		return false, nil
	}
	// File to file, io.Copy uses copy_file_range: the kernel copies (or, on file systems that
	// can, shares) the pages without a pass through user space.
	if _, err := io.Copy(w, f); err != nil {
		return false, fmt.Errorf("copy %s from cache: %w", desc.Digest, err)
	}
	return true, nil
}

// blobPath is where the OCI layout keeps the blob d. Callers have validated d, so the path stays
// inside blobs/.
func (c *Cache) blobPath(d digest.Digest) string {
	return filepath.Join(c.dir, "blobs", d.Algorithm().String(), d.Encoded())
}

// pendingBlob is a blob on its way into the cache: a temporary file in the layout's ingest
// directory (oras-go's, on the same file system as blobs/, so the rename is atomic), which gets
// its name under blobs/ only by commit, after the bytes were checked against the digest.
type pendingBlob struct {
	f      *os.File
	target string
}

// ingest starts writing the blob desc into the cache. desc.Digest must be valid.
func (c *Cache) ingest(desc ocispec.Descriptor) (*pendingBlob, error) {
	target := c.blobPath(desc.Digest)
	for _, d := range []string{filepath.Join(c.dir, "ingest"), filepath.Dir(target)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("cache %s: %w", desc.Digest, err)
		}
	}
	f, err := os.CreateTemp(filepath.Join(c.dir, "ingest"), desc.Digest.Encoded()+"_*")
	if err != nil {
		return nil, fmt.Errorf("cache %s: %w", desc.Digest, err)
	}
	preallocate(f, desc.Size)
	return &pendingBlob{f: f, target: target}, nil
}

func (p *pendingBlob) Write(b []byte) (int, error) { return p.f.Write(b) }

// commit names the blob. Call it only when the bytes written matched the digest.
//
// No fsync: a blob can be fetched again, and a cut-short one is caught by its size (copyTo);
// syncing 50 MB would cost more than the whole pull. Blobs are read-only, as oras-go makes them.
// Another process may have stored the same blob meanwhile; the rename replaces it with the same
// bytes, atomically.
func (p *pendingBlob) commit() error {
	err := p.f.Chmod(0o444)
	if cerr := p.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(p.f.Name(), p.target)
	}
	if err != nil {
		os.Remove(p.f.Name())
		if _, serr := os.Stat(p.target); serr == nil {
			// Where a read-only file cannot be replaced (Windows), another process's copy
			// stays; it was verified as this one was.
			return nil
		}
		return fmt.Errorf("cache %s: %w", filepath.Base(p.target), err)
	}
	return nil
}

// discard removes what was written.
func (p *pendingBlob) discard() {
	p.f.Close()
	os.Remove(p.f.Name())
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
