package cmd

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/krm-catalog/krm-catalog/oci"
	"github.com/krm-catalog/krm-catalog/oci/registrytest"
)

// BenchmarkOCI compares krm-catalog with the oras CLI moving a 50 MB exec binary through a
// registry started here (distribution, in-process, storing on disk), both as processes,
// alternating within each iteration so that both see the same machine load. It reports each
// side's time per operation and the ratio (target: at most 1.1), and the time of pulls by digest
// served from the cache (target: under 20 ms). docs/benchmarks.md records the figures.
//
//	KRM_CATALOG_TOOLS_BIN="$(.ci/tools.sh)" go test ./cmd/krm-catalog/cmd -run '^$' -bench BenchmarkOCI -benchtime 10x
func BenchmarkOCI(b *testing.B) {
	oras := tool(b, "oras")
	dir := b.TempDir()
	kc := filepath.Join(dir, "krm-catalog")
	build := exec.Command("go", "build", "-o", kc, "..")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("build krm-catalog: %v\n%s", err, out)
	}
	reg := registrytest.DistributionOnDisk(b)
	bin := filepath.Join(dir, "fn")
	f, err := os.Create(bin)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.CopyN(f, rand.Reader, 50<<20); err != nil {
		b.Fatal(err)
	}
	f.Close()
	run := func(b *testing.B, env []string, name string, args ...string) time.Duration {
		b.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), env...)
		start := time.Now()
		out, err := cmd.CombinedOutput()
		d := time.Since(start)
		if err != nil {
			b.Fatalf("%s %v: %v\n%s", filepath.Base(name), args, err, out)
		}
		return d
	}
	cacheEnv := func(i int, what string) []string {
		return []string{"XDG_CACHE_HOME=" + filepath.Join(dir, fmt.Sprintf("cache-%s-%d", what, i)), "DOCKER_CONFIG=" + filepath.Join(dir, "docker")}
	}
	// Process start-up of each binary, measured first; the other comparisons also report their
	// ratio without it ("net"), which is the work of the command itself.
	var startOurs, startTheirs time.Duration
	report := func(b *testing.B, ours, theirs time.Duration) {
		n := float64(b.N)
		b.ReportMetric(float64(ours.Microseconds())/1000/n, "ms/krm-catalog")
		b.ReportMetric(float64(theirs.Microseconds())/1000/n, "ms/oras")
		b.ReportMetric(float64(ours)/float64(theirs), "ratio")
		if startOurs > 0 && b.Name() != "BenchmarkOCI/startup" {
			net := (float64(ours)/n - float64(startOurs)) / (float64(theirs)/n - float64(startTheirs))
			b.ReportMetric(net, "net-ratio")
		}
		b.ReportMetric(0, "ns/op") // the metrics above are the result
	}
	// Starting the process, which the other comparisons include: krm-catalog is one binary for
	// every command and the service, and initialises more packages than oras.
	b.Run("startup", func(b *testing.B) {
		var ours, theirs time.Duration
		for i := 0; i < b.N; i++ {
			ours += run(b, nil, kc, "version")
			theirs += run(b, nil, oras, "version")
		}
		report(b, ours, theirs)
		startOurs, startTheirs = ours/time.Duration(b.N), theirs/time.Duration(b.N)
	})
	// A repository per push, so that every push uploads the whole blob: numbered across the runs
	// of the sub-benchmark (with b.N = 1, then b.N = 10, -count times), or a later run would find
	// the blob in place and upload nothing.
	pushes := 0
	pushBoth := func(b *testing.B, repo func(who string) string) (ours, theirs time.Duration) {
		ours = run(b, cacheEnv(0, "push"), kc, "push", "--type", "exec", "--platform", "linux/amd64=fn", repo("ours"))
		theirs = run(b, nil, oras, "push", "--plain-http", repo("oras"), "fn:"+oci.MediaTypeExec)
		return ours, theirs
	}
	b.Run("push-50MB-exec", func(b *testing.B) {
		var ours, theirs time.Duration
		for i := 0; i < b.N; i++ {
			pushes++
			o, t := pushBoth(b, func(who string) string { return fmt.Sprintf("%s/bench/push-%s-%d:v1", reg.Host, who, pushes) })
			ours, theirs = ours+o, theirs+t
		}
		report(b, ours, theirs)
	})
	// Pushing again what the registry has: both hash the binary, ask, and upload nothing; what is
	// left is start-up and the requests (krm-catalog's exec artifact has an index besides the
	// manifest).
	b.Run("push-50MB-exec-again", func(b *testing.B) {
		repo := func(who string) string { return fmt.Sprintf("%s/bench/again-%s:v1", reg.Host, who) }
		pushBoth(b, repo)
		var ours, theirs time.Duration
		for i := 0; i < b.N; i++ {
			o, t := pushBoth(b, repo)
			ours, theirs = ours+o, theirs+t
		}
		report(b, ours, theirs)
	})
	ref := reg.Host + "/bench/pull:v1"
	run(b, cacheEnv(0, "seed"), kc, "push", "--type", "exec", "--platform", "linux/amd64=fn", ref)
	pull := func(b *testing.B, extra ...string) {
		var ours, theirs time.Duration
		for i := 0; i < b.N; i++ {
			out := fmt.Sprintf("out-%s-%d", b.Name()[len("BenchmarkOCI/"):], i)
			args := append([]string{"pull", "--platform", "linux/amd64", "-o", out + "-ours"}, extra...)
			// A fresh cache for every pull: this measures the download, not the cache.
			ours += run(b, cacheEnv(i, "pull"), kc, append(args, ref)...)
			theirs += run(b, nil, oras, "pull", "--plain-http", "--platform", "linux/amd64", "-o", out+"-oras", ref)
			for _, p := range []string{out + "-ours", out + "-oras", fmt.Sprintf("cache-pull-%d", i)} {
				os.RemoveAll(filepath.Join(dir, p))
			}
		}
		report(b, ours, theirs)
	}
	b.Run("pull-50MB-exec", func(b *testing.B) { pull(b) })
	b.Run("pull-50MB-exec-no-cache", func(b *testing.B) { pull(b, "--no-cache") })

	// Cached pulls by digest: the command as a process, and the library call it makes (what a
	// runner embedding krm-catalog pays), of a catalog and of the 50 MB binary.
	catRef := reg.Host + "/bench/catalog:v1"
	catalogFile, err := filepath.Abs("../../../catalog/testdata/reference/catalog.yaml")
	if err != nil {
		b.Fatal(err)
	}
	run(b, nil, kc, "push", catRef, catalogFile)
	warm := cacheEnv(0, "warm")
	for _, tc := range []struct{ name, ref string }{{"catalog", catRef}, {"exec-50MB", ref}} {
		res, err := oci.NewClient(oci.Options{}).Resolve(context.Background(), tc.ref, nil)
		if err != nil {
			b.Fatal(err)
		}
		pinned := tc.ref[:strings.LastIndex(tc.ref, ":")] + "@" + res.Root.Digest.String()
		run(b, warm, kc, "pull", "--platform", "linux/amd64", "-o", "out-warm", pinned)
		b.Run("cached-pull-by-digest-"+tc.name+"-process", func(b *testing.B) {
			var total time.Duration
			for i := 0; i < b.N; i++ {
				total += run(b, warm, kc, "pull", "--platform", "linux/amd64", "-o", "out-warm", pinned)
			}
			b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "ms/pull")
			b.ReportMetric(0, "ns/op")
		})
		b.Run("cached-pull-by-digest-"+tc.name+"-library", func(b *testing.B) {
			cache, err := oci.OpenCache(context.Background(), filepath.Join(dir, "cache-warm-0", "krm-catalog", "oci"))
			if err != nil {
				b.Fatal(err)
			}
			c := oci.NewClient(oci.Options{Cache: cache})
			amd64, _ := oci.ParsePlatform("linux/amd64")
			start := time.Now()
			for i := 0; i < b.N; i++ {
				r, err := c.Pull(context.Background(), pinned, oci.PullOptions{Dir: filepath.Join(dir, "out-lib"), Platform: &amd64})
				if err != nil || !r.Cached {
					b.Fatalf("cached pull: %v (cached %v)", err, r.Cached)
				}
			}
			b.ReportMetric(float64(time.Since(start).Microseconds())/1000/float64(b.N), "ms/pull")
			b.ReportMetric(0, "ns/op")
		})
	}
}
