package bench

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"
	"testing"

	"github.com/krm-catalog/krm-catalog/fn/fntest"
)

// execConfig writes a function config that names its executable (config.kubernetes.io/function),
// as a ConfigMap with data, and returns its path.
func execConfig(b *testing.B, dir, exe string, data map[string]string) string {
	b.Helper()
	var d bytes.Buffer
	for k, v := range data {
		fmt.Fprintf(&d, "  %s: %s\n", k, v)
	}
	p := filepath.Join(dir, "fn-config.yaml")
	writeFile(b, p, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fn-config\n  annotations:\n    config.kubernetes.io/function: |\n      exec:\n        path: %s\ndata:\n%s", exe, d.String()))
	return p
}

// BenchmarkFnRunVsBarePublicFunction: `krm-catalog fn run -` of the public set-namespace (built
// from kptdev/krm-functions-catalog, named by its config's exec path) over 1,000 Deployments,
// against the function binary itself on the same ResourceList. A function that declares no spec v2
// (every public kpt function) is sent YAML whatever --yaml-wire says, so this is the YAML wire
// (x-yaml-wire-cpu); the JSON wire is BenchmarkFnRunVsBareFunction's (e2e/functions), whose
// example function declares spec v2. Medians of rounds run turn by turn. Target: x-yaml-wire-cpu
// at most 1.3.
//
//	go test ./e2e/bench -run '^$' -bench FnRunVsBarePublicFunction -benchtime 1x -count 5
func BenchmarkFnRunVsBarePublicFunction(b *testing.B) {
	exe := peer(b, "set-namespace")
	input := bytes.Replace(fntest.Deployments(1000, "bench"),
		[]byte("functionConfig:\n  apiVersion: fn.example.com/v1\n  kind: SetNamespace\n  metadata:\n    name: ns\n  namespace: bench\n"),
		[]byte("functionConfig:\n  apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: fn-config\n  data:\n    namespace: bench\n"), 1)
	cfg := execConfig(b, b.TempDir(), exe, map[string]string{"namespace": "bench"})
	cache := b.TempDir()
	args := []string{bins.KrmCatalog, "fn", "run", "-", "--fn-config", cfg, "--allow-exec", "--cache-dir", cache, "--no-skip"}
	check := func(s sample, out *bytes.Buffer) sample {
		if !bytes.Contains(out.Bytes(), []byte("namespace: bench")) {
			b.Fatalf("the namespace was not set:\n%.2000s", out.Bytes())
		}
		return s
	}
	run := func(argv ...string) func() sample {
		return func() sample {
			var out bytes.Buffer
			return check(proc(b, input, &out, "", argv...), &out)
		}
	}
	contenders := []struct {
		name string
		run  func() sample
		s    series
	}{
		{name: "bare", run: run(exe)},
		{name: "fn-run-yaml-wire", run: run(args...)},
	}
	for _, c := range contenders {
		c.run() // fills caches
	}
	for b.Loop() {
		for i := range rounds(b) {
			for k := range contenders {
				c := &contenders[(i+k)%len(contenders)]
				c.s = append(c.s, c.run())
			}
		}
	}
	for _, c := range contenders {
		c.s.report(b, c.name)
	}
	contenders[1].s.ratios(b, contenders[0].s, "yaml-wire")
}

// BenchmarkFnRunOutputMemory: the peak resident memory of `krm-catalog fn run -` whose function
// (testdata/gen) answers a ResourceList of 255 MiB, against the size of that answer
// (x-output-size). The generator declares no spec v2, so it is sent YAML and answers YAML, as
// the public functions do. It streams its answer, so the peak is fn run's. Target: at most 2.
//
//	go test ./e2e/bench -run '^$' -bench FnRunOutputMemory -benchtime 1x -count 3
func BenchmarkFnRunOutputMemory(b *testing.B) {
	gen := fntest.GoBuild(b, bins.Root, "./e2e/bench/testdata/gen")
	input := []byte("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\n")
	cfg := execConfig(b, b.TempDir(), gen, map[string]string{"size": "256Mi"})
	cache := b.TempDir()
	args := []string{bins.KrmCatalog, "fn", "run", "-", "--fn-config", cfg, "--allow-exec", "--cache-dir", cache, "--no-skip"}
	var size countingWriter
	bare := proc(b, input, &size, "", gen)
	var fnRun series
	for b.Loop() {
		for range rounds(b) {
			fnRun = append(fnRun, proc(b, input, io.Discard, "", args...))
		}
	}
	b.ReportMetric(float64(size.n)/(1<<20), "MiB-output")
	b.ReportMetric(float64(bare.rss)/(1<<20), "MiB-generator")
	fnRun.report(b, "fn-run")
	b.ReportMetric(float64(fnRun.rss())/float64(size.n), "x-output-size")
}

// countingWriter counts the bytes written to it.
type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return len(p), nil
}
