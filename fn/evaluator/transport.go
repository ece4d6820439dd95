package evaluator

import (
	"context"
	"log/slog"
	"net"
	"time"

	"golang.org/x/net/netutil"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"
)

// Defaults of Transport.
const (
	// DefaultMaxMessageSize is Porch's, both ways.
	DefaultMaxMessageSize = 6 << 20
	// DefaultReceiveTimeout gives a request of DefaultMaxMessageSize 30 s to arrive: 200 KB/s.
	DefaultReceiveTimeout = 30 * time.Second
	// DefaultMaxStreams is the calls one connection may have open at once; a gRPC client waits for
	// a stream past it (it does not fail). Porch's renders share one connection per Porch process,
	// and porch-controllers renders 20 packages at once by default.
	DefaultMaxStreams = 64
	// DefaultMaxConnections bounds the connections served at once; past it a new one waits to be
	// accepted. Porch opens one per process, the kubelet's probes one each for a moment.
	DefaultMaxConnections = 64
	// DefaultIdleTimeout closes a connection that had no call for this long (the client reconnects
	// when it next calls).
	DefaultIdleTimeout = 5 * time.Minute
	// DefaultKeepaliveMinTime is the shortest interval between a client's pings; a client pinging
	// more often is disconnected (grpc's "too_many_pings").
	DefaultKeepaliveMinTime = 30 * time.Second
	// handshakeTimeout bounds a new connection's TLS and HTTP/2 handshakes.
	handshakeTimeout = 10 * time.Second
)

// Transport bounds what clients can hold of the server before a call reaches the evaluator: the
// size of messages, the time a request may take to arrive, the calls per connection, the
// connections, and idle connections and pings.
type Transport struct {
	MaxMessageSize int
	// ReceiveTimeout is how long a request may take to arrive whole, from its headers on: a client
	// that sends part of a message and stalls is cancelled then, and what it sent freed.
	ReceiveTimeout time.Duration
	MaxStreams     uint32
	MaxConnections int
	IdleTimeout    time.Duration
	// KeepaliveMinTime is the shortest ping interval a client may use.
	KeepaliveMinTime time.Duration
	Logger           *slog.Logger
	Metrics          *Metrics
}

func (t Transport) withDefaults() Transport {
	if t.MaxMessageSize <= 0 {
		t.MaxMessageSize = DefaultMaxMessageSize
	}
	if t.ReceiveTimeout <= 0 {
		t.ReceiveTimeout = DefaultReceiveTimeout
	}
	if t.MaxStreams == 0 {
		t.MaxStreams = DefaultMaxStreams
	}
	if t.MaxConnections <= 0 {
		t.MaxConnections = DefaultMaxConnections
	}
	if t.IdleTimeout <= 0 {
		t.IdleTimeout = DefaultIdleTimeout
	}
	if t.KeepaliveMinTime <= 0 {
		t.KeepaliveMinTime = DefaultKeepaliveMinTime
	}
	if t.Logger == nil {
		t.Logger = slog.New(slog.DiscardHandler)
	}
	return t
}

// ServerOptions are the gRPC server options that enforce t.
func (t Transport) ServerOptions() []grpc.ServerOption {
	t = t.withDefaults()
	return []grpc.ServerOption{
		grpc.MaxRecvMsgSize(t.MaxMessageSize),
		grpc.MaxSendMsgSize(t.MaxMessageSize),
		grpc.MaxConcurrentStreams(t.MaxStreams),
		grpc.ConnectionTimeout(handshakeTimeout),
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: t.IdleTimeout}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: t.KeepaliveMinTime, PermitWithoutStream: true}),
		grpc.InTapHandle(t.startReceive),
		grpc.ChainUnaryInterceptor(received),
		grpc.ChainStreamInterceptor(receivedStream),
	}
}

// Listener bounds the connections accepted from ln at once.
func (t Transport) Listener(ln net.Listener) net.Listener {
	return netutil.LimitListener(ln, t.withDefaults().MaxConnections)
}

type receiveKey struct{}

// receiveDeadline cancels a call whose request has not arrived whole in time.
type receiveDeadline struct{ timer *time.Timer }

// startReceive runs when a call's headers arrive, before its message: the call is cancelled unless
// its message has arrived (received) within ReceiveTimeout. gRPC reads the whole message before
// any handler or interceptor runs, so this is the one place that can bound a stalled one.
func (t Transport) startReceive(ctx context.Context, info *tap.Info) (context.Context, error) {
	ctx, cancel := context.WithCancel(ctx)
	method := info.FullMethodName
	d := &receiveDeadline{timer: time.AfterFunc(t.ReceiveTimeout, func() {
		cancel()
		t.Metrics.receiveTimeout()
		var from string
		if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
			from = p.Addr.String()
		}
		t.Logger.Warn("request not received in time: call cancelled", slog.String("method", method),
			slog.String("peer", from), slog.Duration("receive_timeout", t.ReceiveTimeout))
	})}
	return context.WithValue(ctx, receiveKey{}, d), nil
}

// received stops the receive deadline of a call whose message arrived.
func received(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if d, ok := ctx.Value(receiveKey{}).(*receiveDeadline); ok && !d.timer.Stop() {
		return nil, status.Error(codes.DeadlineExceeded, "the request did not arrive within the receive timeout")
	}
	return handler(ctx, req)
}

// receivedStream stops the receive deadline of a streaming call (health's Watch, reflection) as it
// starts: its messages are read by its handler, not before it.
func receivedStream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if d, ok := ss.Context().Value(receiveKey{}).(*receiveDeadline); ok && !d.timer.Stop() {
		return status.Error(codes.DeadlineExceeded, "the call was cancelled before it started")
	}
	return handler(srv, ss)
}
