package store

import (
	"context"
	"net"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/krm-catalog/krm-catalog/store/storetest"
)

func TestHostOrder(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		failed map[string]time.Time
		want   []string
	}{
		{"none failed: the URL's order", nil, []string{"a:5432", "b:5432", "c:5433"}},
		{"the first failed: last", map[string]time.Time{"a:5432": t0}, []string{"b:5432", "c:5433", "a:5432"}},
		{"two failed: the longest ago first", map[string]time.Time{"a:5432": t0.Add(time.Second), "b:5432": t0}, []string{"c:5433", "b:5432", "a:5432"}},
		{"all failed", map[string]time.Time{"a:5432": t0, "b:5432": t0, "c:5433": t0}, []string{"a:5432", "b:5432", "c:5433"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := pgconn.ParseConfig("postgres://u@a:5432,b:5432,c:5433/db?sslmode=disable")
			if err != nil {
				t.Fatal(err)
			}
			h := newHostHealth(time.Second, nil)
			for k, v := range tc.failed {
				h.failed[k] = v
			}
			h.order(cfg)
			got := []string{net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port)))}
			for _, f := range cfg.Fallbacks {
				got = append(got, net.JoinHostPort(f.Host, strconv.Itoa(int(f.Port))))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("order (-want +got):\n%s", diff)
			}
		})
	}
}

// proxy forwards TCP connections to the database until frozen: then it forwards nothing
// more and answers nothing, and refuses new connections, as a host cut off from the network.
type proxy struct {
	ln       net.Listener
	target   string
	accepted atomic.Int64
	frozen   chan struct{}
	once     sync.Once
	answer   bool // forward at all (false: accept and never answer, as a hung server)

	mu    sync.Mutex
	conns []net.Conn
}

func newProxy(t *testing.T, target string, answer bool) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target, frozen: make(chan struct{}), answer: answer}
	t.Cleanup(p.close)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.accepted.Add(1)
			p.mu.Lock()
			p.conns = append(p.conns, c)
			p.mu.Unlock()
			if !p.answer {
				continue
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, up)
			p.mu.Unlock()
			go p.pipe(up, c)
			go p.pipe(c, up)
		}
	}()
	return p
}

func (p *proxy) pipe(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		select {
		case <-p.frozen:
			return // what the host would have sent is lost; the connection stays open
		default:
		}
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *proxy) freeze() {
	p.once.Do(func() {
		close(p.frozen)
		p.ln.Close()
	})
}

// close ends every connection through the proxy.
func (p *proxy) close() {
	p.freeze()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
}

func (p *proxy) port() string { return strconv.Itoa(p.ln.Addr().(*net.TCPAddr).Port) }

// database is a new test database's URL and its server's address.
func database(t *testing.T) (*url.URL, string) {
	t.Helper()
	u, err := url.Parse(storetest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	if u.Host == "" {
		t.Skip("the test cluster listens on a socket only")
	}
	return u, u.Host
}

// firstHost is u with 127.0.0.1:port in front of its own host.
func firstHost(u *url.URL, port string) string {
	v := *u
	v.Host = "127.0.0.1:" + port + "," + u.Host
	q := u.Query()
	q.Set("connect_timeout", "1")
	v.RawQuery = q.Encode()
	return v.String()
}

// TestFailedHostTriedLast checks that once the URL's first host fails to connect (it accepts and
// never answers, as a hung server), new connections go to the next host without waiting out
// connect_timeout on it again.
func TestFailedHostTriedLast(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	hung := newProxy(t, "", false)
	u, _ := database(t)
	s, err := OpenWith(ctx, firstHost(u, hung.port()), Options{MaxConns: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n := hung.accepted.Load(); n != 1 {
		t.Fatalf("the first connection: %d connections to the hung host, want 1", n)
	}
	// four more connections at once: none tries the hung host first
	var wg sync.WaitGroup
	errs := make(chan error, 5)
	release := make(chan struct{})
	for range 5 {
		wg.Go(func() {
			c, err := s.pool.acquire(ctx)
			if err != nil {
				errs <- err
				return
			}
			<-release
			c.Release()
		})
	}
	for s.pool.Stat().TotalConns() < 5 && len(errs) == 0 {
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := hung.accepted.Load(); n != 1 {
		t.Errorf("%d connections to the hung host after it failed, want none after the first", n-1)
	}
}

// TestPooledConnectionsToFailedHostDropped checks that pooled connections to a host that stops
// answering are not handed to requests: the first idle one's ping fails the host, and the others
// to it are dropped without waiting on them; the acquire gets a connection to the next host.
func TestPooledConnectionsToFailedHostDropped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	u, target := database(t)
	cut := newProxy(t, target, true)
	s, err := OpenWith(ctx, firstHost(u, cut.port()), Options{MaxConns: 4, AcquireTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	clock := time.Now()
	var mu sync.Mutex
	s.hosts.now = func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return clock
	}
	// three pooled connections, all through the first host
	var conns []interface{ Release() }
	for range 3 {
		c, err := s.pool.acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Conn().PgConn().Conn().RemoteAddr().String(); got != cut.ln.Addr().String() {
			t.Fatalf("a connection before the cut goes to %s, want the first host %s", got, cut.ln.Addr())
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		c.Release()
	}
	cut.freeze()
	mu.Lock()
	clock = clock.Add(2 * idlePing) // they sat idle: an acquire pings
	mu.Unlock()
	c, err := s.pool.acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	if got := c.Conn().PgConn().Conn().RemoteAddr().String(); got != target {
		t.Errorf("the connection after the cut goes to %s, want the second host %s", got, target)
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := c.Conn().Ping(pctx); err != nil {
		t.Errorf("ping after the cut: %v", err)
	}
	if got := s.pool.Stat().NewConnsCount(); got != 4 {
		t.Errorf("%d connections made, want 4: three to the cut host and one to the next", got)
	}
	// the dropped ones end with the cut host's connections (a dead host's end when TCP gives up)
	cut.close()
	for deadline := time.Now().Add(10 * time.Second); s.pool.Stat().TotalConns() != 1; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d connections in the pool after the cut, want 1: those to the cut host dropped", s.pool.Stat().TotalConns())
		}
	}
}

// TestServerKeepalive checks that the server's end of the service's sessions over TCP probes a
// silent peer as the service's end does, so that a session whose client's host is gone ends.
func TestServerKeepalive(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := storetest.NewDatabase(t)
	if u, err := url.Parse(dbURL); err != nil || u.Hostname() != "127.0.0.1" {
		t.Fatalf("the test database is not over TCP (on a socket the settings read 0): %s", dbURL)
	}
	s, err := Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var got [3]string
	if err := s.pool.QueryRow(ctx, "SELECT current_setting('tcp_keepalives_idle'), current_setting('tcp_keepalives_interval'), current_setting('tcp_keepalives_count')").Scan(&got[0], &got[1], &got[2]); err != nil {
		t.Fatal(err)
	}
	if want := [3]string{"5", "2", "3"}; got != want {
		t.Errorf("server keepalive (idle, interval, count) %v, want %v", got, want)
	}
}

// TestIdleInTransactionTimeout checks that the service's sessions end a transaction left open by
// a client that went silent, so that its row locks do not outlive it.
func TestIdleInTransactionTimeout(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := OpenWith(ctx, storetest.NewDatabase(t), Options{IdleInTransactionTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	var setting string
	var pid int
	if err := tx.QueryRow(ctx, "SELECT current_setting('idle_in_transaction_session_timeout'), pg_backend_pid()").Scan(&setting, &pid); err != nil {
		t.Fatal(err)
	}
	if setting != "200ms" {
		t.Errorf("idle_in_transaction_session_timeout %q, want 200ms", setting)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		var n int
		if err := s.pool.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE pid = $1", pid).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the idle transaction's session still there after 20 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := tx.Exec(ctx, "SELECT 1"); err == nil {
		t.Errorf("a statement in the ended transaction: %v, want an error", err)
	}
}

// TestCanceledQueryFailsNoHost checks that a query its caller gave up on (pgx then cancels it on a
// connection of its own and closes the one it ran on) does not count against the host: its other
// pooled connections stay in use.
func TestCanceledQueryFailsNoHost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := OpenWith(ctx, storetest.NewDatabase(t), Options{MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	qctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if _, err := s.pool.Exec(qctx, "SELECT pg_sleep(30)"); err == nil {
		t.Fatal("a query past its caller's deadline succeeded")
	}
	// the cancel request and the close are asynchronous: wait until the server has no such query,
	// and the pool no such connection
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var n int
		if err := s.pool.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(30)' AND state = 'active'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 && s.pool.Stat().TotalConns() == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the canceled query still runs (%d) or its connection is still pooled (%d connections)", n, s.pool.Stat().TotalConns())
		}
	}
	s.hosts.mu.Lock()
	failed := len(s.hosts.failed)
	s.hosts.mu.Unlock()
	if failed != 0 {
		t.Errorf("hosts failed after a canceled query: %v", s.hosts.failed)
	}
}
