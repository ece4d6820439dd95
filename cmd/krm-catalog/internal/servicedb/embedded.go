// Package servicedb opens the service's database: the one a URL names, or, with none, the embedded
// default, a private PostgreSQL cluster in a data directory, created on first use and kept after.
package servicedb

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/krm-catalog/krm-catalog/internal/pgcluster"
)

// DatabaseName is the database krm-catalog uses in its embedded cluster.
const DatabaseName = "krm_catalog"

// Database is an open database location and how to let go of it.
type Database struct {
	URL string
	// Description says where the data lives, for logs.
	Description string
	cluster     *pgcluster.Cluster
}

// Close stops the embedded cluster if this process started it; otherwise it does nothing.
func (d *Database) Close(ctx context.Context) error {
	if d.cluster == nil {
		return nil
	}
	return d.cluster.Stop(ctx)
}

// Shared reports whether another process (a serve on the same data directory) runs the embedded
// cluster this Database joined.
func (d *Database) Shared() bool { return d.cluster != nil && !d.cluster.Owned() }

// DefaultDataDir is $XDG_DATA_HOME/krm-catalog, else ~/.local/share/krm-catalog. For root it is
// /var/lib/krm-catalog instead: PostgreSQL will not run as root, so the cluster runs as the postgres
// user, who cannot enter root's home directory.
func DefaultDataDir() string {
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "krm-catalog")
	}
	if os.Geteuid() == 0 {
		return "/var/lib/krm-catalog"
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "share", "krm-catalog")
	}
	return filepath.Join(os.TempDir(), "krm-catalog")
}

// Open returns the database at url, or with url empty, starts (or joins, when another krm-catalog
// process runs it) the embedded cluster in dataDir and makes sure its database exists.
func Open(ctx context.Context, url, dataDir string, logger *slog.Logger) (*Database, error) {
	if url != "" {
		return &Database{URL: url, Description: "the database at --database-url"}, nil
	}
	if dataDir == "" {
		dataDir = DefaultDataDir()
	}
	pgDir := filepath.Join(dataDir, "postgres")
	cluster, err := pgcluster.Start(ctx, pgcluster.Options{DataDir: pgDir, SocketOnly: true, Logger: logger, Supervise: true})
	if err != nil {
		if errors.Is(err, pgcluster.ErrNoBinaries) {
			return nil, pgcluster.ErrNoBinaries
		}
		return nil, fmt.Errorf("open embedded database: %w", err)
	}
	db := &Database{URL: cluster.URL(DatabaseName), Description: "the embedded PostgreSQL cluster in " + pgDir, cluster: cluster}
	if err := createDatabase(ctx, cluster.URL("postgres")); err != nil {
		_ = db.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("open embedded database: %w", err)
	}
	return db, nil
}

// ErrNoDatabase reports that the data directory holds no embedded cluster: only the commands that
// create one (serve, migrate) start a new cluster there.
var ErrNoDatabase = errors.New("no krm-catalog database")

// OpenExisting is Open for commands that work on a database serve made: with url empty it refuses a
// data directory without a cluster instead of creating one, since a second, empty cluster would
// answer (a token it creates is unknown to the serve that users talk to).
func OpenExisting(ctx context.Context, url, dataDir string, logger *slog.Logger) (*Database, error) {
	if url == "" {
		if dataDir == "" {
			dataDir = DefaultDataDir()
		}
		pgDir := filepath.Join(dataDir, "postgres")
		if _, err := os.Stat(filepath.Join(pgDir, "PG_VERSION")); err != nil {
			return nil, fmt.Errorf("%w in %s: `krm-catalog serve` creates it on its first start in its --data-dir (default %s); give the --data-dir serve runs with, or --database-url", ErrNoDatabase, dataDir, DefaultDataDir())
		}
	}
	return Open(ctx, url, dataDir, logger)
}

func createDatabase(ctx context.Context, adminURL string) error {
	conn, err := pgx.Connect(ctx, adminURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, "CREATE DATABASE "+DatabaseName)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42P04" { // duplicate_database: kept from an earlier start
		return nil
	}
	return err
}
