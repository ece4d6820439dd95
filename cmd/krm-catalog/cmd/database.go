package cmd

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/krm-catalog/krm-catalog/cmd/krm-catalog/internal/servicedb"
	"github.com/krm-catalog/krm-catalog/migrations"
	"github.com/krm-catalog/krm-catalog/store"
)

// databaseFlags are the flags of every command that opens the service's database.
type databaseFlags struct {
	url      string
	dataDir  string
	maxConns int32
	// create lets the command start a new embedded cluster in a data directory without one; only
	// the commands that make a database (serve, migrate, restore) set it.
	create bool
}

func (f *databaseFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.url, "database-url", os.Getenv("DATABASE_URL"),
		"PostgreSQL URL (default $DATABASE_URL; with neither, the embedded cluster in --data-dir)")
	cmd.Flags().StringVar(&f.dataDir, "data-dir", servicedb.DefaultDataDir(),
		"where the embedded PostgreSQL cluster keeps its data")
	maxConns, _ := strconv.ParseInt(os.Getenv("KRM_CATALOG_DB_MAX_CONNS"), 10, 32)
	cmd.Flags().Int32Var(&f.maxConns, "db-max-conns", int32(maxConns),
		fmt.Sprintf("size of the database connection pool, not counting the one LISTEN connection (default $KRM_CATALOG_DB_MAX_CONNS, else %d)", store.DefaultMaxConns))
}

// storeOptions are the store's pool settings from the flags.
func (f *databaseFlags) storeOptions() store.Options {
	return store.Options{MaxConns: f.maxConns}
}

// openDB opens the database as it is, creating the embedded cluster only when f.create.
func (f *databaseFlags) openDB(ctx context.Context, logger *slog.Logger) (*servicedb.Database, error) {
	if f.create {
		return servicedb.Open(ctx, f.url, f.dataDir, logger)
	}
	return servicedb.OpenExisting(ctx, f.url, f.dataDir, logger)
}

// open opens the database and brings its schema up to date.
func (f *databaseFlags) open(ctx context.Context, logger *slog.Logger) (*servicedb.Database, error) {
	db, err := f.openDB(ctx, logger)
	if err != nil {
		return nil, err
	}
	if err := migrations.Up(ctx, db.URL); err != nil {
		_ = db.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	return db, nil
}

// commandLogger is the logger of a one-shot command on the database (token, publisher, migrate):
// warnings and errors only, so that the embedded cluster's start and stop say nothing around the
// command's own output; KRM_CATALOG_LOG_LEVEL=info shows them.
func commandLogger(streams IO) *slog.Logger {
	logger, err := newLeveledLogger(streams, "text", envOr("KRM_CATALOG_LOG_LEVEL", "warn"))
	if err != nil {
		logger, _ = newLeveledLogger(streams, "text", "warn")
	}
	return logger
}

// withStore opens the database (joining a running serve on the same data dir) for one command.
func (f *databaseFlags) withStore(cmd *cobra.Command, streams IO, fn func(context.Context, *store.Store) error) error {
	ctx := cmd.Context()
	database, err := f.open(ctx, commandLogger(streams))
	if err != nil {
		return usageErr(err)
	}
	defer database.Close(context.WithoutCancel(ctx))
	st, err := store.Open(ctx, database.URL)
	if err != nil {
		return usageErr(err)
	}
	defer st.Close()
	return fn(ctx, st)
}
