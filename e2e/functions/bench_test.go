package functions

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/krm-catalog/krm-catalog/fn"
	"github.com/krm-catalog/krm-catalog/fn/fntest"
	"github.com/krm-catalog/krm-catalog/fn/runtime/container"
	execfn "github.com/krm-catalog/krm-catalog/fn/runtime/exec"
	"github.com/krm-catalog/krm-catalog/fn/runtime/server"
	"github.com/krm-catalog/krm-catalog/fn/runtime/starlark"
	"github.com/krm-catalog/krm-catalog/pkg/krmfn"
)

// The runtime benchmarks of docs/benchmarks.md ("Runtimes"). Each measures its baseline in the same
// run and reports the ratio; run them one iteration at a time:
//
//	go test ./e2e/functions -run '^$' -bench . -benchtime 1x -count 3

func benchList(b *testing.B, n int) *fn.ResourceList {
	b.Helper()
	krmfn.TuneGC() // the runtimes run here as in krm-catalog, which sets it

	rl, _, err := fn.DecodeResourceList(fntest.Deployments(n, "bench"))
	if err != nil {
		b.Fatal(err)
	}
	return rl
}

func ms(d time.Duration, calls int) float64 { return float64(d.Microseconds()) / 1000 / float64(calls) }

// timeCalls runs f calls times and returns the total time.
func timeCalls(b *testing.B, calls int, f fn.Function, rl *fn.ResourceList) time.Duration {
	b.Helper()
	start := time.Now()
	for range calls {
		if _, err := f.Run(context.Background(), rl); err != nil {
			b.Fatal(err)
		}
	}
	return time.Since(start)
}

// timed is a function to time, and how many of the rounds it runs in.
type timed struct {
	f     fn.Function
	calls int
	total time.Duration
}

// interleave runs the functions turn by turn for rounds rounds (a function with fewer calls runs in
// evenly spread rounds), so that every one of them sees the same machine: these are shared and
// their load changes by the second.
func interleave(b *testing.B, rounds int, rl *fn.ResourceList, ts ...*timed) {
	b.Helper()
	for i := range rounds {
		for _, t := range ts {
			if i*t.calls/rounds == (i+1)*t.calls/rounds {
				continue
			}
			t.total += timeCalls(b, 1, t.f, rl)
		}
	}
}

// BenchmarkExecV1VsV2: an exec function called 200 times on a 100-item ResourceList, one process
// per call (v1) against one server reused for every call (v2, its start-up included). Target: v2 at
// least 5x faster per call. v1 is measured with YAML on the wire, as the v1 protocol is used by kpt
// and kustomize (x-v2-faster), and with JSON, as krm-catalog runs v1 functions
// (x-v2-faster-than-json).
func BenchmarkExecV1VsV2(b *testing.B) {
	const calls = 200
	rl := benchList(b, 100)
	path := bins.Fn["set-namespace"]
	var v1, v1yaml, v2 time.Duration
	for b.Loop() {
		pool := &server.Pool{Format: fn.JSON}
		tJSON := &timed{f: &execfn.Function{Path: path, Format: fn.JSON}, calls: calls}
		tYAML := &timed{f: &execfn.Function{Path: path, Format: fn.YAML}, calls: calls}
		tV2 := &timed{f: pool.Function("bench", &execfn.Launcher{Path: path}, time.Minute), calls: calls}
		interleave(b, calls, rl, tJSON, tYAML, tV2) // the first v2 call starts the server
		if err := pool.Close(); err != nil {
			b.Fatal(err)
		}
		v1, v1yaml, v2 = v1+tJSON.total, v1yaml+tYAML.total, v2+tV2.total
	}
	n := b.N * calls
	b.ReportMetric(ms(v1, n), "ms-v1/call")
	b.ReportMetric(ms(v1yaml, n), "ms-v1-yaml/call")
	b.ReportMetric(ms(v2, n), "ms-v2/call")
	b.ReportMetric(float64(v1yaml)/float64(v2), "x-v2-faster")
	b.ReportMetric(float64(v1)/float64(v2), "x-v2-faster-than-json")
}

// BenchmarkContainerRunVsServer: `docker run` per call against one container server reused for
// 200 calls (its start-up included), on a 100-item ResourceList. Target: at least 20x.
func BenchmarkContainerRunVsServer(b *testing.B) {
	const runCalls, serverCalls = 10, 200
	engine := fntest.Docker(b)
	host := fntest.Registry(b)
	image := fntest.Image(b, engine, bins.Fn["set-namespace"], host, "bench/set-namespace")
	rl := benchList(b, 100)
	cfg := container.Config{Engine: engine, Image: image}
	var perRun, reused time.Duration
	for b.Loop() {
		pool := &server.Pool{Format: fn.JSON}
		tRun := &timed{f: &container.Function{Config: cfg, Format: fn.JSON}, calls: runCalls}
		tServer := &timed{f: pool.Function("bench", &container.Launcher{Config: cfg}, time.Minute), calls: serverCalls}
		interleave(b, serverCalls, rl, tServer, tRun)
		if err := pool.Close(); err != nil {
			b.Fatal(err)
		}
		perRun, reused = perRun+tRun.total, reused+tServer.total
	}
	b.ReportMetric(ms(perRun, b.N*runCalls), "ms-docker-run/call")
	b.ReportMetric(ms(reused, b.N*serverCalls), "ms-server/call")
	b.ReportMetric((float64(perRun)/runCalls)/(float64(reused)/serverCalls), "x-server-faster")
}

// BenchmarkFnRunVsBareFunction: `krm-catalog fn run -` resolving an exec function from a catalog
// (over https, cached) and running it on a 1,000-item ResourceList (1.1 MB of YAML), against
// running the function binary itself on the same YAML. Both are whole processes writing YAML.
// Target: at most 1.3x.
//
// Two more commands run in the same rounds to say where fn run's time goes: `krm-catalog version`
// (start-up alone) and the function on the list as JSON (the call fn run makes). Each is reported
// in wall time and in CPU time (user and system, the function's process included for fn run):
// under load the CPU time is the steadier figure. The YAML wire runs again, with the function too,
// on the list with a ConfigMap holding a script added (x-overhead-cpu-yaml-wire-script), and with
// the example validator, which changes nothing, on each wire (x-overhead-cpu-yaml-wire-validator,
// x-overhead-cpu-validator).
func BenchmarkFnRunVsBareFunction(b *testing.B) {
	const calls = 5
	input := fntest.Deployments(1000, "bench")
	rl, _, err := fn.DecodeResourceList(input)
	if err != nil {
		b.Fatal(err)
	}
	jsonInput, err := rl.Encode(fn.JSON)
	if err != nil {
		b.Fatal(err)
	}
	pub := publish(b, nil)
	cache := b.TempDir()
	args := []string{"fn", "run", "-", "--catalog", pub.catalog, "--trusted-catalog", pub.catalog, "--cache-dir", cache}
	env := append(os.Environ(), pub.env...)
	type command struct {
		name, want string
		in         []byte
		argv       []string
		wall, cpu  time.Duration
	}
	runOnce := func(c *command) {
		cmd := exec.Command(c.argv[0], c.argv[1:]...)
		cmd.Env = env
		cmd.Stdin = bytes.NewReader(c.in)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		start := time.Now()
		out, err := cmd.Output()
		c.wall += time.Since(start)
		if err != nil || !bytes.Contains(out, []byte(c.want)) {
			b.Fatalf("%s: %v\n%s", c.argv[0], err, stderr.String())
		}
		c.cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	bare := &command{name: "bare", want: "namespace: bench", in: input, argv: []string{bins.Fn["set-namespace"]}}
	fnRun := &command{name: "fn-run", want: "namespace: bench", in: input, argv: append([]string{bins.KrmCatalog}, args...)}
	version := &command{name: "version", want: "krm-catalog", argv: []string{bins.KrmCatalog, "version"}}
	fnJSON := &command{name: "fn-json", want: `"namespace":"bench"`, in: jsonInput, argv: []string{bins.Fn["set-namespace"]}}
	// the same run with YAML on the wire, as every function that does not declare spec v2 is sent it
	fnRunYAML := &command{name: "fn-run-yaml-wire", want: "namespace: bench", in: input, argv: append(append([]string{bins.KrmCatalog}, args...), "--yaml-wire")}
	// and over the same list with one ConfigMap holding a script (a multi-line string, which the
	// fast YAML writer leaves to yaml.v3), as real packages have
	withScript := bytes.Replace(input, []byte("\nitems:\n"), []byte("\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: script\n  data:\n    run.sh: |\n      #!/bin/sh\n      set -eu\n      exec app --port=8080\n"), 1)
	bareScript := &command{name: "bare-script", want: "namespace: bench", in: withScript, argv: bare.argv}
	fnRunScript := &command{name: "fn-run-yaml-wire-script", want: "run.sh: |", in: withScript, argv: fnRunYAML.argv}
	// and the example validator (it changes nothing) over the list, on the YAML wire
	validate := bytes.Replace(input, []byte("  kind: SetNamespace\n  metadata:\n    name: ns\n  namespace: bench\n"), []byte("  kind: RequireResourceLimits\n  metadata:\n    name: limits\n"), 1)
	bareValidator := &command{name: "bare-validator", want: "kind: Deployment", in: validate, argv: []string{bins.Fn["require-limits"]}}
	// --no-skip: its output is its input, so every run after the first would be skipped (docs/skip.md)
	fnRunValidator := &command{name: "fn-run-yaml-wire-validator", want: "kind: Deployment", in: validate, argv: append(slices.Clone(fnRunYAML.argv), "--no-skip")}
	// and over a list where every second resource has the namespace already: the function gives
	// those back as they were sent, which fn run hands through unread (fn.DecodeOutput)
	half := halfNamespaced(input, "bench")
	bareHalf := &command{name: "bare-half-set", want: "namespace: bench", in: half, argv: bare.argv}
	fnRunHalf := &command{name: "fn-run-half-set", want: "namespace: bench", in: half, argv: fnRun.argv}
	fnRunHalfYAML := &command{name: "fn-run-yaml-wire-half-set", want: "namespace: bench", in: half, argv: fnRunYAML.argv}
	runOnce(&command{want: "namespace: bench", in: input, argv: fnRun.argv}) // fills the cache: downloads are not what is measured
	fnRunValidatorJSON := &command{name: "fn-run-validator", want: "kind: Deployment", in: validate, argv: append(slices.Clone(fnRun.argv), "--no-skip")}
	all := []*command{bare, fnRun, version, fnJSON, fnRunYAML, bareScript, fnRunScript, bareValidator, fnRunValidator, fnRunValidatorJSON, bareHalf, fnRunHalf, fnRunHalfYAML}
	for b.Loop() {
		for range calls { // interleaved, so that all see the same machine
			for _, c := range all {
				runOnce(c)
			}
		}
	}
	n := b.N * calls
	for _, c := range all {
		b.ReportMetric(ms(c.wall, n), "ms-"+c.name+"/run")
		b.ReportMetric(ms(c.cpu, n), "cpu-ms-"+c.name+"/run")
	}
	b.ReportMetric(float64(fnRun.wall)/float64(bare.wall), "x-overhead")
	b.ReportMetric(float64(fnRun.cpu)/float64(bare.cpu), "x-overhead-cpu")
	b.ReportMetric(float64(fnRunYAML.cpu)/float64(bare.cpu), "x-overhead-cpu-yaml-wire")
	b.ReportMetric(float64(fnRunScript.cpu)/float64(bareScript.cpu), "x-overhead-cpu-yaml-wire-script")
	b.ReportMetric(float64(fnRunValidator.cpu)/float64(bareValidator.cpu), "x-overhead-cpu-yaml-wire-validator")
	b.ReportMetric(float64(fnRunValidatorJSON.cpu)/float64(bareValidator.cpu), "x-overhead-cpu-validator")
	b.ReportMetric(float64(fnRunHalf.cpu)/float64(bareHalf.cpu), "x-overhead-cpu-half-set")
	b.ReportMetric(float64(fnRunHalfYAML.cpu)/float64(bareHalf.cpu), "x-overhead-cpu-yaml-wire-half-set")
}

// halfNamespaced gives every second Deployment of fntest.Deployments's list the namespace ns.
func halfNamespaced(list []byte, ns string) []byte {
	var b bytes.Buffer
	even := true
	for line := range bytes.Lines(list) {
		b.Write(line)
		if bytes.HasPrefix(line, []byte("    name: app-")) {
			if even {
				b.WriteString("    namespace: " + ns + "\n")
			}
			even = !even
		}
	}
	return b.Bytes()
}

const starlarkSetNamespace = `
ns = ctx.resource_list["functionConfig"]["namespace"]
for r in ctx.resource_list["items"]:
    r["metadata"]["namespace"] = ns
`

// BenchmarkStarlarkVsExec: set-namespace over 1,000 items as an in-process starlark script against
// the same as an exec function (one process per call, JSON on the wire).
func BenchmarkStarlarkVsExec(b *testing.B) {
	const calls = 10
	rl := benchList(b, 1000)
	var star, ex time.Duration
	for b.Loop() {
		tStar := &timed{f: &starlark.Function{Script: starlarkSetNamespace}, calls: calls}
		tExec := &timed{f: &execfn.Function{Path: bins.Fn["set-namespace"], Format: fn.JSON}, calls: calls}
		interleave(b, calls, rl, tStar, tExec)
		star, ex = star+tStar.total, ex+tExec.total
	}
	n := b.N * calls
	b.ReportMetric(ms(star, n), "ms-starlark/call")
	b.ReportMetric(ms(ex, n), "ms-exec/call")
	b.ReportMetric(float64(star)/float64(ex), "x-starlark/exec")
}
