//go:build linux

// Package cluster runs the service as it is deployed at scale, on one machine: hosts are network
// namespaces on one bridge (ip netns, veth), PostgreSQL's primary and its streaming standby on two
// of them, three `krm-catalog serve` replicas on three more, and the clients on another. Faults are
// made at the network (a host's link down, routes blackholed) and to processes (SIGKILL, SIGTERM).
// It needs root, iproute2 and PostgreSQL; outside CI it skips without them.
//
//	go test ./e2e/cluster -v
package cluster

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// binary is the krm-catalog binary the replicas run, built once by TestMain.
var binary string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "krm-catalog-cluster-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	// the postgres user must reach the data directories below it
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
