package bench

import (
	"bytes"
	"io"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// sample is what one process (or one chain of processes) cost: CPU (user and system, its children
// included), wall time and peak resident memory (the largest process's).
type sample struct {
	cpu, wall time.Duration
	rss       int64 // bytes
}

func (s sample) plus(o sample) sample {
	return sample{cpu: s.cpu + o.cpu, wall: s.wall + o.wall, rss: max(s.rss, o.rss)}
}

// proc runs argv with stdin in, writing its standard output to out, and says what it cost.
func proc(b *testing.B, in []byte, out io.Writer, dir string, argv ...string) sample {
	b.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(in)
	cmd.Stdout = out
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	if err != nil {
		b.Fatalf("%v: %v\n%s", argv, err, stderr.Bytes())
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return sample{
		cpu:  cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(),
		wall: wall,
		rss:  ru.Maxrss << 10, // Linux reports KiB
	}
}

// series are the samples of one contender, one per round.
type series []sample

func median[T int64 | time.Duration](s series, f func(sample) T) T {
	v := make([]T, len(s))
	for i, x := range s {
		v[i] = f(x)
	}
	slices.Sort(v)
	return v[len(v)/2]
}

func (s series) cpu() time.Duration { return median(s, func(x sample) time.Duration { return x.cpu }) }
func (s series) wall() time.Duration {
	return median(s, func(x sample) time.Duration { return x.wall })
}
func (s series) rss() int64 { return median(s, func(x sample) int64 { return x.rss }) }

// report reports a series' medians under name.
func (s series) report(b *testing.B, name string) {
	cpus := make([]string, len(s))
	for i, x := range s {
		cpus[i] = strconv.FormatInt(x.cpu.Milliseconds(), 10)
	}
	b.Logf("%s: CPU ms by round: %s", name, strings.Join(cpus, " "))
	b.ReportMetric(float64(s.cpu().Microseconds())/1000, "cpu-ms-"+name)
	b.ReportMetric(float64(s.wall().Microseconds())/1000, "ms-"+name)
	b.ReportMetric(float64(s.rss())/(1<<20), "MiB-"+name)
}

// ratios reports s against base: CPU, wall and peak memory, as x-NAME-cpu, x-NAME-wall, x-NAME-rss,
// and the median of the rounds' own CPU ratios, x-NAME-cpu-by-round.
func (s series) ratios(b *testing.B, base series, name string) {
	b.ReportMetric(float64(s.cpu())/float64(base.cpu()), "x-"+name+"-cpu")
	if len(s) == len(base) {
		// the median of each round's own ratio: the two ran within seconds of each other, so a
		// machine whose speed drifts over the run moves this less than the ratio of the medians
		r := make([]float64, len(s))
		for i := range s {
			r[i] = float64(s[i].cpu) / float64(base[i].cpu)
		}
		slices.Sort(r)
		b.ReportMetric(r[len(r)/2], "x-"+name+"-cpu-by-round")
	}
	b.ReportMetric(float64(s.wall())/float64(base.wall()), "x-"+name+"-wall")
	b.ReportMetric(float64(s.rss())/float64(base.rss()), "x-"+name+"-rss")
}
