package evaluator_test

import (
	"context"
	"runtime"
	"strconv"
	"testing"

	"github.com/krm-catalog/krm-catalog/fn/evaluator"
	"github.com/krm-catalog/krm-catalog/fn/evaluator/evaluatorpb"
	"github.com/krm-catalog/krm-catalog/fn/fntest"
)

// BenchmarkCallCost measures what one call allocates, in-process, for a list of 1,000 Deployments
// (1.1 MB) run through a function that changes every item: the bytes allocated per byte of request
// (an upper bound on what the call holds at once), which callCost's factor of 32 covers:
// 25.7 and 25.0 for 100 and 1,000 Deployments (docs/porch.md, Limits).
//
//	go test ./fn/evaluator -run '^$' -bench CallCost -benchtime 20x
func BenchmarkCallCost(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(strconv.Itoa(n)+" deployments", func(b *testing.B) {
			ev := evaluator.New(evaluator.Options{Resolver: catalogs{}, Runner: &funcRunner{f: setNamespace}})
			req := &evaluatorpb.EvaluateFunctionRequest{Image: image, ResourceList: fntest.Deployments(n, "cost")}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			for b.Loop() {
				if _, err := ev.EvaluateFunction(context.Background(), req); err != nil {
					b.Fatal(err)
				}
			}
			runtime.ReadMemStats(&after)
			perCall := float64(after.TotalAlloc-before.TotalAlloc) / float64(b.N)
			b.ReportMetric(float64(len(req.ResourceList)), "request-bytes")
			b.ReportMetric(perCall/float64(len(req.ResourceList)), "alloc-bytes/request-byte")
		})
	}
}
