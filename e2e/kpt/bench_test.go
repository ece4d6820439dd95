package kpt_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/krm-catalog/krm-catalog/cmd/krm-catalog/cmd"
	"github.com/krm-catalog/krm-catalog/internal/testenv"
)

// benchScripts are three in-process StarlarkRun steps (set a namespace, add a label, add an
// annotation), so that what is measured is the orchestration around the steps, not process starts.
var benchScripts = []string{
	`for r in ctx.resource_list["items"]:
  r["metadata"]["namespace"] = "prod"`,
	`for r in ctx.resource_list["items"]:
  r["metadata"].setdefault("labels", {})["tier"] = "web"`,
	`for r in ctx.resource_list["items"]:
  r["metadata"].setdefault("annotations", {})["owner"] = "team-blue"`,
}

// benchPackage writes a package of n Deployments (in files of 100) with a Kptfile whose three
// mutators are the scripts, each in its own local-config file.
func benchPackage(b *testing.B, dir string, n int) []string {
	b.Helper()
	var kf strings.Builder
	kf.WriteString("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: bench\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\npipeline:\n  mutators:\n")
	var configs []string
	for i, s := range benchScripts {
		name := fmt.Sprintf("step%d.yaml", i)
		cfg := fmt.Sprintf("apiVersion: fn.kpt.dev/v1alpha1\nkind: StarlarkRun\nmetadata:\n  name: step%d\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\nsource: |\n  %s\n", i, strings.ReplaceAll(s, "\n", "\n  "))
		write(b, filepath.Join(dir, name), cfg)
		fmt.Fprintf(&kf, "    - image: registry.example.com/kpt-fn/starlark:v0.5\n      configPath: %s\n", name)
		configs = append(configs, filepath.Join(dir, name))
	}
	write(b, filepath.Join(dir, "Kptfile"), kf.String())
	for f := 0; f*100 < n; f++ {
		var doc strings.Builder
		for i := f * 100; i < min(n, (f+1)*100); i++ {
			if i > f*100 {
				doc.WriteString("---\n")
			}
			fmt.Fprintf(&doc, `# web tier %d
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web-%d # the public face
  labels:
    app: web
spec:
  replicas: 3
  template:
    spec:
      containers:
      - name: web
        image: "nginx:1.25"
        args: ["--port=8080", 'verbose']
        resources:
          limits: {cpu: 500m, memory: 128Mi}
`, i, i)
		}
		write(b, filepath.Join(dir, fmt.Sprintf("apps/deployments-%02d.yaml", f)), doc.String())
	}
	return configs
}

func write(b *testing.B, p, s string) {
	b.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkRenderVsFnRun renders a 1,000-resource package through a 3-step Kptfile pipeline and,
// in the same run, runs the same three configs over the same package with one `fn run`; both
// write the package back. The two alternate (and swap order) on fresh copies so that machine load
// hits both alike; render/fnrun is the ratio of their times.
func BenchmarkRenderVsFnRun(b *testing.B) {
	src := b.TempDir()
	configs := benchPackage(b, src, 1000)
	ctx := context.Background()
	cache := b.TempDir()
	// wall time, and the CPU time of the process (all threads) during the call: on a shared,
	// loaded machine the CPU time says more about the work done than the wall time does
	var renderCPU, fnrunCPU time.Duration
	run := func(cpu *time.Duration, args ...string) time.Duration {
		var out, errb bytes.Buffer
		before := cpuTime(b)
		start := time.Now()
		if code := cmd.Main(ctx, args, cmd.IO{In: strings.NewReader(""), Out: &out, Err: &errb}); code != 0 {
			b.Fatalf("krm-catalog %s: exit %d\n%s", strings.Join(args, " "), code, errb.String())
		}
		wall := time.Since(start)
		*cpu += cpuTime(b) - before
		return wall
	}
	var render, fnrun time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		r, f := filepath.Join(b.TempDir(), "r"), filepath.Join(b.TempDir(), "f")
		testenv.CopyTree(b, src, r)
		testenv.CopyTree(b, src, f)
		args := []string{"fn", "run", f, "--cache-dir", cache}
		for _, c := range configs {
			args = append(args, "--fn-config", filepath.Join(f, filepath.Base(c)))
		}
		b.StartTimer()
		// alternate which goes first, so that neither always inherits the other's garbage
		if i%2 == 0 {
			render += run(&renderCPU, "fn", "render", r, "--cache-dir", cache)
			fnrun += run(&fnrunCPU, args...)
		} else {
			fnrun += run(&fnrunCPU, args...)
			render += run(&renderCPU, "fn", "render", r, "--cache-dir", cache)
		}
	}
	b.ReportMetric(float64(render.Nanoseconds())/float64(b.N), "render-ns/op")
	b.ReportMetric(float64(fnrun.Nanoseconds())/float64(b.N), "fnrun-ns/op")
	b.ReportMetric(float64(render)/float64(fnrun), "render/fnrun")
	b.ReportMetric(float64(renderCPU)/float64(fnrunCPU), "render/fnrun-cpu")
}

func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
