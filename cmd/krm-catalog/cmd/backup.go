package cmd

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/krm-catalog/krm-catalog/cmd/krm-catalog/internal/backup"
	"github.com/krm-catalog/krm-catalog/cmd/krm-catalog/internal/servicedb"
	"github.com/krm-catalog/krm-catalog/migrations"
)

func newBackupCmd(streams IO) *cobra.Command {
	var db databaseFlags
	cmd := &cobra.Command{
		Use:   "backup FILE",
		Short: "Back up the service's database to a file (pg_dump's custom format)",
		Long: `Backup writes the service's database (catalogs, definitions, publishers, tokens,
grants, keys, audit) to FILE with PostgreSQL's pg_dump, in its custom format, which
pg_restore and "krm-catalog restore" read. It reads one snapshot, so it is consistent
while serve runs and publishes; on the embedded default it joins a running serve's
cluster. FILE is written with mode 0600 and replaced only once the dump is whole.`,
		Example: `  krm-catalog backup --data-dir /var/lib/krm-catalog krm-catalog.dump
  krm-catalog backup --database-url "$DATABASE_URL" krm-catalog.dump`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			database, err := db.openAsIs(ctx, streams)
			if err != nil {
				return err
			}
			defer database.Close(context.WithoutCancel(ctx))
			if err := backup.Dump(ctx, database.URL, args[0]); err != nil {
				return failure(err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "backed up %s to %s\n", database.Description, args[0])
			return nil
		},
	}
	db.register(cmd)
	return cmd
}

func newRestoreCmd(streams IO) *cobra.Command {
	var (
		// a restore onto a new machine makes the database it loads
		db      = databaseFlags{create: true}
		clean   bool
		foreign bool
	)
	cmd := &cobra.Command{
		Use:   "restore FILE",
		Short: "Restore the service's database from a backup",
		Long: `Restore loads a backup made by "krm-catalog backup" (or pg_dump --format=custom)
into the service's database, in one transaction, then applies the migrations a backup
of an older release lacks. Nothing of the backup's SQL runs: the schema comes from this
release's migrations, at the version the backup records, and the backup gives the rows,
which pg_restore reads out and restore loads into those tables. A backup that holds
anything else (a function, a trigger, a view: what krm-catalog never makes) is refused
unless --ignore-foreign-objects, which leaves it out. The database must hold no table
(a new --data-dir, or a database just created) unless --clean is given. On the embedded
default, stop serve first: restore refuses a data directory a serve runs on. Tokens,
grants and keys come back as they were, so clients keep working.`,
		Example: `  krm-catalog restore --data-dir /var/lib/krm-catalog-new krm-catalog.dump
  krm-catalog restore --database-url "$DATABASE_URL" krm-catalog.dump`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			database, err := db.openAsIs(ctx, streams)
			if err != nil {
				return err
			}
			defer database.Close(context.WithoutCancel(ctx))
			if database.Shared() {
				// its caches would keep serving what the restore replaced
				return usageErr(errors.New("restore: a serve runs on this data directory; stop it first"))
			}
			if err := backup.Restore(ctx, database.URL, args[0], backup.RestoreOptions{Clean: clean, IgnoreForeign: foreign}); err != nil {
				if errors.Is(err, backup.ErrNotEmpty) || errors.Is(err, backup.ErrForeignObjects) {
					return usageErr(err)
				}
				return failure(err)
			}
			if err := migrations.Up(ctx, database.URL); err != nil {
				return failure(err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "restored %s into %s\n", args[0], database.Description)
			return nil
		},
	}
	db.register(cmd)
	cmd.Flags().BoolVar(&clean, "clean", false, "drop the tables the backup holds before restoring it, for restoring over a database of the same schema")
	cmd.Flags().BoolVar(&foreign, "ignore-foreign-objects", false, "restore a backup that holds objects krm-catalog does not make (functions, triggers, views...) by leaving them out, instead of refusing it")
	return cmd
}

// openAsIs opens the database without migrating it: a backup copies what is there, and a restore
// migrates what it loaded.
func (f *databaseFlags) openAsIs(ctx context.Context, streams IO) (*servicedb.Database, error) {
	database, err := f.openDB(ctx, commandLogger(streams))
	if err != nil {
		return nil, usageErr(err)
	}
	return database, nil
}
