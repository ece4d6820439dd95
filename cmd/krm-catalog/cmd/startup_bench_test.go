//go:build linux

package cmd

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/krm-catalog/krm-catalog/oci"
	"github.com/krm-catalog/krm-catalog/oci/registrytest"
)

// BenchmarkStartup compares the start-up of krm-catalog's commands that run most often (in
// pipelines, and once per function call under kustomize) with the start-up of the oras CLI
// (`oras version`), turn by turn within each iteration so that both see the same machine load.
// Each command does its real, smallest job: `version`; `fn run -` and `fn proxy` of an inline
// starlark function over an empty list; a pull by digest served from the cache. It reports each
// command's median time and its ratio to the median of `oras version`, the same ratio of their
// median CPU time (user and system: the time of one run swings with the machine's load, by
// 0.8-1.7x between runs of this benchmark at a load of 4-9, the CPU time much less), and the peak
// resident memory of each. It is a record, not a goal: the start-up targets (1.0x `oras version`,
// under 20 MiB) were dropped, as the one binary stays (docs/benchmarks.md, Start-up). krm-catalog is
// built as `go install ./cmd/krm-catalog` builds it, in the environment of the test (CGO_ENABLED
// included). docs/benchmarks.md records the figures.
//
//	KRM_CATALOG_TOOLS_BIN="$(.ci/tools.sh)" go test ./cmd/krm-catalog/cmd -run '^$' -bench Startup -benchtime 20x -count 3
func BenchmarkStartup(b *testing.B) {
	oras := tool(b, "oras")
	dir := b.TempDir()
	kc := filepath.Join(dir, "krm-catalog")
	if out, err := exec.Command("go", "build", "-o", kc, "..").CombinedOutput(); err != nil {
		b.Fatalf("build krm-catalog: %v\n%s", err, out)
	}
	if fi, err := os.Stat(kc); err == nil {
		b.Logf("krm-catalog binary: %.1f MB", float64(fi.Size())/1e6)
	}
	cfg := filepath.Join(dir, "starlark.yaml")
	const starlarkRun = "apiVersion: fn.kpt.dev/v1alpha1\nkind: StarlarkRun\nmetadata:\n  name: noop\nsource: |\n  pass\n"
	if err := os.WriteFile(cfg, []byte(starlarkRun), 0o644); err != nil {
		b.Fatal(err)
	}
	proxyIn := []byte("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\nfunctionConfig:\n" +
		indent(starlarkRun, "  "))
	emptyList := []byte("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\n")

	// a catalog pushed to a registry started here, pulled once by digest to fill the cache
	reg := registrytest.Distribution(b)
	env := []string{"XDG_CACHE_HOME=" + filepath.Join(dir, "cache"), "DOCKER_CONFIG=" + filepath.Join(dir, "docker")}
	catalogFile, err := filepath.Abs("../../../catalog/testdata/reference/catalog.yaml")
	if err != nil {
		b.Fatal(err)
	}
	ref := reg.Host + "/bench/catalog:v1"
	if _, err := runProcess(dir, env, nil, kc, "push", ref, catalogFile); err != nil {
		b.Fatal(err)
	}
	res, err := oci.NewClient(oci.Options{}).Resolve(context.Background(), ref, nil)
	if err != nil {
		b.Fatal(err)
	}
	pinned := reg.Host + "/bench/catalog@" + res.Root.Digest.String()
	pull := []string{"pull", "-o", "out", pinned}
	if _, err := runProcess(dir, env, nil, kc, pull...); err != nil {
		b.Fatal(err)
	}

	type command struct {
		name  string
		bin   string
		stdin []byte
		args  []string
		wall  []time.Duration
		cpu   []time.Duration
		maxKB int64
	}
	// Both binaries are run from copies written alike: the page cache holds a file written in large
	// writes (the linker's) in large folios, which the kernel maps whole on a fault, so the peak
	// memory of one binary moved by 2-3 MiB with how it had been written.
	oras, kc = writtenAlike(b, oras, filepath.Join(dir, "oras")), writtenAlike(b, kc, kc+".copy")
	baseline := &command{name: "oras-version", bin: oras, args: []string{"version"}}
	commands := []*command{
		baseline,
		{name: "version", bin: kc, args: []string{"version"}},
		{name: "fn-run", bin: kc, stdin: emptyList, args: []string{"fn", "run", "-", "--fn-config", cfg}},
		{name: "fn-proxy", bin: kc, stdin: proxyIn, args: []string{"fn", "proxy"}},
		{name: "pull-cached", bin: kc, args: pull},
	}
	for b.Loop() {
		for _, c := range commands {
			r, err := runProcess(dir, env, c.stdin, c.bin, c.args...)
			if err != nil {
				b.Fatal(err)
			}
			c.wall, c.cpu = append(c.wall, r.wall), append(c.cpu, r.cpu)
		}
	}
	// Peak memory, through GNU time: a child of this process inherits its whole footprint in
	// ru_maxrss (Go starts children with vfork, and the kernel counts the parent's pages up to the
	// exec), while time forks from its own small one.
	timeBin, err := exec.LookPath("/usr/bin/time")
	if err != nil {
		b.Log("no /usr/bin/time: peak memory not measured (Debian: apt-get install time)")
	}
	for _, c := range commands {
		for range 3 {
			if timeBin == "" {
				break
			}
			kb, err := peakKiB(dir, env, c.stdin, timeBin, c.bin, c.args...)
			if err != nil {
				b.Fatal(err)
			}
			c.maxKB = max(c.maxKB, kb)
		}
	}
	for _, c := range commands {
		b.ReportMetric(float64(median(c.wall).Microseconds())/1000, "ms/"+c.name)
		b.ReportMetric(float64(median(c.cpu).Microseconds())/1000, "cpu-ms/"+c.name)
		if c.maxKB > 0 {
			b.ReportMetric(float64(c.maxKB)/1024, "MiB/"+c.name)
		}
		if c != baseline {
			b.ReportMetric(float64(median(c.wall))/float64(median(baseline.wall)), "x-oras/"+c.name)
			b.ReportMetric(float64(median(c.cpu))/float64(median(baseline.cpu)), "x-oras-cpu/"+c.name)
		}
	}
	b.ReportMetric(0, "ns/op") // the metrics above are the result
}

// median is the median of ds, which it sorts.
func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	if n := len(ds); n%2 == 0 {
		return (ds[n/2-1] + ds[n/2]) / 2
	}
	return ds[len(ds)/2]
}

// processRun is how long a process took, and the CPU time (user and system) it used.
type processRun struct{ wall, cpu time.Duration }

// runProcess runs bin in dir and returns how long it took.
func runProcess(dir string, env []string, stdin []byte, bin string, args ...string) (processRun, error) {
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(slices.Clip(os.Environ()), env...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	d := time.Since(start)
	if err != nil {
		return processRun{}, fmt.Errorf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, stderr.String())
	}
	return processRun{wall: d, cpu: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()}, nil
}

// peakKiB runs bin under GNU time and returns its peak resident memory in KiB.
func peakKiB(dir string, env []string, stdin []byte, timeBin, bin string, args ...string) (int64, error) {
	report := filepath.Join(dir, "time.out")
	if _, err := runProcess(dir, env, stdin, timeBin, append([]string{"-f", "%M", "-o", report, bin}, args...)...); err != nil {
		return 0, err
	}
	out, err := os.ReadFile(report)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
}

func indent(s, prefix string) string {
	lines := strings.SplitAfter(strings.TrimSuffix(s, "\n"), "\n")
	return prefix + strings.Join(lines, prefix) + "\n"
}

// writtenAlike copies the executable src to dst in 4 KiB writes (a loop: io.Copy would hand the
// copy to the kernel) and returns dst.
func writtenAlike(b *testing.B, src, dst string) string {
	b.Helper()
	in, err := os.Open(src)
	if err != nil {
		b.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 4096)
	for {
		n, rerr := in.Read(buf)
		if _, err := out.Write(buf[:n]); err != nil {
			b.Fatal(err)
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			b.Fatal(rerr)
		}
	}
	if err := out.Close(); err != nil {
		b.Fatal(err)
	}
	return dst
}
