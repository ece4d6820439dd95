// Package faults holds the fault tests of the service: `krm-catalog serve` as a separate process on
// real PostgreSQL, while its database is killed, stalled or failed over, its registry is down, its
// clients flood it, or it is itself killed mid-publish. Each test is bounded in time. The 60 s soak
// runs only with KRM_CATALOG_SOAK set (see soak_test.go), the document attacks only with
// KRM_CATALOG_ATTACKS set (see attack_test.go).
//
//	go test ./e2e/faults                               # the fault tests, a few minutes
//	KRM_CATALOG_SOAK=60s go test ./e2e/faults -run Soak -v # the soak
//	KRM_CATALOG_ATTACKS=1 go test ./e2e/faults -run TestDocumentAttacks -v # the document attacks
package faults

import (
	"os"
	"testing"

	"github.com/krm-catalog/krm-catalog/internal/testenv"
)

// binary is the krm-catalog binary the tests run, built once by TestMain.
var binary string

func TestMain(m *testing.M) {
	// KRM_CATALOG_FAULTS_BINARY runs the tests against another build, such as an older main's,
	// to see which faults it failed.
	if b := os.Getenv("KRM_CATALOG_FAULTS_BINARY"); b != "" {
		binary = b
		os.Exit(m.Run())
	}
	os.Exit(testenv.RunWithBinary(m, "../../cmd/krm-catalog", "krm-catalog", func(b string) { binary = b }))
}
