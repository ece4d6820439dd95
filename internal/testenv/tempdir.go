package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

// TraversableTempDir is a temporary directory that the postgres user can reach when the tests run
// as root (an embedded cluster then runs as postgres, and t.TempDir's directories are 0700).
func TraversableTempDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
