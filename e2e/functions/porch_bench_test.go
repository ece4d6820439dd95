package functions

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/krm-catalog/krm-catalog/fn/evaluator/evaluatorpb"
)

// rss reads a process's resident set (VmRSS) and its peak (VmHWM), in MiB.
func rss(pid int) (now, peak float64) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ":")
		kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
		switch k {
		case "VmRSS":
			now = kb / 1024
		case "VmHWM":
			peak = kb / 1024
		}
	}
	return now, peak
}

// peakDuring runs attack for d and returns the highest VmRSS sampled meanwhile (every 50 ms).
func peakDuring(pid int, d time.Duration, attack func(ctx context.Context)) float64 {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var peak atomic.Uint64
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			if now, _ := rss(pid); uint64(now) > peak.Load() {
				peak.Store(uint64(now))
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	attack(ctx)
	cancel()
	<-done
	return float64(peak.Load())
}

// denseList is a ResourceList of about size bytes whose one item holds a flow sequence of [0]
// elements: many nodes per byte.
func denseList(size int) []byte {
	var b bytes.Buffer
	b.WriteString("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: dense\n  data:\n    x: [")
	for b.Len() < size-8 {
		b.WriteString("[0],")
	}
	b.WriteString("[0]]\n")
	return b.Bytes()
}

// BenchmarkFnServeHostileClients reruns, for a bounded time each, three attacks on fn serve and
// reports its resident memory (MiB) against its idle RSS in the same run:
//
//   - unknown-image: 8 loops sending a 6 MiB node-dense ResourceList for an image nothing lists;
//
//   - spellings: as many calls as 60 s allow, each naming the listed digest under a new tag;
//
//   - stalled: 40 streams, each on its own connection, that send 5.5 MiB of a 6 MiB message and
//     stall, held past --receive-timeout (30 s) for 45 s.
//
//     go test ./e2e/functions -run '^$' -bench FnServeHostileClients -benchtime 1x
func BenchmarkFnServeHostileClients(b *testing.B) {
	s := startFnServe(b)
	pid := s.cmd.Process.Pid
	client := evaluatorpb.NewFunctionEvaluatorClient(s.dial(b))
	// warm: the function server started, the catalog read
	if _, err := client.EvaluateFunction(context.Background(), &evaluatorpb.EvaluateFunctionRequest{Image: evaluatorImage, ResourceList: denseList(1 << 10)}); err != nil {
		b.Logf("warm-up call: %v", err)
	}
	for b.Loop() {
		idle, _ := rss(pid)
		b.ReportMetric(idle, "MiB-idle")

		dense := denseList(6<<20 - 1<<10)
		unknown := peakDuring(pid, 30*time.Second, func(ctx context.Context) {
			var wg sync.WaitGroup
			for range 8 {
				wg.Go(func() {
					for ctx.Err() == nil {
						_, _ = client.EvaluateFunction(ctx, &evaluatorpb.EvaluateFunctionRequest{Image: "registry.example.com/krm-fn/unknown:v1", ResourceList: dense})
					}
				})
			}
			wg.Wait()
		})
		b.ReportMetric(unknown, "MiB-unknown-image")

		var names atomic.Int64
		digest := evaluatorImage[strings.Index(evaluatorImage, "@"):]
		spellings := peakDuring(pid, 60*time.Second, func(ctx context.Context) {
			var wg sync.WaitGroup
			for w := range 8 {
				wg.Go(func() {
					for i := 0; ctx.Err() == nil; i++ {
						img := fmt.Sprintf("registry.example.com/krm-fn/set-namespace:t%d-%d%s", w, i, digest)
						// an unreadable list: the call ends right after the image is resolved
						_, _ = client.EvaluateFunction(ctx, &evaluatorpb.EvaluateFunctionRequest{Image: img, ResourceList: []byte("{")})
						names.Add(1)
					}
				})
			}
			wg.Wait()
		})
		b.ReportMetric(spellings, "MiB-spellings")
		b.ReportMetric(float64(names.Load()), "spellings-sent")

		stalled := peakDuring(pid, 45*time.Second, func(ctx context.Context) {
			var wg sync.WaitGroup
			for range 40 {
				wg.Go(func() { stallStream(ctx, s.addr, 6<<20, 5<<20+512<<10) })
			}
			wg.Wait()
		})
		b.ReportMetric(stalled, "MiB-stalled-streams")
		var cancelled float64
		fmt.Sscanf(strings.TrimPrefix(s.metric(b, "krm_catalog_evaluator_receive_timeouts_total "), "krm_catalog_evaluator_receive_timeouts_total "), "%g", &cancelled)
		b.ReportMetric(cancelled, "streams-cancelled")
	}
	_, hwm := rss(pid)
	b.ReportMetric(hwm, "MiB-peak-of-run")
}

// stallStream sends, over a connection of its own (an HTTP/2 client that keeps to flow control),
// an EvaluateFunction request announcing a message of size bytes, sends sent of them, and stalls
// until ctx ends.
func stallStream(ctx context.Context, addr string, size, sent int) {
	tr := &http2.Transport{AllowHTTP: true, DialTLSContext: func(ctx context.Context, network, addr string, _ *tls.Config) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}}
	defer tr.CloseIdleConnections()
	msg := make([]byte, 5+sent)
	binary.BigEndian.PutUint32(msg[1:5], uint32(size))
	body := io.MultiReader(bytes.NewReader(msg), stall{ctx})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/evaluator.FunctionEvaluator/EvaluateFunction", body)
	if err != nil {
		return
	}
	req.Header.Set("Content-Type", "application/grpc")
	req.Header.Set("TE", "trailers")
	if resp, err := tr.RoundTrip(req); err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// stall is a reader that gives nothing until its context ends.
type stall struct{ ctx context.Context }

func (s stall) Read([]byte) (int, error) {
	<-s.ctx.Done()
	return 0, s.ctx.Err()
}
