// Package cachedir decides where krm-catalog keeps what it fetches: one root, and under it one
// directory per kind of content. Every package that caches takes its directory from a Layout, so
// the layout is written down once.
package cachedir

import (
	"os"
	"path/filepath"
)

// Layout is a cache root and the directories under it.
type Layout struct {
	Root string
}

// Default is the layout under the user's cache directory: $XDG_CACHE_HOME/krm-catalog (else
// ~/.cache/krm-catalog on Linux, os.UserCacheDir elsewhere), or under the temporary directory
// where the user has none (a service account without a home).
func Default() Layout {
	if d, err := os.UserCacheDir(); err == nil {
		return Layout{Root: filepath.Join(d, "krm-catalog")}
	}
	return Layout{Root: filepath.Join(os.TempDir(), "krm-catalog-cache")}
}

// At is the layout under root; an empty root is Default().
func At(root string) Layout {
	if root == "" {
		return Default()
	}
	return Layout{Root: root}
}

// OCI is the verified OCI image layout of pulled blobs.
func (l Layout) OCI() string { return filepath.Join(l.Root, "oci") }

// Catalogs holds https catalogs with their ETags, and the markers of catalogs that validated.
func (l Layout) Catalogs() string { return filepath.Join(l.Root, "catalogs") }

// Exec holds verified executables and starlark scripts, by sha256.
func (l Layout) Exec() string { return filepath.Join(l.Root, "exec") }

// Skip holds the outputs of idempotent steps (fn/runner/skip.go).
func (l Layout) Skip() string { return filepath.Join(l.Root, "skip") }

// Render holds, per package and pipeline, the digest of what its last render wrote (fn/kpt/memo.go).
func (l Layout) Render() string { return filepath.Join(l.Root, "render") }
