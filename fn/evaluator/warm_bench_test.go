package evaluator_test

import (
	"bytes"
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/krm-catalog/krm-catalog/fn"
	"github.com/krm-catalog/krm-catalog/fn/evaluator"
	"github.com/krm-catalog/krm-catalog/fn/evaluator/evaluatorpb"
	"github.com/krm-catalog/krm-catalog/fn/fntest"
	"github.com/krm-catalog/krm-catalog/fn/runner"
)

// encodedRunner builds a step whose function answers a fixed output, unread, as a function
// server handed the request as it came does: what is left of a warm call is the evaluator's.
type encodedRunner struct {
	funcRunner
	out []byte
}

func (r *encodedRunner) Build(context.Context, *runner.Checked, string) (fn.Step, error) {
	return fn.Step{Name: "canned", Function: canned(r.out)}, nil
}

type canned []byte

func (c canned) Run(context.Context, *fn.ResourceList) (*fn.ResourceList, error) {
	panic("a pass-through call runs RunEncoded")
}

func (c canned) RunEncoded(context.Context, []byte, fn.Format, int) ([]byte, string, bool, error) {
	return c, "", false, nil
}

// BenchmarkWarmCallPassThrough is the evaluator's own share of a warm fn serve call over 100
// Deployments handed to a function as they came (fn serve's default): everything but the
// function and the gRPC transport.
//
//	go test ./fn/evaluator -run '^$' -bench WarmCallPassThrough -benchtime 200x
func BenchmarkWarmCallPassThrough(b *testing.B) {
	in := fntest.Deployments(100, "warm")
	out := bytes.ReplaceAll(in, []byte("    name: app-"), []byte("    namespace: warm\n    name: app-"))
	ev := evaluator.New(evaluator.Options{Resolver: catalogs{}, Runner: &encodedRunner{out: out}, PassThrough: true})
	req := &evaluatorpb.EvaluateFunctionRequest{Image: image, ResourceList: in}
	before := processCPU(b)
	for b.Loop() {
		resp, err := ev.EvaluateFunction(context.Background(), req)
		if err != nil || !bytes.Equal(resp.ResourceList, out) {
			b.Fatalf("EvaluateFunction: %v", err)
		}
	}
	// the process's CPU a call: under load the time a call takes is mostly waiting for a core
	b.ReportMetric(float64((processCPU(b)-before).Microseconds())/float64(b.N), "cpu-µs/call")
}

func processCPU(b *testing.B) time.Duration {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
