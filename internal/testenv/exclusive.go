package testenv

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// Exclusive holds the machine's lock for heavy or timing-bound tests until t ends: a test whose
// limits are wall-clock times (failover within seconds, no failed read during a restart) and a
// test that compiles a whole binary take turns instead of running at once from two packages'
// test processes, which `go test ./...` starts side by side. It bounds no time itself.
func Exclusive(t testing.TB) {
	t.Helper()
	lock, err := os.OpenFile(filepath.Join(os.TempDir(), "krm-catalog-tests-exclusive.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatalf("the exclusive tests' lock: %v", err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		lock.Close()
		t.Fatalf("the exclusive tests' lock: %v", err)
	}
	// closing the file releases the lock
	t.Cleanup(func() { lock.Close() })
}
