package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// RunWithBinary is a TestMain's body for tests that run a command as a separate process: it builds
// the command (BuildBinary), hands its path to use, runs the tests and removes the build.
func RunWithBinary(m *testing.M, pkgDir, name string, use func(bin string)) int {
	bin, remove, err := BuildBinary(pkgDir, name)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer remove()
	use(bin)
	return m.Run()
}

// BuildBinary builds the command in pkgDir (a path go build takes, such as ../../cmd/krm-catalog)
// into a temporary directory that the postgres user can reach when the tests run as root, for a
// TestMain whose tests run it as a separate process. remove deletes the directory.
func BuildBinary(pkgDir, name string) (bin string, remove func(), err error) {
	dir, err := os.MkdirTemp("", name+"-")
	if err != nil {
		return "", nil, err
	}
	remove = func() { os.RemoveAll(dir) }
	if err := os.Chmod(dir, 0o755); err != nil {
		remove()
		return "", nil, err
	}
	bin = filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-o", bin, pkgDir)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		remove()
		return "", nil, fmt.Errorf("build %s: %w", pkgDir, err)
	}
	return bin, remove, nil
}
