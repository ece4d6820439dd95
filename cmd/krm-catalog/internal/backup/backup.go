// Package backup copies the service's database to a file and back with PostgreSQL's own programs:
// pg_dump in its custom format, and pg_restore.
package backup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/krm-catalog/krm-catalog/internal/atomicfile"
	"github.com/krm-catalog/krm-catalog/internal/pgcluster"
)

// ErrNotEmpty reports a restore into a database that already holds tables.
var ErrNotEmpty = errors.New("the database already holds tables: restore into an empty database (a new --data-dir, or a database just created), or pass --clean to replace what the backup holds")

// Dump writes the database at databaseURL to path in pg_dump's custom format. pg_dump reads
// everything in one repeatable-read snapshot, so a dump taken while serve publishes is consistent:
// each publish is in it whole or not at all. path is written with mode 0600 (it holds token hashes
// and publisher keys) and replaced only once the dump is complete.
func Dump(ctx context.Context, databaseURL, path string) error {
	pgDump, target, env, err := program(ctx, "pg_dump", databaseURL)
	if err != nil {
		return fmt.Errorf("back up: %w", err)
	}
	err = atomicfile.Write(path, 0o600, func(f *os.File) error {
		return run(ctx, env, f, pgDump, "--format=custom", "--dbname="+target)
	})
	if err != nil {
		return fmt.Errorf("back up to %s: %w", path, err)
	}
	return nil
}

// RestoreOptions configures Restore.
type RestoreOptions struct {
	// Clean drops what the backup holds before restoring it, for restoring over a database of the
	// same schema; without it, the database must hold no table.
	Clean bool
}

// Restore loads a dump made by Dump into the database at databaseURL, in one transaction: a
// failure leaves the database as it was. Objects are owned by the user of databaseURL, whatever
// user owned them where the dump was made, so a backup of the embedded default restores into a
// database of another user and back.
func Restore(ctx context.Context, databaseURL, path string, opts RestoreOptions) error {
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	pgRestore, target, env, err := program(ctx, "pg_restore", databaseURL)
	if err != nil {
		return fmt.Errorf("restore: %w", err)
	}
	if !opts.Clean {
		n, err := tables(ctx, databaseURL)
		if err != nil {
			return fmt.Errorf("restore: %w", err)
		}
		if n > 0 {
			return fmt.Errorf("restore: %w", ErrNotEmpty)
		}
	}
	args := []string{"--dbname=" + target, "--no-owner", "--no-privileges", "--single-transaction", "--exit-on-error"}
	if opts.Clean {
		args = append(args, "--clean", "--if-exists")
	}
	if err := run(ctx, env, nil, pgRestore, append(args, path)...); err != nil {
		return fmt.Errorf("restore %s: %w", path, err)
	}
	return nil
}

// program finds one of PostgreSQL's programs and what to pass it to reach databaseURL.
func program(ctx context.Context, name, databaseURL string) (path, target string, env []string, err error) {
	if path, err = pgcluster.FindTool(ctx, name); err != nil {
		return "", "", nil, err
	}
	target, env, err = libpqTarget(databaseURL)
	return path, target, env, err
}

// tables counts the tables of the database's public schema, where the migrations put theirs.
func tables(ctx context.Context, databaseURL string) (int, error) {
	conn, err := pgx.Connect(ctx, databaseURL)
	if err != nil {
		return 0, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var n int
	err = conn.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").Scan(&n)
	return n, err
}

func run(ctx context.Context, env []string, stdout *os.File, path string, args ...string) error {
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	if stdout != nil {
		cmd.Stdout = stdout
	}
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return fmt.Errorf("%s: %w: %s", cmd.Path, err, msg)
		}
		return fmt.Errorf("%s: %w", cmd.Path, err)
	}
	return nil
}

// libpqParams are the URI query parameters libpq accepts; pg_dump and pg_restore refuse any other.
var libpqParams = map[string]bool{
	"host": true, "hostaddr": true, "port": true, "dbname": true, "user": true, "password": true,
	"passfile": true, "channel_binding": true, "connect_timeout": true, "client_encoding": true,
	"options": true, "application_name": true, "fallback_application_name": true, "keepalives": true,
	"keepalives_idle": true, "keepalives_interval": true, "keepalives_count": true,
	"tcp_user_timeout": true, "gssencmode": true, "sslmode": true, "requiressl": true,
	"sslcompression": true, "sslcert": true, "sslkey": true, "sslpassword": true, "sslrootcert": true,
	"sslcrl": true, "sslcrldir": true, "sslsni": true, "requirepeer": true,
	"ssl_min_protocol_version": true, "ssl_max_protocol_version": true, "krbsrvname": true,
	"gsslib": true, "service": true, "target_session_attrs": true, "load_balance_hosts": true,
}

// libpqTarget turns a database URL as the service reads it (pgx) into what libpq's programs
// accept: query parameters libpq does not know (pgx's settings, run-time parameters such as
// statement_timeout, which pg_dump sets itself) are dropped, and a password moves to PGPASSWORD so
// that it is not in the process list. A keyword=value connection string is passed as it is.
func libpqTarget(databaseURL string) (target string, env []string, err error) {
	if !strings.HasPrefix(databaseURL, "postgres://") && !strings.HasPrefix(databaseURL, "postgresql://") {
		if strings.TrimSpace(databaseURL) == "" {
			return "", nil, errors.New("no database URL")
		}
		return databaseURL, nil, nil
	}
	u, err := url.Parse(databaseURL)
	if err != nil {
		return "", nil, fmt.Errorf("database URL: %w", err)
	}
	if u.User != nil {
		if pw, ok := u.User.Password(); ok {
			env = append(env, "PGPASSWORD="+pw)
			u.User = url.User(u.User.Username())
		}
	}
	q := u.Query()
	if pw := q.Get("password"); pw != "" {
		env = append(env, "PGPASSWORD="+pw)
	}
	for k := range q {
		if !libpqParams[k] || k == "password" {
			q.Del(k)
		}
	}
	u.RawQuery = q.Encode()
	return u.String(), env, nil
}
