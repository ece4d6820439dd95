package store

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// TCP keepalive of the service's connections: a connection to a host that died or was cut off
// (no FIN, no RST ever comes) fails after about Idle+Count*Interval instead of the kernel's hours;
// the LISTEN connection waits on nothing else.
const (
	keepAliveIdle     = 5 * time.Second
	keepAliveInterval = 2 * time.Second
	keepAliveCount    = 3
)

// idlePing is how long a pooled connection may sit unused before an acquire checks it with a
// ping (pgxpool's own rule), and pingTimeout bounds that ping: a host that does not answer it is
// taken for failed.
const (
	idlePing    = time.Second
	pingTimeout = time.Second
)

// hostHealth remembers which of the database hosts failed lately. With a URL naming several hosts
// (target_session_attrs=read-write), pgx tries them in the URL's order for every new connection,
// so while the first is unreachable each connection first waits out connect_timeout on it. With
// hostHealth, hosts that failed are tried last, and pooled connections to a host that failed since
// they were made are dropped at acquire instead of handed to a request that would hang on them.
// A host is failed by a dial error, a connection to it that did not answer (a host tried before
// the one that accepted), an unreachable peer on a connection, a ping without answer or a refusal
// of target_session_attrs (a standby); it is healthy again once a connection to it is accepted.
type hostHealth struct {
	dialer net.Dialer
	lookup pgconn.LookupFunc
	now    func() time.Time

	mu     sync.Mutex
	failed map[string]time.Time // host:port as the URL names it → when it last failed
	names  map[string]string    // resolved address → the URL's host it came from
}

func newHostHealth(connectTimeout time.Duration, lookup pgconn.LookupFunc) *hostHealth {
	return &hostHealth{
		// a host that does not acknowledge what is sent within the connect timeout is as gone as
		// one that does not answer a connect within it
		dialer: net.Dialer{Timeout: connectTimeout, Control: userTimeout(connectTimeout), KeepAliveConfig: net.KeepAliveConfig{
			Enable: true, Idle: keepAliveIdle, Interval: keepAliveInterval, Count: keepAliveCount}},
		lookup: lookup,
		now:    time.Now,
		failed: map[string]time.Time{},
		names:  map[string]string{},
	}
}

// install wires h into the pool's configuration: dials, lookups, validation, host order and the
// check of pooled connections at acquire.
func (h *hostHealth) install(cfg *pgxpool.Config) {
	cc := cfg.ConnConfig
	cc.DialFunc = h.dial
	cc.LookupFunc = h.lookupHost
	validate := cc.ValidateConnect
	cc.ValidateConnect = h.validate(validate, nil)
	cfg.BeforeConnect = func(_ context.Context, cc *pgx.ConnConfig) error {
		tried := h.order(&cc.Config)
		cc.ValidateConnect = h.validate(validate, tried)
		return nil
	}
	cfg.ShouldPing = func(context.Context, pgxpool.ShouldPingParams) bool { return false } // prepare pings
	cfg.PrepareConn = h.prepare
}

func (h *hostHealth) lookupHost(ctx context.Context, host string) ([]string, error) {
	addrs, err := h.lookup(ctx, host)
	if err == nil {
		h.mu.Lock()
		for _, a := range addrs {
			h.names[a] = host
		}
		h.mu.Unlock()
	}
	return addrs, err
}

// urlHost is the URL's host:port that the resolved address came from.
func (h *hostHealth) urlHost(address string) string {
	if dir, port, ok := strings.Cut(address, "/.s.PGSQL."); ok { // a unix socket: the URL names its directory
		return net.JoinHostPort(dir, port)
	}
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return address
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if name, ok := h.names[host]; ok {
		host = name
	}
	return net.JoinHostPort(host, port)
}

func (h *hostHealth) dial(ctx context.Context, network, address string) (net.Conn, error) {
	key := h.urlHost(address)
	c, err := h.dialer.DialContext(ctx, network, address)
	if err != nil {
		if ctx.Err() == nil || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			h.fail(key) // not when the caller went away: that says nothing of the host
		}
		return nil, err
	}
	return &trackedConn{Conn: c, h: h, key: key, born: h.now(), used: h.now()}, nil
}

func (h *hostHealth) fail(key string) {
	if key == "" {
		return
	}
	h.mu.Lock()
	h.failed[key] = h.now()
	h.mu.Unlock()
}

func (h *hostHealth) ok(key string) {
	h.mu.Lock()
	delete(h.failed, key)
	h.mu.Unlock()
}

// key is the URL's host:port of a connection that hostHealth dialed, or "".
func (h *hostHealth) key(c net.Conn) string {
	if tc := tracked(c); tc != nil {
		return tc.key
	}
	return ""
}

// validate wraps the URL's validation (target_session_attrs) of a new connection: a host that
// refuses it failed, one that accepts it is healthy, and so are not the hosts tried before it in
// this attempt (order), which did not answer, refused, or were not the primary.
func (h *hostHealth) validate(validate pgconn.ValidateConnectFunc, order []string) pgconn.ValidateConnectFunc {
	return func(ctx context.Context, pc *pgconn.PgConn) error {
		key := h.key(pc.Conn())
		if validate != nil {
			if err := validate(ctx, pc); err != nil {
				h.fail(key)
				return err
			}
		}
		for _, k := range order {
			if k == key {
				break
			}
			h.fail(k)
		}
		h.ok(key)
		return nil
	}
}

// order puts the hosts that did not fail first, in the URL's order, then the failed ones, the one
// that failed longest ago first, and returns the order (host:port of each).
func (h *hostHealth) order(cfg *pgconn.Config) []string {
	hosts := append([]*pgconn.FallbackConfig{{Host: cfg.Host, Port: cfg.Port, TLSConfig: cfg.TLSConfig}}, cfg.Fallbacks...)
	h.mu.Lock()
	failedAt := func(f *pgconn.FallbackConfig) time.Time {
		return h.failed[net.JoinHostPort(f.Host, strconv.Itoa(int(f.Port)))]
	}
	slices.SortStableFunc(hosts, func(a, b *pgconn.FallbackConfig) int { return failedAt(a).Compare(failedAt(b)) })
	h.mu.Unlock()
	cfg.Host, cfg.Port, cfg.TLSConfig = hosts[0].Host, hosts[0].Port, hosts[0].TLSConfig
	cfg.Fallbacks = hosts[1:]
	keys := make([]string, len(hosts))
	for i, f := range hosts {
		keys[i] = net.JoinHostPort(f.Host, strconv.Itoa(int(f.Port)))
	}
	return keys
}

// prepare keeps a pooled connection for an acquire unless its host failed since it was made, or
// it sat unused and does not answer a ping (which fails its host).
func (h *hostHealth) prepare(ctx context.Context, c *pgx.Conn) (bool, error) {
	tc := tracked(c.PgConn().Conn())
	if tc == nil {
		return true, nil
	}
	h.mu.Lock()
	failedAt, failed := h.failed[tc.key]
	h.mu.Unlock()
	if failed && !failedAt.Before(tc.born) {
		return false, nil
	}
	if h.now().Sub(tc.lastUse()) <= idlePing {
		return true, nil
	}
	pctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	if err := c.Ping(pctx); err != nil {
		if ctx.Err() == nil {
			h.fail(tc.key)
		}
		return false, nil
	}
	return true, nil
}

// trackedConn is a connection hostHealth dialed: its host, when it was made and last answered. An
// error on it that says the host is unreachable fails its host; others (a deadline pgx set, the
// server closing it) say nothing of the host.
type trackedConn struct {
	net.Conn
	h    *hostHealth
	key  string
	born time.Time

	mu   sync.Mutex
	used time.Time
}

func tracked(c net.Conn) *trackedConn {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	t, _ := c.(*trackedConn)
	return t
}

func (c *trackedConn) lastUse() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used
}

func (c *trackedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.mu.Lock()
		c.used = c.h.now()
		c.mu.Unlock()
	}
	c.check(err)
	return n, err
}

func (c *trackedConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.check(err)
	return n, err
}

func (c *trackedConn) check(err error) {
	if unreachable(err) {
		c.h.fail(c.key)
	}
}

// unreachable reports whether err says the peer cannot be reached: nothing acknowledged in time
// (TCP_USER_TIMEOUT, keepalive), no route, refused.
func unreachable(err error) bool {
	return errors.Is(err, syscall.ETIMEDOUT) || errors.Is(err, syscall.EHOSTUNREACH) ||
		errors.Is(err, syscall.ENETUNREACH) || errors.Is(err, syscall.ECONNREFUSED)
}
