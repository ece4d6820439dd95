package fn_test

import (
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/krm-catalog/krm-catalog/fn"
	"github.com/krm-catalog/krm-catalog/internal/fntest"
)

// BenchmarkDecodeJSONNodeVsHand decodes a 100-Deployment ResourceList from JSON (the output of
// every exec or container call) with DecodeJSONNode (on jsontext) and with the hand-written parser
// it replaced, turn by turn, and reports both as wall time and as the CPU time of the thread (on a
// loaded machine, the CPU time says more).
func BenchmarkDecodeJSONNodeVsHand(b *testing.B) {
	rl, _, err := fn.DecodeResourceList(fntest.Deployments(100, "bench"))
	if err != nil {
		b.Fatal(err)
	}
	data, err := rl.Encode(fn.JSON)
	if err != nil {
		b.Fatal(err)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var hand, text, handCPU, textCPU time.Duration
	timed := func(wall, cpu *time.Duration, f func([]byte) error) {
		c0, t0 := threadCPU(b), time.Now()
		if err := f(data); err != nil {
			b.Fatal(err)
		}
		*wall += time.Since(t0)
		*cpu += threadCPU(b) - c0
	}
	for b.Loop() {
		for range 20 {
			timed(&hand, &handCPU, func(d []byte) error { _, err := fn.DecodeJSONNodeHand(d); return err })
			timed(&text, &textCPU, func(d []byte) error { _, err := fn.DecodeJSONNode(d); return err })
		}
	}
	n := float64(b.N * 20)
	b.ReportMetric(float64(hand.Microseconds())/n, "µs-hand")
	b.ReportMetric(float64(text.Microseconds())/n, "µs-jsontext")
	b.ReportMetric(float64(text)/float64(hand), "jsontext/hand")
	b.ReportMetric(float64(textCPU)/float64(handCPU), "jsontext/hand-cpu")
}

func threadCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkDecodeJSONNode: the same list, for allocations and throughput.
func BenchmarkDecodeJSONNode(b *testing.B) {
	for _, c := range []struct {
		name string
		f    func([]byte) (any, error)
	}{
		{"jsontext", func(d []byte) (any, error) { return fn.DecodeJSONNode(d) }},
		{"hand", func(d []byte) (any, error) { return fn.DecodeJSONNodeHand(d) }},
	} {
		b.Run(c.name, func(b *testing.B) {
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
				if _, err := c.f(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
