// Package store keeps publishers, tokens, catalogs, definitions and the function index in
// PostgreSQL. Every write is one transaction; nothing is cached here, so any number of service
// replicas can share one database.
package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Domain errors. The HTTP layer maps them to status codes in one place.
var (
	ErrNotFound     = errors.New("not found")
	ErrConflict     = errors.New("conflict")
	ErrForbidden    = errors.New("forbidden")
	ErrUnauthorized = errors.New("unauthorized")
	// ErrInvalid is a request whose input breaks a rule of the domain, such as a publisher name
	// that is not a DNS name.
	ErrInvalid = errors.New("invalid")
	// ErrTooLarge is a publish of what the service would generate something too large from (a
	// function's definition.yaml, MaxDerivedBytes).
	ErrTooLarge = errors.New("too large")
)

// domainError is a domain error with its own message: errors.Is matches its kind, and the message
// reads as a sentence, without the kind's name appended.
type domainError struct {
	kind error
	msg  string
}

func (e *domainError) Error() string        { return e.msg }
func (e *domainError) Is(target error) bool { return target == e.kind }

// Errorf makes an error of one of the domain kinds (ErrNotFound, ErrConflict, ...) whose message is
// the formatted text alone.
func Errorf(kind error, format string, args ...any) error {
	return &domainError{kind: kind, msg: fmt.Sprintf(format, args...)}
}

// NotifyChannel is the PostgreSQL channel on which every publish announces the catalog or function
// it changed ("catalog:NAME" or "function:GROUP/KIND"), so replicas can drop what they cached.
const NotifyChannel = "krm_catalog_changes"

// Store is the PostgreSQL store. It is safe for concurrent use.
type Store struct {
	pool         *boundedPool
	connConfig   *pgx.ConnConfig // for connections outside the pool (Subscribe)
	hosts        *hostHealth
	writeTimeout string // statement_timeout of write transactions, in milliseconds
	now          func() time.Time
	searchProbe  int // Options.SearchProbe
	searchSample int // Options.SearchSample
	shares       struct {
		mu   sync.Mutex
		m    map[string]float64 // lexeme → share of functions, from the planner's statistics
		read time.Time
	}
}

// Open connects to the database at url with the default Options. The schema must be migrated
// already.
func Open(ctx context.Context, url string) (*Store, error) {
	return OpenWith(ctx, url, Options{})
}

// OpenWith connects to the database at url with opts. The schema must be migrated already. A URL
// may name several hosts (host=a,b or postgres://a,b/db) with target_session_attrs=read-write:
// connections then go to whichever is the primary, also after a failover.
func OpenWith(ctx context.Context, url string, opts Options) (*Store, error) {
	opts = opts.withDefaults()
	cfg, hosts, err := poolConfig(url, opts)
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	s := &Store{pool: &boundedPool{Pool: pool, acquireTimeout: opts.AcquireTimeout}, connConfig: cfg.ConnConfig, hosts: hosts,
		writeTimeout: strconv.FormatInt(opts.WriteTimeout.Milliseconds(), 10), now: time.Now,
		searchProbe: opts.SearchProbe, searchSample: opts.SearchSample}
	if err := pool.Ping(ctx); err != nil { // the first connection: bounded by the connect timeout
		pool.Close()
		return nil, fmt.Errorf("open store: %w", err)
	}
	return s, nil
}

// Close closes every connection.
func (s *Store) Close() { s.pool.Close() }

// Ping checks that the database answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return fmt.Errorf("ping database: %w", err)
	}
	return nil
}

const sqlWriteTimeout = `SELECT set_config('statement_timeout', $1, true)`

// inTx runs fn in a transaction, committing when it returns nil and rolling back otherwise. Its
// statements run under the write class's statement_timeout.
func (s *Store) inTx(ctx context.Context, fn func(pgx.Tx) error) error {
	return pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, sqlWriteTimeout, s.writeTimeout); err != nil {
			return err
		}
		return fn(tx)
	})
}

const sqlAudit = `INSERT INTO audit_log (publisher, action, subject, details) VALUES ($1, $2, $3, $4)`

// Actor is who asks for a change over HTTP: the token's id and the address the request came from.
// The audit log records them with every change the request makes, and with its refusals.
type Actor struct {
	TokenID int64  // 0 when no token authenticated
	Address string // the client's address
}

type actorKey struct{}

// WithActor returns ctx carrying the actor of the request, for the audit log.
func WithActor(ctx context.Context, a Actor) context.Context {
	return context.WithValue(ctx, actorKey{}, a)
}

// auditDetails are an entry's details with its outcome, and its actor when the change came over
// HTTP (an admin's command on the database has none).
func auditDetails(ctx context.Context, outcome string, details map[string]any) map[string]any {
	out := make(map[string]any, len(details)+3)
	for k, v := range details {
		out[k] = v
	}
	out["outcome"] = outcome
	if a, ok := ctx.Value(actorKey{}).(Actor); ok {
		out["address"] = a.Address
		if a.TokenID != 0 {
			out["tokenId"] = a.TokenID
		}
	}
	return out
}

func audit(ctx context.Context, tx pgx.Tx, publisher, action, subject string, details map[string]any) error {
	if _, err := tx.Exec(ctx, sqlAudit, publisher, action, subject, auditDetails(ctx, "ok", details)); err != nil {
		return fmt.Errorf("write audit log: %w", err)
	}
	return nil
}

// AuditRefusal records a refused attempt at a change: publisher is who the token acted for ("" when
// none authenticated), reason what the client was told. It runs outside the refused change's
// transaction, which rolled back. The service calls it for refusals that reached the database:
// past the failed-authentication budget an address is refused before, and not recorded.
func (s *Store) AuditRefusal(ctx context.Context, publisher, action, subject string, status int, reason string) error {
	details := auditDetails(ctx, "refused", map[string]any{"status": status, "reason": reason})
	if _, err := s.pool.Exec(ctx, sqlAudit, publisher, action, subject, details); err != nil {
		return fmt.Errorf("write audit log: %w", err)
	}
	return nil
}

const sqlNotify = `SELECT pg_notify($1, $2)`

// notify announces a change; PostgreSQL delivers it when the transaction commits.
func notify(ctx context.Context, tx pgx.Tx, payload string) error {
	if _, err := tx.Exec(ctx, sqlNotify, NotifyChannel, payload); err != nil {
		return fmt.Errorf("notify %s: %w", payload, err)
	}
	return nil
}

const sqlPublisherID = `SELECT id FROM publishers WHERE name = $1`

func publisherID(ctx context.Context, q pgx.Tx, name string) (int64, error) {
	var id int64
	err := q.QueryRow(ctx, sqlPublisherID, name).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, Errorf(ErrNotFound, "no publisher %q", name)
	}
	if err != nil {
		return 0, fmt.Errorf("find publisher %q: %w", name, err)
	}
	return id, nil
}

// AuditEntry is one line of the audit log.
type AuditEntry struct {
	At        time.Time      `json:"at"`
	Publisher string         `json:"publisher"`
	Action    string         `json:"action"`
	Subject   string         `json:"subject"`
	Details   map[string]any `json:"details"`
}

const sqlAuditLog = `SELECT at, publisher, action, subject, details FROM audit_log ORDER BY id DESC LIMIT $1`

// AuditLog returns the newest entries of the audit log, newest first.
func (s *Store) AuditLog(ctx context.Context, limit int) ([]AuditEntry, error) {
	rows, err := s.pool.Query(ctx, sqlAuditLog, limit)
	if err != nil {
		return nil, fmt.Errorf("read audit log: %w", err)
	}
	entries, err := pgx.CollectRows(rows, pgx.RowToStructByPos[AuditEntry])
	if err != nil {
		return nil, fmt.Errorf("read audit log: %w", err)
	}
	return entries, nil
}
