package functions

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/krm-catalog/krm-catalog/fn/kpt"
	"github.com/krm-catalog/krm-catalog/internal/testenv"
)

// BenchmarkRerenderUnchanged renders a package of 1,000 Deployments (10 files, comments, flow
// sequences) through three idempotent catalog steps that rewrite one field (set-namespace
// staging, set-labels, set-namespace prod: no step's input is its own last output, so the per-step
// skip never fires), then renders it again unchanged, and, in the same round, again with
// --no-skip. Each round starts from a fresh copy (a new package, so the first render is a real
// one); the cache keeps the executables, fetched before timing. Target: the re-render at most
// 0.2x the first render (x-rerender).
//
//	go test ./e2e/functions -run '^$' -bench RerenderUnchanged -benchtime 5x -count 3
func BenchmarkRerenderUnchanged(b *testing.B) {
	pub := publish(b, nil)
	src := b.TempDir()
	writeFile(b, src, "Kptfile", `apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: bench
  annotations:
    config.kubernetes.io/local-config: "true"
pipeline:
  mutators:
    - configPath: staging.yaml
    - configPath: labels.yaml
    - configPath: prod.yaml
`)
	local := "  annotations:\n    config.kubernetes.io/local-config: \"true\"\n"
	writeFile(b, src, "staging.yaml", "apiVersion: fn.example.com/v1\nkind: SetNamespace\nmetadata:\n  name: staging\n"+local+"namespace: staging\n")
	writeFile(b, src, "labels.yaml", "apiVersion: fn.example.com/v1\nkind: SetLabels\nmetadata:\n  name: team\n"+local+"labels:\n  team: blue\n")
	writeFile(b, src, "prod.yaml", "apiVersion: fn.example.com/v1\nkind: SetNamespace\nmetadata:\n  name: prod\n"+local+"namespace: prod\n")
	for f := range 10 {
		var doc strings.Builder
		for i := f * 100; i < (f+1)*100; i++ {
			fmt.Fprintf(&doc, `---
# web tier %[1]d
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web-%[1]d # the public face
  labels:
    app: web-%[1]d
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
`, i)
		}
		writeFile(b, src, fmt.Sprintf("apps/deployments-%02d.yaml", f), doc.String())
	}
	cache := b.TempDir()
	render := func(dir string, extra ...string) (time.Duration, bool) {
		args := append([]string{"fn", "render", dir, "--catalog", pub.catalog, "--trusted-catalog", pub.catalog, "--cache-dir", cache}, extra...)
		start := time.Now()
		out := run{env: pub.env}.krm(b, args...)
		d := time.Since(start)
		if out.code != 0 {
			b.Fatal(out)
		}
		return d, strings.Contains(out.stderr, kpt.MemoMessage)
	}
	warm := filepath.Join(b.TempDir(), "p")
	testenv.CopyTree(b, src, warm)
	render(warm) // fetches the executables: downloads are not what is measured
	var first, again, forced time.Duration
	for b.Loop() {
		b.StopTimer()
		dir := filepath.Join(b.TempDir(), "p")
		testenv.CopyTree(b, src, dir)
		b.StartTimer()
		d, memo := render(dir)
		if memo {
			b.Fatal("the first render of a new package ran nothing")
		}
		first += d
		if d, memo = render(dir); !memo {
			b.Fatal("the re-render of the unchanged package ran")
		}
		again += d
		if d, memo = render(dir, "--no-skip"); memo {
			b.Fatal("--no-skip ran nothing")
		}
		forced += d
	}
	n := float64(b.N)
	b.ReportMetric(float64(first.Milliseconds())/n, "ms-first")
	b.ReportMetric(float64(again.Milliseconds())/n, "ms-rerender")
	b.ReportMetric(float64(forced.Milliseconds())/n, "ms-no-skip")
	b.ReportMetric(float64(again)/float64(first), "x-rerender")
	b.ReportMetric(float64(forced)/float64(first), "x-no-skip")
}
