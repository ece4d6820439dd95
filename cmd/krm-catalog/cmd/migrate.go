package cmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/krm-catalog/krm-catalog/migrations"
)

func newMigrateCmd(streams IO) *cobra.Command {
	db := databaseFlags{create: true}
	cmd := &cobra.Command{
		Use:   "migrate up|down|version",
		Short: "Apply, revert or show the database schema migrations",
		Long: `Migrate manages the schema of the service's database. serve applies pending
migrations on start, so this is for operators who migrate separately or need to
step back: "down" reverts the last migration.`,
		Args:      cobra.ExactArgs(1),
		ValidArgs: []string{"up", "down", "version"},
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			var run func(context.Context, string) error
			switch args[0] {
			case "up":
				run = migrations.Up
			case "down":
				run = migrations.Down
			case "version":
			default:
				return usageErr(fmt.Errorf("migrate takes up, down or version, not %q", args[0]))
			}
			database, err := db.openDB(ctx, commandLogger(streams))
			if err != nil {
				return usageErr(err)
			}
			defer database.Close(context.WithoutCancel(ctx))
			if run != nil {
				if err := run(ctx, database.URL); err != nil {
					return usageErr(err)
				}
			}
			st, err := migrations.Version(ctx, database.URL)
			if err != nil {
				return usageErr(err)
			}
			dirty := ""
			if st.Dirty {
				dirty = " (dirty: a migration failed half-way; fix the database, then force the version)"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "schema version %d of %d%s\n", st.Version, st.Latest, dirty)
			return nil
		},
	}
	db.register(cmd)
	return cmd
}
