//go:build unix

package oci

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// withLock runs fn holding a shared or exclusive flock on dir/.lock. oras-go rewrites index.json
// in place; the lock keeps a reader from seeing it half written and writers from losing each
// other's entries.
func withLock(dir string, exclusive bool, fn func() error) error {
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("lock %s: %w", dir, err)
	}
	defer f.Close()
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	if err := syscall.Flock(int(f.Fd()), how); err != nil {
		return fmt.Errorf("lock %s: %w", dir, err)
	}
	defer syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return fn()
}
