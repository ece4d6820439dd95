package functions

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/krm-catalog/krm-catalog/fn/evaluator/evaluatorpb"
	"github.com/krm-catalog/krm-catalog/fn/fntest"
)

// metric returns the lines of fn serve's /metrics that contain every one of want.
func (s *fnServe) metric(t testing.TB, want ...string) string {
	t.Helper()
	resp, err := http.Get("http://" + s.metricsAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var out []string
line:
	for _, l := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(l, "#") {
			continue
		}
		for _, w := range want {
			if !strings.Contains(l, w) {
				continue line
			}
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}

// A render's burst: 100 concurrent calls of one function over one connection, 4 running at a
// time, all succeed within their deadline (Porch does not retry a call).
func TestFnServeBurst(t *testing.T) {
	t.Parallel()
	s := startFnServe(t)
	client := evaluatorpb.NewFunctionEvaluatorClient(s.dial(t))
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for i := range 100 {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			ns := fmt.Sprintf("burst-%d", i)
			resp, err := client.EvaluateFunction(ctx, &evaluatorpb.EvaluateFunctionRequest{Image: evaluatorImage, ResourceList: fntest.Deployments(20, ns)})
			if err == nil {
				if got, nerr := namespaces(resp.GetResourceList()); got != ns || nerr != nil {
					err = fmt.Errorf("call %d: namespaces %q (%v)", i, got, nerr)
				}
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	failed := 0
	for err := range errs {
		if err != nil {
			if failed++; failed <= 5 {
				t.Error(err)
			}
		}
	}
	if failed > 0 {
		t.Errorf("%d of 100 concurrent calls failed", failed)
	}
}

// With --fallback, an image no trusted catalog lists goes to the other evaluator (here a second
// fn serve that lists it, standing for Porch's runner), its answer comes back, and the metrics say
// which way each call went; every line of the JSON log is JSON.
func TestFnServeFallback(t *testing.T) {
	t.Parallel()
	const onlyFallback = "registry.example.com/krm-fn/set-labels:v1.0.0@sha256:1111111111111111111111111111111111111111111111111111111111111111"
	behind := startFnServeImages(t, map[string]string{"set-labels": onlyFallback})
	front := startFnServe(t, "--fallback", behind.addr)
	client := evaluatorpb.NewFunctionEvaluatorClient(front.dial(t))
	ctx := context.Background()

	labels := "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nfunctionConfig:\n  apiVersion: fn.example.com/v1\n  kind: SetLabels\n  metadata:\n    name: l\n  labels:\n    team: blue\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: cm\n"
	resp, err := client.EvaluateFunction(ctx, &evaluatorpb.EvaluateFunctionRequest{Image: onlyFallback, ResourceList: []byte(labels)})
	if err != nil {
		t.Fatalf("an image only the fallback lists: %v", err)
	}
	if !strings.Contains(string(resp.GetResourceList()), "team: blue") {
		t.Errorf("the fallback's answer:\n%s", resp.GetResourceList())
	}
	if _, err := client.EvaluateFunction(ctx, &evaluatorpb.EvaluateFunctionRequest{Image: evaluatorImage, ResourceList: fntest.Deployments(1, "front")}); err != nil {
		t.Fatalf("an image the front lists: %v", err)
	}
	_, err = client.EvaluateFunction(ctx, &evaluatorpb.EvaluateFunctionRequest{Image: "registry.example.com/krm-fn/nobody:v1", ResourceList: []byte(labels)})
	if status.Code(err) != codes.NotFound {
		t.Errorf("an image neither lists: %v, want the fallback's NotFound", err)
	}
	for _, want := range [][]string{
		{`route="fallback"`, `code="OK"`, "} 1"},
		{`route="fallback"`, `code="NotFound"`, "} 1"},
		{`route="catalog"`, `code="OK"`, "SetNamespace", "} 1"},
	} {
		if front.metric(t, append([]string{"krm_catalog_evaluator_calls_total"}, want...)...) == "" {
			t.Errorf("the front's metrics lack %v:\n%s", want, front.metric(t, "krm_catalog_evaluator_calls_total"))
		}
	}
	if behind.metric(t, "krm_catalog_evaluator_calls_total", `route="catalog"`, "SetLabels", "} 1") == "" {
		t.Errorf("the fallback did not run set-labels:\n%s", behind.metric(t, "krm_catalog_evaluator_calls_total"))
	}
	lines, _ := front.lines()
	routes := map[string]int{}
	for _, l := range lines {
		var rec struct{ Msg, Route string }
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Errorf("a log line that is not JSON: %q", l)
		}
		if rec.Msg == "evaluate" {
			routes[rec.Route]++
		}
	}
	if routes["fallback"] != 2 || routes["catalog"] != 1 {
		t.Errorf("the log's routes: %v, want 2 fallback and 1 catalog", routes)
	}
}

// fn serve under a hostile client: a stalled request is cancelled at --receive-timeout; the
// spellings of one pinned image are one resolution; a request for an unknown image is not decoded;
// an invalid image is InvalidArgument and a huge one is not logged whole; what a function prints
// does not reach the log as lines of its own; idle connections are closed.
func TestFnServeHostileClients(t *testing.T) {
	t.Parallel()
	s := startFnServe(t, "--receive-timeout", "1s", "--idle-timeout", "2s", "--max-message-size", "8388608")
	client := evaluatorpb.NewFunctionEvaluatorClient(s.dial(t))
	ctx := context.Background()

	t.Run("a stalled request is cancelled", func(t *testing.T) {
		c, err := net.Dial("tcp", s.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fr := http2.NewFramer(c, c)
		if _, err := c.Write([]byte(http2.ClientPreface)); err != nil {
			t.Fatal(err)
		}
		_ = fr.WriteSettings()
		var hb bytes.Buffer
		enc := hpack.NewEncoder(&hb)
		for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":path", "/evaluator.FunctionEvaluator/EvaluateFunction"},
			{":authority", "fn"}, {"content-type", "application/grpc"}, {"te", "trailers"}} {
			_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
		}
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hb.Bytes(), EndHeaders: true})
		msg := make([]byte, 16<<10)
		binary.BigEndian.PutUint32(msg[1:5], 5<<20)
		_ = fr.WriteData(1, false, msg)
		_ = c.SetReadDeadline(time.Now().Add(time.Minute))
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				t.Fatalf("the stalled stream was not ended: %v", err)
			}
			if r, ok := f.(*http2.RSTStreamFrame); ok && r.StreamID == 1 {
				break
			}
			if h, ok := f.(*http2.HeadersFrame); ok && h.StreamID == 1 && h.StreamEnded() {
				break
			}
		}
		if s.metric(t, "krm_catalog_evaluator_receive_timeouts_total 1") == "" {
			t.Error("no receive timeout counted")
		}
	})
	t.Run("the spellings of a pinned image are one resolution", func(t *testing.T) {
		before := s.metric(t, "krm_catalog_evaluator_resolution_cache_hits_total ")
		digest := evaluatorImage[strings.Index(evaluatorImage, "@"):]
		for i := range 20 {
			img := fmt.Sprintf("registry.example.com/krm-fn/set-namespace:spelling-%d%s", i, digest)
			if _, err := client.EvaluateFunction(ctx, &evaluatorpb.EvaluateFunctionRequest{Image: img, ResourceList: fntest.Deployments(1, "x")}); err != nil {
				t.Fatalf("%s: %v", img, err)
			}
		}
		var hitsBefore, hitsAfter float64
		fmt.Sscanf(strings.TrimPrefix(before, "krm_catalog_evaluator_resolution_cache_hits_total "), "%g", &hitsBefore)
		fmt.Sscanf(strings.TrimPrefix(s.metric(t, "krm_catalog_evaluator_resolution_cache_hits_total "), "krm_catalog_evaluator_resolution_cache_hits_total "), "%g", &hitsAfter)
		if hitsAfter-hitsBefore < 19 {
			t.Errorf("20 spellings of one digest: %v cache hits, want at least 19", hitsAfter-hitsBefore)
		}
	})
	t.Run("an unknown image's list is not decoded", func(t *testing.T) {
		garbage := bytes.Repeat([]byte("[[[[ "), 1<<20) // 5 MiB of nesting that no decoder should see
		_, err := client.EvaluateFunction(ctx, &evaluatorpb.EvaluateFunctionRequest{Image: "registry.example.com/krm-fn/unknown:v1", ResourceList: garbage})
		if status.Code(err) != codes.NotFound {
			t.Errorf("%v, want NotFound", err)
		}
	})
	t.Run("invalid images", func(t *testing.T) {
		_, before := s.lines()
		huge := "registry.example.com/" + strings.Repeat("a", 3<<20)
		for _, img := range []string{"Registry.Example.COM/Upper:v1", "registry.example.com/x:bad tag", huge} {
			_, err := client.EvaluateFunction(ctx, &evaluatorpb.EvaluateFunctionRequest{Image: img, ResourceList: fntest.Deployments(1, "x")})
			if status.Code(err) != codes.InvalidArgument {
				t.Errorf("%.40s: %v, want InvalidArgument", img, err)
			}
		}
		waitLog(t, s, func(lines []string) bool { return strings.Contains(lines[len(lines)-1], "InvalidArgument") })
		if _, after := s.lines(); after-before > 16<<10 {
			t.Errorf("three refused calls, one with a 3 MiB image, logged %d bytes", after-before)
		}
	})
	t.Run("what a function prints stays data", func(t *testing.T) {
		forged := `{"time":"2030-01-01T00:00:00Z","level":"ERROR","msg":"forged"}`
		list := "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\nfunctionConfig:\n  apiVersion: fn.kpt.dev/v1alpha1\n  kind: StarlarkRun\n  metadata:\n    name: loud\n  source: |\n    def shout():\n      for i in range(100000):\n        print('" + forged + "')\n    shout()\n"
		_, before := s.lines()
		resp, err := client.EvaluateFunction(ctx, &evaluatorpb.EvaluateFunctionRequest{Image: "registry.example.com/krm-fn/starlark:v0.5", ResourceList: []byte(list)})
		if err != nil {
			t.Fatal(err)
		}
		if n := len(resp.GetLog()); n == 0 || n > 64<<10 {
			t.Errorf("the answer's log holds %d bytes of what the function printed, want its tail", n)
		}
		waitLog(t, s, func(lines []string) bool { return strings.Contains(lines[len(lines)-1], "starlark") })
		lines, after := s.lines()
		for _, l := range lines {
			if l == forged {
				t.Fatal("a line the function printed is a line of the log")
			}
		}
		if after-before > 64<<10 {
			t.Errorf("a function printing 6 MB grew the log by %d bytes", after-before)
		}
	})
	t.Run("an idle connection is closed", func(t *testing.T) {
		c, err := net.Dial("tcp", s.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fr := http2.NewFramer(c, c)
		_, _ = c.Write([]byte(http2.ClientPreface))
		_ = fr.WriteSettings()
		_ = c.SetReadDeadline(time.Now().Add(time.Minute))
		for {
			f, err := fr.ReadFrame()
			if errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatal("an idle connection was still open after a minute")
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := f.(*http2.GoAwayFrame); ok {
				return
			}
		}
	})
	lines, _ := s.lines()
	for _, l := range lines {
		if !json.Valid([]byte(l)) {
			t.Errorf("a log line that is not JSON: %.200q", l)
		}
	}
}

// waitLog waits, at most a minute, until fn serve's log satisfies cond.
func waitLog(t *testing.T, s *fnServe, cond func(lines []string) bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		if lines, _ := s.lines(); len(lines) > 0 && cond(lines) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the log did not show it in a minute")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
