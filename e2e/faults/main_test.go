// Package faults holds the fault tests of the service: `krm-catalog serve` as a separate process on
// real PostgreSQL, while its database is killed, stalled or failed over, its registry is down, its
// clients flood it, or it is itself killed mid-publish. Each test is bounded in time. The 60 s soak
// runs only with KRM_CATALOG_SOAK set (see soak_test.go).
//
//	go test ./e2e/faults                               # the fault tests, a few minutes
//	KRM_CATALOG_SOAK=60s go test ./e2e/faults -run Soak -v # the soak
package faults

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// binary is the krm-catalog binary the tests run, built once by TestMain.
var binary string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	// KRM_CATALOG_FAULTS_BINARY runs the tests against another build, such as an older main's,
	// to see which faults it failed.
	if b := os.Getenv("KRM_CATALOG_FAULTS_BINARY"); b != "" {
		binary = b
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "krm-catalog-faults-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	// the postgres user must reach data directories below it when the tests run as root
	if err := os.Chmod(dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	binary = filepath.Join(dir, "krm-catalog")
	cmd := exec.Command("go", "build", "-o", binary, "../../cmd/krm-catalog")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build krm-catalog:", err)
		return 1
	}
	return m.Run()
}
