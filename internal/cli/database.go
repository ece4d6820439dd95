package cli

import (
	"context"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/krm-catalog/krm-catalog/internal/embedded"
	"github.com/krm-catalog/krm-catalog/migrations"
	"github.com/krm-catalog/krm-catalog/store"
)

// databaseFlags are the flags of every command that opens the service's database.
type databaseFlags struct {
	url     string
	dataDir string
}

func (f *databaseFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.url, "database-url", os.Getenv("DATABASE_URL"),
		"PostgreSQL URL (default $DATABASE_URL; with neither, the embedded cluster in --data-dir)")
	cmd.Flags().StringVar(&f.dataDir, "data-dir", embedded.DefaultDataDir(),
		"where the embedded PostgreSQL cluster keeps its data")
}

// open opens the database and brings its schema up to date.
func (f *databaseFlags) open(ctx context.Context, logger *slog.Logger) (*embedded.Database, error) {
	db, err := embedded.Open(ctx, f.url, f.dataDir, logger)
	if err != nil {
		return nil, err
	}
	if err := migrations.Up(ctx, db.URL); err != nil {
		_ = db.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	return db, nil
}

// withStore opens the database (joining a running serve on the same data dir) for one command.
func (f *databaseFlags) withStore(cmd *cobra.Command, streams IO, fn func(context.Context, *store.Store) error) error {
	ctx := cmd.Context()
	logger, _ := newLogger(streams, "text")
	database, err := f.open(ctx, logger)
	if err != nil {
		return &exitError{code: ExitUsage, err: err}
	}
	defer database.Close(context.WithoutCancel(ctx))
	st, err := store.Open(ctx, database.URL)
	if err != nil {
		return &exitError{code: ExitUsage, err: err}
	}
	defer st.Close()
	return fn(ctx, st)
}
