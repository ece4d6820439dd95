package upgrade

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/krm-catalog/krm-catalog/internal/testenv"
)

// benchTree writes n packages as a platform team's repository holds them: each a Kptfile with
// three image steps and a validator (comments, a flow mapping), their configs, two resources, and
// every tenth a subpackage whose step is found by kind. It returns the number of bytes written.
func benchTree(tb testing.TB, dir string, n int) int64 {
	tb.Helper()
	var total int64
	write := func(name, content string) {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			tb.Fatal(err)
		}
		total += int64(len(content))
	}
	local := "  annotations:\n    config.kubernetes.io/local-config: \"true\"\n"
	for i := range n {
		pkg := fmt.Sprintf("team-%d/app-%d", i%20, i)
		write(pkg+"/Kptfile", fmt.Sprintf(`# app %[1]d, owned by team %[2]d
apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: app-%[1]d
%[3]sinfo:
  description: application %[1]d
pipeline:
  mutators:
    # labels first, then the namespace
    - image: registry.example.com/fns/set-labels:1.0.0 # pinned when tested
      configPath: labels.yaml
    - name: namespace
      image: "registry.example.com/fns/set-namespace:1.0.0"
      configPath: namespace.yaml
  validators:
    - {image: registry.example.com/fns/require-limits:1.0.0, configPath: limits.yaml}
`, i, i%20, local))
		write(pkg+"/labels.yaml", "apiVersion: fn.example.com/v1\nkind: SetLabels\nmetadata:\n  name: labels\n"+local+fmt.Sprintf("labels:\n  app: app-%d\n  team: team-%d\n", i, i%20))
		ns := fmt.Sprintf("ns%d", i%100)
		if i%3 == 0 {
			ns = fmt.Sprintf("namespace-%d", i) // longer than 1.1.0 accepts: held
		}
		write(pkg+"/namespace.yaml", "apiVersion: fn.example.com/v1\nkind: SetNamespace\nmetadata:\n  name: namespace\n"+local+"namespace: "+ns+"\n")
		write(pkg+"/limits.yaml", "apiVersion: fn.example.com/v1\nkind: RequireResourceLimits\nmetadata:\n  name: limits\n"+local+"require: [cpu, memory]\n")
		write(pkg+"/deployment.yaml", fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: app-%[1]d
  labels:
    app: app-%[1]d
spec:
  replicas: 3
  template:
    spec:
      containers:
      - name: main
        image: registry.example.com/app-%[1]d:v1.2.3
        resources:
          limits: {cpu: 500m, memory: 256Mi}
`, i))
		write(pkg+"/service.yaml", fmt.Sprintf("apiVersion: v1\nkind: Service\nmetadata:\n  name: app-%d\nspec:\n  ports:\n  - port: 80\n", i))
		if i%10 == 0 {
			write(pkg+"/db/Kptfile", "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: db\n"+local+"pipeline:\n  mutators:\n  - configPath: owner.yaml\n")
			write(pkg+"/db/owner.yaml", "apiVersion: fn.example.com/v1\nkind: SetAnnotations\nmetadata:\n  name: owner\n"+local+"annotations:\n  example.com/owner: db\n")
		}
	}
	return total
}

// readTree is the baseline: every file of the tree read once, as any tool that looks at the
// packages must.
func readTree(tb testing.TB, dir string) int64 {
	var n int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		n += int64(len(data))
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

// cpuTime is the processor time this process has used, user and system: on a shared machine
// it says what a call costs when the wall clock says mostly how busy the others are.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// measure runs f once and returns its time (wall clock and processor), the bytes it allocated,
// and the heap still live after it (what it returned kept alive).
func measure(f func() any) (time.Duration, time.Duration, uint64, uint64) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start, cpu := time.Now(), cpuTime()
	kept := f()
	elapsed, cpu := time.Since(start), cpuTime()-cpu
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	runtime.GC()
	runtime.ReadMemStats(&after)
	var live uint64
	if after.HeapAlloc > before.HeapAlloc {
		live = after.HeapAlloc - before.HeapAlloc
	}
	runtime.KeepAlive(kept)
	return elapsed, cpu, alloc, live
}

// BenchmarkUpgrade1000 runs fn outdated, fn upgrade --dry-run and fn upgrade over 1,000 packages
// (3,100 steps), each call interleaved with the baseline, reading the same tree once, and prints
// the ratios of time and of bytes allocated, and the heap each call leaves live (its report).
//
//	go test ./fn/upgrade -run '^$' -bench Upgrade1000 -benchtime 3x -count 3
func BenchmarkUpgrade1000(b *testing.B) {
	const packages = 1000
	src := b.TempDir()
	size := benchTree(b, src, packages)
	r := testResolver(b, releases3...)
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		write bool
		call  func(dir string) (*Report, error)
	}{
		{"outdated", false, func(dir string) (*Report, error) {
			return List(ctx, []string{dir}, Options{Resolver: r})
		}},
		{"upgrade-dry-run", false, func(dir string) (*Report, error) {
			return Upgrade(ctx, []string{dir}, Options{Resolver: r, To: Latest})
		}},
		{"upgrade", true, func(dir string) (*Report, error) {
			return Upgrade(ctx, []string{dir}, Options{Resolver: r, To: Latest, Write: true})
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var tCall, tBase, cCall, cBase time.Duration
			var aCall, aBase, live uint64
			var steps int
			for b.Loop() {
				dir := src
				if tc.write {
					b.StopTimer()
					dir = b.TempDir()
					testenv.CopyTree(b, src, dir)
					b.StartTimer()
				}
				d, c, a, _ := measure(func() any { return readTree(b, dir) })
				tBase, cBase, aBase = tBase+d, cBase+c, aBase+a
				var rep *Report
				d, c, a, l := measure(func() any {
					var err error
					if rep, err = tc.call(dir); err != nil {
						b.Fatal(err)
					}
					return rep
				})
				tCall, cCall, aCall, live = tCall+d, cCall+c, aCall+a, max(live, l)
				steps = rep.Summary.Steps
				if tc.write && rep.Summary.Upgraded == 0 {
					b.Fatal("nothing upgraded")
				}
			}
			n := float64(b.N)
			b.ReportMetric(float64(steps), "steps")
			b.ReportMetric(tCall.Seconds()/n, "s/call")
			b.ReportMetric(float64(tCall)/float64(tBase), "x-time-of-read")
			b.ReportMetric(cCall.Seconds()/n, "cpu-s/call")
			b.ReportMetric(float64(cCall)/float64(cBase), "x-cpu-of-read")
			b.ReportMetric(float64(aCall)/n/(1<<20), "MB-alloc/call")
			b.ReportMetric(float64(aCall)/float64(aBase), "x-alloc-of-read")
			b.ReportMetric(float64(live)/(1<<20), "MB-live-after")
			b.ReportMetric(float64(size)/(1<<20), "MB-tree")
		})
	}
}

// Each file is read once per call, whichever steps and packages name it.
func TestEachFileReadOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	benchTree(t, dir, 30)
	// a config two packages share
	shared := filepath.Join(dir, "shared.yaml")
	if err := os.WriteFile(shared, []byte("apiVersion: fn.example.com/v1\nkind: SetLabels\nmetadata:\n  name: shared\n  annotations:\n    config.kubernetes.io/function: |\n      container:\n        image: registry.example.com/fns/set-labels:1.0.0\nlabels:\n  a: b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"k1", "k2"} {
		if err := os.MkdirAll(filepath.Join(dir, k), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, k, "kustomization.yaml"), []byte("transformers:\n- ../shared.yaml\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	u, err := newRun(context.Background(), Options{Resolver: testResolver(t, releases3...), To: Latest})
	if err != nil {
		t.Fatal(err)
	}
	steps, err := u.scan(context.Background(), []string{dir}, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := u.plan(steps); err != nil {
		t.Fatal(err)
	}
	for path, f := range u.files.m {
		if f.reads != 1 {
			t.Errorf("%s read %d times", path, f.reads)
		}
	}
	// the Kptfiles, configs, subpackages, the two Kustomizations and the shared config; never
	// the resources
	if want := 30*4 + 3*2 + 2 + 1; len(u.files.m) != want {
		t.Errorf("%d files read, want %d", len(u.files.m), want)
	}
	for path := range u.files.m {
		if strings.HasSuffix(path, "deployment.yaml") || strings.HasSuffix(path, "service.yaml") {
			t.Errorf("read %s, which names no function", path)
		}
	}
	var shares int
	for _, s := range steps {
		if s.File == shared && s.Status == Upgraded {
			shares++
		}
	}
	if shares != 2 {
		t.Errorf("the shared config is upgraded for %d kustomizations, want 2", shares)
	}
}
