package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ErrUnavailable is the domain error of a database that cannot answer now: it is down, restarting,
// failing over, stalled beyond a deadline, or every connection is busy. Clients may retry.
var ErrUnavailable = errors.New("database unavailable")

// Options tunes the connection pool and its deadlines. The zero value takes every default.
type Options struct {
	// MaxConns is the pool's size; 0 means DefaultMaxConns. The LISTEN connection of Subscribe is
	// not counted: it is opened outside the pool.
	MaxConns int32
	// AcquireTimeout bounds the wait for a pooled connection; 0 means DefaultAcquireTimeout.
	AcquireTimeout time.Duration
	// ReadTimeout is the statement_timeout of queries outside transactions (the read class);
	// 0 means DefaultReadTimeout.
	ReadTimeout time.Duration
	// WriteTimeout is the statement_timeout inside write transactions (publishes, tokens, keys);
	// 0 means DefaultWriteTimeout.
	WriteTimeout time.Duration
	// ConnectTimeout bounds opening one connection to one host, when the URL does not set
	// connect_timeout; 0 means DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// IdleInTransactionTimeout is the idle_in_transaction_session_timeout of the service's
	// sessions, when the URL does not set it; 0 means DefaultIdleInTransactionTimeout.
	IdleInTransactionTimeout time.Duration
	// SearchProbe is how many of a text's matches a filtered search reads once for all its counts
	// (see countStatement); 0 means DefaultSearchProbe, and less than CountCap+1 means CountCap+1.
	SearchProbe int
	// SearchSample is the modulus of the rows an unfiltered text search samples first for its
	// counts (ids divisible by it; see countStatement); 0 means DefaultSearchSample. Only the
	// default has the partial indexes that make the sample cheap: other values are for tests.
	SearchSample int
}

// Defaults of Options.
const (
	DefaultMaxConns       = 16
	DefaultAcquireTimeout = 2 * time.Second
	DefaultReadTimeout    = 5 * time.Second
	DefaultWriteTimeout   = 30 * time.Second
	DefaultConnectTimeout = 3 * time.Second
	// DefaultIdleInTransactionTimeout is far longer than any pause of the service inside a
	// transaction (it waits on nothing but the database there: a registry push runs outside), and
	// short enough that a replica dying mid-publish on a host that is gone, whose session no FIN
	// ever ends, holds the catalog's row lock for seconds, not until TCP gives up.
	DefaultIdleInTransactionTimeout = 5 * time.Second
	// DefaultSearchProbe is four samples' worth of matches, so that a filter that one match in four
	// passes (a runtime, a publisher, a tag that goes with the word) fills its sample from the probe.
	DefaultSearchProbe = 4 * (CountCap + 1)
	// DefaultSearchSample: one row in eight, the predicate of the partial indexes
	// function_facets_search_sample and function_facets_kind_lower_sample (migrations/0011).
	DefaultSearchSample = 8
)

func (o Options) withDefaults() Options {
	if o.MaxConns <= 0 {
		o.MaxConns = DefaultMaxConns
	}
	if o.AcquireTimeout <= 0 {
		o.AcquireTimeout = DefaultAcquireTimeout
	}
	if o.ReadTimeout <= 0 {
		o.ReadTimeout = DefaultReadTimeout
	}
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	if o.SearchProbe <= 0 {
		o.SearchProbe = DefaultSearchProbe
	}
	o.SearchProbe = max(o.SearchProbe, CountCap+1)
	if o.SearchSample <= 0 {
		o.SearchSample = DefaultSearchSample
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	if o.IdleInTransactionTimeout <= 0 {
		o.IdleInTransactionTimeout = DefaultIdleInTransactionTimeout
	}
	return o
}

// poolConfig parses url into a pool configuration carrying opts, and the hosts' health it uses.
func poolConfig(url string, opts Options) (*pgxpool.Config, *hostHealth, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, nil, err
	}
	cfg.MaxConns = opts.MaxConns
	if cfg.MinConns > cfg.MaxConns {
		cfg.MinConns = cfg.MaxConns
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = opts.ConnectTimeout
	}
	if _, set := cfg.ConnConfig.RuntimeParams["statement_timeout"]; !set {
		cfg.ConnConfig.RuntimeParams["statement_timeout"] = strconv.FormatInt(opts.ReadTimeout.Milliseconds(), 10)
	}
	if _, set := cfg.ConnConfig.RuntimeParams["idle_in_transaction_session_timeout"]; !set {
		cfg.ConnConfig.RuntimeParams["idle_in_transaction_session_timeout"] = strconv.FormatInt(opts.IdleInTransactionTimeout.Milliseconds(), 10)
	}
	// The server's end of each session keeps alive as ours does: a session waiting for the rest of
	// a message from a replica whose host is gone (mid-COPY of a publish) is active, not idle in
	// its transaction, and would keep the catalog's row lock until the write statement timeout.
	for k, v := range map[string]time.Duration{"tcp_keepalives_idle": keepAliveIdle, "tcp_keepalives_interval": keepAliveInterval} {
		if _, set := cfg.ConnConfig.RuntimeParams[k]; !set {
			cfg.ConnConfig.RuntimeParams[k] = strconv.Itoa(int(v.Seconds()))
		}
	}
	if _, set := cfg.ConnConfig.RuntimeParams["tcp_keepalives_count"]; !set {
		cfg.ConnConfig.RuntimeParams["tcp_keepalives_count"] = strconv.Itoa(keepAliveCount)
	}
	cfg.HealthCheckPeriod = 5 * time.Second
	// A connection idle across a database restart or failover is dead: hosts checks it before use
	// rather than fail a request with it, and keeps new connections off a host that failed.
	hosts := newHostHealth(cfg.ConnConfig.ConnectTimeout, cfg.ConnConfig.LookupFunc)
	hosts.install(cfg)
	return cfg, hosts, nil
}

// boundedPool is a pgxpool whose every acquire waits at most acquireTimeout: a database that has
// stopped answering, or a pool whose connections are all busy, fails requests quickly with
// ErrUnavailable instead of queueing them until their clients give up. It has the methods of
// pgxpool.Pool the store uses, so the store's queries read the same either way.
type boundedPool struct {
	*pgxpool.Pool
	acquireTimeout time.Duration
}

func (p *boundedPool) acquire(ctx context.Context) (*pgxpool.Conn, error) {
	actx, cancel := context.WithTimeout(ctx, p.acquireTimeout)
	defer cancel()
	c, err := p.Pool.Acquire(actx)
	if err != nil {
		if ctx.Err() == nil && actx.Err() != nil {
			return nil, fmt.Errorf("%w: no connection within %s: %w", ErrUnavailable, p.acquireTimeout, err)
		}
		return nil, err
	}
	return c, nil
}

func (p *boundedPool) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	c, err := p.acquire(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := c.Query(ctx, sql, args...)
	if err != nil {
		c.Release()
		return nil, err
	}
	return &releasingRows{Rows: rows, conn: c}, nil
}

func (p *boundedPool) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	c, err := p.acquire(ctx)
	if err != nil {
		return errRow{err}
	}
	return &releasingRow{row: c.QueryRow(ctx, sql, args...), conn: c}
}

func (p *boundedPool) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	c, err := p.acquire(ctx)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	defer c.Release()
	return c.Exec(ctx, sql, args...)
}

func (p *boundedPool) BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error) {
	c, err := p.acquire(ctx)
	if err != nil {
		return nil, err
	}
	tx, err := c.BeginTx(ctx, opts)
	if err != nil {
		c.Release()
		return nil, err
	}
	return &releasingTx{Tx: tx, conn: c}, nil
}

func (p *boundedPool) Ping(ctx context.Context) error {
	c, err := p.acquire(ctx)
	if err != nil {
		return err
	}
	defer c.Release()
	return c.Ping(ctx)
}

type releasingRows struct {
	pgx.Rows
	conn *pgxpool.Conn
	once sync.Once
}

func (r *releasingRows) Close() {
	r.Rows.Close()
	r.once.Do(r.conn.Release)
}

func (r *releasingRows) Next() bool {
	if r.Rows.Next() {
		return true
	}
	r.Close()
	return false
}

type releasingRow struct {
	row  pgx.Row
	conn *pgxpool.Conn
}

func (r *releasingRow) Scan(dest ...any) error {
	defer r.conn.Release()
	return r.row.Scan(dest...)
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

type releasingTx struct {
	pgx.Tx
	conn *pgxpool.Conn
	once sync.Once
}

func (t *releasingTx) Commit(ctx context.Context) error {
	defer t.once.Do(t.conn.Release)
	return t.Tx.Commit(ctx)
}

func (t *releasingTx) Rollback(ctx context.Context) error {
	defer t.once.Do(t.conn.Release)
	return t.Tx.Rollback(ctx)
}

// IsUnavailable reports whether err means the database could not answer (ErrUnavailable, a
// connection that failed or broke, a server shutting down, starting up or failing over, a
// statement or request deadline), as opposed to a bad query or a domain error: the first is worth
// a retry, the second is not.
func IsUnavailable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) || pgconn.Timeout(err) {
		return true
	}
	var connectErr *pgconn.ConnectError
	if errors.As(err, &connectErr) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case len(pgErr.Code) == 5 && pgErr.Code[:2] == "08": // connection exception
			return true
		case pgErr.Code == "57P01", pgErr.Code == "57P02", pgErr.Code == "57P03": // shutdown, crash, starting up
			return true
		case pgErr.Code == "57014": // query_canceled: the statement_timeout of its request class
			return true
		case pgErr.Code == "53300": // too_many_connections
			return true
		case pgErr.Code == "25006": // read_only_sql_transaction: a standby, mid-failover
			return true
		}
		return false
	}
	var netErr net.Error
	if errors.As(err, &netErr) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, net.ErrClosed) {
		return true
	}
	// pgx reports a connection it closed after an earlier failure as "conn closed".
	var pgconnErr interface{ SafeToRetry() bool }
	if errors.As(err, &pgconnErr) && pgconnErr.SafeToRetry() {
		return true
	}
	return false
}

// PoolStats are the connection pool's statistics, for metrics.
type PoolStats struct {
	Acquired, Idle, Total, Max int32
	Acquires, EmptyAcquires    int64
	AcquireWait                time.Duration
	// Canceled counts acquires given up (acquire timeouts among them).
	Canceled int64
}

// Stats returns the pool's statistics.
func (s *Store) Stats() PoolStats {
	st := s.pool.Stat()
	return PoolStats{
		Acquired: st.AcquiredConns(), Idle: st.IdleConns(), Total: st.TotalConns(), Max: st.MaxConns(),
		Acquires: st.AcquireCount(), EmptyAcquires: st.EmptyAcquireCount(), AcquireWait: st.AcquireDuration(),
		Canceled: st.CanceledAcquireCount(),
	}
}
