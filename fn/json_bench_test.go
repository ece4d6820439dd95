package fn_test

import (
	"testing"

	"github.com/krm-catalog/krm-catalog/fn"
	"github.com/krm-catalog/krm-catalog/fn/fntest"
)

// BenchmarkDecodeJSONNode decodes a 100-Deployment ResourceList from JSON (80 KB), as the output of
// every exec or container call is read. docs/benchmarks.md has its comparison with the hand-written
// parser it replaced.
func BenchmarkDecodeJSONNode(b *testing.B) {
	rl, _, err := fn.DecodeResourceList(fntest.Deployments(100, "bench"))
	if err != nil {
		b.Fatal(err)
	}
	data, err := rl.Encode(fn.JSON)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := fn.DecodeJSONNode(data); err != nil {
			b.Fatal(err)
		}
	}
}
