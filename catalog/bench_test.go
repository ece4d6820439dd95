package catalog_test

import (
	"bytes"
	"context"
	"runtime"
	"syscall"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/krm-catalog/krm-catalog/catalog"
	"github.com/krm-catalog/krm-catalog/catalog/catalogtest"
	"github.com/krm-catalog/krm-catalog/internal/docbudget"
)

// BenchmarkValidate500 validates a generated 500-function catalog and, in the same run, decodes the
// same bytes with plain yaml.v3 into an interface{}. It reports the ratio of the two as
// "x-yaml-decode" (target: at most 3).
//
//	go test ./catalog -run '^$' -bench Validate500 -benchtime 20x
func BenchmarkValidate500(b *testing.B) {
	data := catalogtest.Catalog(catalogtest.Options{Functions: 500})
	v, err := catalog.NewValidator()
	if err != nil {
		b.Fatal(err)
	}
	if _, fs := v.Validate("bench.yaml", data, catalog.Options{}); fs.HasErrors() {
		b.Fatalf("the generated catalog is invalid: %v", fs[0])
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	var validate, baseline time.Duration
	for b.Loop() {
		start := time.Now()
		var v0 any
		if err := yaml.Unmarshal(data, &v0); err != nil {
			b.Fatal(err)
		}
		baseline += time.Since(start)

		start = time.Now()
		if _, fs := v.Validate("bench.yaml", data, catalog.Options{}); fs.HasErrors() {
			b.Fatal("unexpected errors")
		}
		validate += time.Since(start)
	}
	b.ReportMetric(float64(validate)/float64(baseline), "x-yaml-decode")
	b.ReportMetric(float64(validate.Microseconds())/float64(b.N)/1000, "ms-validate/op")
	b.ReportMetric(float64(baseline.Microseconds())/float64(b.N)/1000, "ms-yaml/op")
}

// BenchmarkValidateWorstCase validates, within the service's limits at its default body limit
// (docbudget.ForBytes(4 MiB): 524,288 values), the documents that cost most per byte and a
// typical 4 MiB catalog, and reports for each the CPU time of a validation, its peak heap, and the
// ratio of its CPU time to the typical catalog's ("x-typical", measured in the same run). The
// figures are docs/security.md's worst case of a request.
//
//	go test ./catalog -run '^$' -bench ValidateWorstCase -benchtime 3x
func BenchmarkValidateWorstCase(b *testing.B) {
	v, err := catalog.NewValidator()
	if err != nil {
		b.Fatal(err)
	}
	limits := docbudget.ForBytes(4 << 20)
	typical := catalogtest.Catalog(catalogtest.Options{Functions: 2200})
	cases := []struct {
		name string
		data []byte
	}{
		{"typical-4MiB", typical},
		{"lists-of-one", catalogtest.Dense(250_000)},
		{"mappings-of-one", denseOf("{a: 0}", 160_000)},
		{"strings", denseOf(`"ab"`, 500_000)},
	}
	var typicalCPU time.Duration
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			var cpu time.Duration
			var peak uint64
			for b.Loop() {
				runtime.GC()
				var before runtime.MemStats
				runtime.ReadMemStats(&before)
				stop := sampleHeap(&peak, before.HeapInuse)
				start := cpuTime()
				_, fs, err := v.ValidateContext(context.Background(), "worst.yaml", c.data, catalog.Options{Limits: limits})
				cpu += cpuTime() - start
				stop()
				if err != nil || fs.HasErrors() {
					b.Fatalf("%s: %v %v", c.name, err, fs)
				}
			}
			per := cpu / time.Duration(b.N)
			if c.name == "typical-4MiB" {
				typicalCPU = per
			}
			b.ReportMetric(float64(per.Microseconds())/1000, "cpu-ms/op")
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
			if typicalCPU > 0 {
				b.ReportMetric(float64(per)/float64(typicalCPU), "x-typical")
			}
		})
	}
}

// denseOf is catalogtest.Dense with another element in the default's list.
func denseOf(elem string, n int) []byte {
	d := catalogtest.Dense(0)
	i := bytes.Index(d, []byte("default: ["))
	var b bytes.Buffer
	b.Write(d[:i+len("default: [")])
	for j := range n {
		if j > 0 {
			b.WriteByte(',')
		}
		b.WriteString(elem)
	}
	b.Write(d[i+len("default: ["):])
	return b.Bytes()
}

// cpuTime is the CPU time this process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// sampleHeap records in peak, until the returned stop is called, the largest heap in use above
// base.
func sampleHeap(peak *uint64, base uint64) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if m.HeapInuse > base {
				*peak = max(*peak, m.HeapInuse-base)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(done); <-finished }
}
