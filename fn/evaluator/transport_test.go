package evaluator_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"

	"github.com/krm-catalog/krm-catalog/fn/evaluator"
	"github.com/krm-catalog/krm-catalog/fn/evaluator/evaluatorpb"
)

// serveTransport serves an evaluator behind t's bounds on 127.0.0.1 and returns its address.
func serveTransport(t *testing.T, tr evaluator.Transport) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(tr.ServerOptions()...)
	evaluatorpb.RegisterFunctionEvaluatorServer(srv, evaluator.New(evaluator.Options{Resolver: catalogs{}, Runner: &funcRunner{f: setNamespace}}))
	go func() { _ = srv.Serve(tr.Listener(ln)) }()
	t.Cleanup(srv.Stop)
	return ln.Addr().String()
}

// h2conn is a raw HTTP/2 client connection, to do what a gRPC client never does.
type h2conn struct {
	t  *testing.T
	c  net.Conn
	fr *http2.Framer
}

// dialH2 connects and sends the client preface and its settings.
func dialH2(t *testing.T, addr string) *h2conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	h := &h2conn{t: t, c: c, fr: http2.NewFramer(c, c)}
	if err := h.fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	return h
}

// next reads the next frame within d; ok is false when none came.
func (h *h2conn) next(d time.Duration) (http2.Frame, bool) {
	h.t.Helper()
	_ = h.c.SetReadDeadline(time.Now().Add(d))
	f, err := h.fr.ReadFrame()
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return nil, false
	}
	if err != nil {
		h.t.Fatalf("read a frame: %v", err)
	}
	return f, true
}

// until reads frames until match accepts one, for at most a minute.
func (h *h2conn) until(what string, match func(http2.Frame) bool) http2.Frame {
	h.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		f, ok := h.next(time.Until(deadline))
		if ok && match(f) {
			return f
		}
	}
	h.t.Fatalf("no %s in a minute", what)
	return nil
}

// startCall opens stream id with an EvaluateFunction call's headers.
func (h *h2conn) startCall(id uint32) {
	h.t.Helper()
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":path", "/evaluator.FunctionEvaluator/EvaluateFunction"},
		{":authority", "evaluator"}, {"content-type", "application/grpc"}, {"te", "trailers"}} {
		_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	if err := h.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hb.Bytes(), EndHeaders: true}); err != nil {
		h.t.Fatal(err)
	}
}

// A request that stalls halfway is cancelled at the receive timeout, and what it sent is freed,
// whatever deadline the client gave (here none).
func TestReceiveTimeout(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	addr := serveTransport(t, evaluator.Transport{ReceiveTimeout: 300 * time.Millisecond, Metrics: evaluator.NewMetrics(reg)})
	h := dialH2(t, addr)
	h.startCall(1)
	// a message announced at 1 MiB, of which 16 KiB come
	prefix := make([]byte, 5)
	binary.BigEndian.PutUint32(prefix[1:], 1<<20)
	if err := h.fr.WriteData(1, false, append(prefix, make([]byte, 16<<10-5)...)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	h.until("end of the stalled stream", func(f http2.Frame) bool {
		switch f := f.(type) {
		case *http2.RSTStreamFrame:
			return f.StreamID == 1
		case *http2.HeadersFrame:
			return f.StreamID == 1 && f.StreamEnded()
		}
		return false
	})
	if d := time.Since(start); d < 250*time.Millisecond {
		t.Errorf("the stream ended after %v, before the receive timeout", d)
	}
	if got := counter(t, reg, "krm_catalog_evaluator_receive_timeouts_total"); got != 1 {
		t.Errorf("receive timeouts counted: %v, want 1", got)
	}
}

// A connection is told how many calls it may open at once, and a client past it is refused the
// stream; connections past MaxConnections wait to be accepted until one closes.
func TestStreamAndConnectionCaps(t *testing.T) {
	t.Parallel()
	addr := serveTransport(t, evaluator.Transport{MaxStreams: 3, MaxConnections: 2})
	first := dialH2(t, addr)
	f := first.until("server settings", func(f http2.Frame) bool { s, ok := f.(*http2.SettingsFrame); return ok && !s.IsAck() })
	if v, ok := f.(*http2.SettingsFrame).Value(http2.SettingMaxConcurrentStreams); !ok || v != 3 {
		t.Errorf("SETTINGS_MAX_CONCURRENT_STREAMS %d (sent: %v), want 3", v, ok)
	}
	for id := uint32(1); id <= 7; id += 2 {
		first.startCall(id)
	}
	first.until("the fourth stream refused", func(f http2.Frame) bool {
		r, ok := f.(*http2.RSTStreamFrame)
		return ok && r.StreamID == 7 && r.ErrCode == http2.ErrCodeRefusedStream
	})

	second := dialH2(t, addr)
	second.until("server settings", func(f http2.Frame) bool { _, ok := f.(*http2.SettingsFrame); return ok })
	third := dialH2(t, addr)
	if f, ok := third.next(300 * time.Millisecond); ok {
		t.Fatalf("a third connection was served (%v) past a cap of 2", f)
	}
	second.c.Close()
	third.until("server settings once a connection closed", func(f http2.Frame) bool { _, ok := f.(*http2.SettingsFrame); return ok })
}

// An idle connection is closed (GOAWAY) after IdleTimeout, and a client that pings more often than
// KeepaliveMinTime is disconnected.
func TestIdleAndPings(t *testing.T) {
	t.Parallel()
	addr := serveTransport(t, evaluator.Transport{IdleTimeout: 300 * time.Millisecond})
	idle := dialH2(t, addr)
	idle.until("GOAWAY of an idle connection", func(f http2.Frame) bool { _, ok := f.(*http2.GoAwayFrame); return ok })

	addr = serveTransport(t, evaluator.Transport{})
	pinger := dialH2(t, addr)
	for i := range 4 {
		if err := pinger.fr.WritePing(false, [8]byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	f := pinger.until("GOAWAY for too many pings", func(f http2.Frame) bool { _, ok := f.(*http2.GoAwayFrame); return ok })
	if g := f.(*http2.GoAwayFrame); g.ErrCode != http2.ErrCodeEnhanceYourCalm {
		t.Errorf("GOAWAY %v %q, want ENHANCE_YOUR_CALM", g.ErrCode, g.DebugData())
	}
}
