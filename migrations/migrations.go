// Package migrations holds the database schema as embedded SQL migrations and applies them with
// golang-migrate.
package migrations

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/golang-migrate/migrate/v4"
	// registers the pgx5:// database driver with migrate
	_ "github.com/golang-migrate/migrate/v4/database/pgx/v5"
	"github.com/golang-migrate/migrate/v4/source/iofs"
)

//go:embed *.sql
var files embed.FS

// Status is the schema version of a database.
type Status struct {
	Version uint `json:"version"`
	Dirty   bool `json:"dirty"`
	// Latest is the newest version these migrations know.
	Latest uint `json:"latest"`
}

// Up applies every migration not yet applied.
func Up(ctx context.Context, databaseURL string) error {
	return withMigrate(ctx, databaseURL, "migrate up", func(m *migrate.Migrate) error {
		if err := m.Up(); err != nil && !errors.Is(err, migrate.ErrNoChange) {
			return err
		}
		return nil
	})
}

// To migrates up or down to version: tests use it to build a database as an older release left it.
func To(ctx context.Context, databaseURL string, version uint) error {
	return withMigrate(ctx, databaseURL, fmt.Sprintf("migrate to %d", version), func(m *migrate.Migrate) error {
		if err := m.Migrate(version); err != nil && !errors.Is(err, migrate.ErrNoChange) {
			return err
		}
		return nil
	})
}

// Down reverts the last applied migration.
func Down(ctx context.Context, databaseURL string) error {
	return withMigrate(ctx, databaseURL, "migrate down", func(m *migrate.Migrate) error {
		if err := m.Steps(-1); err != nil && !errors.Is(err, migrate.ErrNoChange) {
			return err
		}
		return nil
	})
}

// Version reports the schema version of the database.
func Version(ctx context.Context, databaseURL string) (Status, error) {
	var st Status
	err := withMigrate(ctx, databaseURL, "migrate version", func(m *migrate.Migrate) error {
		v, dirty, err := m.Version()
		if err != nil && !errors.Is(err, migrate.ErrNilVersion) {
			return err
		}
		st.Version, st.Dirty = v, dirty
		return nil
	})
	if err != nil {
		return st, err
	}
	st.Latest, err = latest()
	return st, err
}

func latest() (uint, error) {
	entries, err := files.ReadDir(".")
	if err != nil {
		return 0, fmt.Errorf("list migrations: %w", err)
	}
	var n uint
	for _, e := range entries {
		var v uint
		if _, err := fmt.Sscanf(e.Name(), "%d_", &v); err == nil && v > n {
			n = v
		}
	}
	return n, nil
}

func withMigrate(ctx context.Context, databaseURL, op string, fn func(*migrate.Migrate) error) error {
	src, err := iofs.New(files, ".")
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	m, err := migrate.NewWithSourceInstance("iofs", src, migrateURL(databaseURL))
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	defer m.Close()
	// migrate has no context support; GracefulStop makes it stop between migrations on cancel.
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-ctx.Done():
			m.GracefulStop <- true
		case <-done:
		}
	}()
	if err := fn(m); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}

// migrateURL turns a postgres:// URL into the pgx5:// form the migrate driver registers.
func migrateURL(databaseURL string) string {
	for _, prefix := range []string{"postgres://", "postgresql://"} {
		if rest, ok := strings.CutPrefix(databaseURL, prefix); ok {
			return "pgx5://" + rest
		}
	}
	if u, err := url.Parse(databaseURL); err == nil && u.Scheme == "" {
		return "pgx5://" + databaseURL
	}
	return databaseURL
}

// Latest is the newest version these migrations know.
func Latest() (uint, error) { return latest() }

// versionTableDDL is the table golang-migrate keeps the schema version in (its pgx/v5 driver's
// own statement), so that a database ApplyInTx made is one migrate continues.
const versionTableDDL = `CREATE TABLE IF NOT EXISTS "schema_migrations" (version bigint not null primary key, dirty boolean not null)`

// ApplyInTx applies the up migrations up to and including version in tx, and records version as
// golang-migrate records it: a restore builds the schema and loads its rows in one transaction,
// so that a failure leaves the database as it was. The database must hold none of the schema.
func ApplyInTx(ctx context.Context, tx pgx.Tx, version uint) error {
	entries, err := files.ReadDir(".")
	if err != nil {
		return fmt.Errorf("list migrations: %w", err)
	}
	type step struct {
		version uint
		name    string
	}
	var steps []step
	for _, e := range entries {
		var v uint
		if _, err := fmt.Sscanf(e.Name(), "%d_", &v); err == nil && v <= version && strings.HasSuffix(e.Name(), ".up.sql") {
			steps = append(steps, step{v, e.Name()})
		}
	}
	sort.Slice(steps, func(i, j int) bool { return steps[i].version < steps[j].version })
	if len(steps) == 0 || steps[len(steps)-1].version != version {
		return fmt.Errorf("apply migrations: no migration %d", version)
	}
	for _, s := range steps {
		sql, err := files.ReadFile(s.name)
		if err != nil {
			return fmt.Errorf("apply migration %s: %w", s.name, err)
		}
		if _, err := tx.Exec(ctx, string(sql)); err != nil {
			return fmt.Errorf("apply migration %s: %w", s.name, err)
		}
	}
	if _, err := tx.Exec(ctx, versionTableDDL); err != nil {
		return fmt.Errorf("apply migrations: %w", err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO "schema_migrations" (version, dirty) VALUES ($1, false)`, int64(version)); err != nil {
		return fmt.Errorf("apply migrations: %w", err)
	}
	return nil
}
