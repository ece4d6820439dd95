//go:build !unix

package oci

// withLock runs fn. Without flock, processes sharing a cache may lose index.json entries; blobs,
// which are what lookups by digest use, are unaffected.
func withLock(dir string, exclusive bool, fn func() error) error { return fn() }
