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
	"os"
	"testing"

	"github.com/krm-catalog/krm-catalog/internal/testenv"
)

// binary is the krm-catalog binary the replicas run, built once by TestMain.
var binary string

func TestMain(m *testing.M) {
	os.Exit(testenv.RunWithBinary(m, "../../cmd/krm-catalog", "krm-catalog", func(b string) { binary = b }))
}
