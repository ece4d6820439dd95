// Package bench holds the benchmarks that measure krm-catalog's function paths as whole processes
// against their peers and limits: fn render against kpt and against the bare chain of the same
// public functions, and fn run's peak memory against the size of a function's output. Each
// benchmark runs its baseline in the same run, turn by turn, and reports ratios (docs/benchmarks.md).
//
// The peers (kpt, and three functions of kptdev/krm-functions-catalog) are built from their public
// sources by build-peers.sh into $KRM_CATALOG_BENCH_PEERS (default ~/.cache/krm-catalog-bench);
// a benchmark whose peer is missing skips saying so.
package bench

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/krm-catalog/krm-catalog/fn/fntest"
)

var bins fntest.Bins

func TestMain(m *testing.M) { os.Exit(fntest.Main(m, true, &bins)) }

// peer returns the executable name built by build-peers.sh, or skips the benchmark.
func peer(b *testing.B, name string) string {
	b.Helper()
	dir := os.Getenv("KRM_CATALOG_BENCH_PEERS")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			b.Fatal(err)
		}
		dir = filepath.Join(home, ".cache", "krm-catalog-bench")
	}
	p := filepath.Join(dir, name)
	if _, err := os.Stat(p); err != nil {
		fntest.Missing(b, name+" (built from its public source)", "run e2e/bench/build-peers.sh, which builds kpt and the functions into "+dir)
	}
	return p
}

// rounds is how many times each contender runs, turn by turn, in one benchmark iteration:
// $KRM_CATALOG_BENCH_ROUNDS, default 5.
func rounds(b *testing.B) int {
	b.Helper()
	v := os.Getenv("KRM_CATALOG_BENCH_ROUNDS")
	if v == "" {
		return 5
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		b.Fatalf("KRM_CATALOG_BENCH_ROUNDS=%q: want a positive number", v)
	}
	return n
}
