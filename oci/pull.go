package oci

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/sigstore/sigstore-go/pkg/root"
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
	// Identities are trusted keyless signers, beside Keys; TrustedRoot verifies their
	// certificates (nil: the embedded public-good root).
	Identities  []sign.Identity
	TrustedRoot root.TrustedMaterial
	// MaxBytes bounds the size of all the files written together; 0 means DefaultPullMaxBytes.
	MaxBytes int64
}

// DefaultPullMaxBytes bounds a pull: the largest artifacts krm-catalog makes are exec binaries of
// tens of megabytes; a layer that declares more is refused before a byte is written.
const DefaultPullMaxBytes = 1 << 30

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
	if trust := (sign.Trust{Keys: opts.Keys, Identities: opts.Identities, Root: opts.TrustedRoot}); !trust.IsZero() {
		sig, err := c.verifySignatures(ctx, repo, a.Reference, a.Root, trust)
		if err != nil {
			return PullResult{}, err
		}
		res.Signature = &sig
	}
	maxBytes := opts.MaxBytes
	if maxBytes <= 0 {
		maxBytes = DefaultPullMaxBytes
	}
	if err := checkLayers(a.Layers, maxBytes); err != nil {
		return PullResult{}, err
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
	budget := maxBytes
	for _, l := range a.Layers {
		title := l.Annotations[ocispec.AnnotationTitle]
		path := filepath.Join(dir, title)
		fromCache, err := c.writeLayer(ctx, repo, l, title, path, mode, budget)
		budget -= l.Size
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
func (c *Client) writeLayer(ctx context.Context, repo *remote.Repository, l ocispec.Descriptor, title, path string, mode os.FileMode, budget int64) (fromCache bool, err error) {
	err = atomicfile.Write(path, mode, func(tmp *os.File) error {
		preallocate(tmp, l.Size)
		var cerr error
		// the declared sizes were checked, and the stream is cut at the declared size; the cap is
		// checked again on what is written, so that no path writes past it
		fromCache, cerr = c.copyBlob(ctx, repo, l, title, &capWriter{w: tmp, left: budget, what: title})
		return cerr
	})
	if err != nil {
		return false, err
	}
	return fromCache, nil
}

// checkLayers refuses, before anything is written, layers a pull must not write: a title that is
// not a plain file name, two layers of one title (the last would silently win; titles differing
// only in case are one file on case-insensitive file systems), and sizes above maxBytes together.
func checkLayers(layers []ocispec.Descriptor, maxBytes int64) error {
	seen := map[string]bool{}
	var total int64
	for _, l := range layers {
		title := l.Annotations[ocispec.AnnotationTitle]
		if err := checkTitle(title); err != nil {
			return fmt.Errorf("layer %s: %w", l.Digest, err)
		}
		key := foldKey(title)
		if seen[key] {
			return fmt.Errorf("layer %s: %w %q: two layers have this title", l.Digest, ErrUnsafeTitle, title)
		}
		seen[key] = true
		if l.Size < 0 || l.Size > maxBytes-total {
			return fmt.Errorf("layer %s (%s) declares %d bytes: %w: the pull may write %d bytes (--max-size)", l.Digest, title, l.Size, ErrTooLarge, maxBytes)
		}
		total += l.Size
	}
	return nil
}

// capWriter fails a write that would take the bytes written past left.
type capWriter struct {
	w    io.Writer
	left int64
	what string
}

func (c *capWriter) Write(p []byte) (int, error) {
	if int64(len(p)) > c.left {
		return 0, fmt.Errorf("%s: %w: more bytes than the pull may write", c.what, ErrTooLarge)
	}
	c.left -= int64(len(p))
	return c.w.Write(p)
}

// foldKey maps every rune to the least of its case-folding orbit: two titles have the same key
// exactly when strings.EqualFold says they are equal.
func foldKey(s string) string {
	return strings.Map(func(r rune) rune {
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		return least
	}, s)
}
