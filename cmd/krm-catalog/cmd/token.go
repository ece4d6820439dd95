package cmd

import (
	"context"
	"fmt"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/krm-catalog/krm-catalog/store"
)

func newTokenCmd(streams IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Create, list and revoke the API tokens publishers publish with",
	}
	var (
		db           databaseFlags
		publisher    string
		description  string
		format       *outputFormat
		createFormat *outputFormat
	)
	withStore := func(cmd *cobra.Command, fn func(context.Context, *store.Store) error) error {
		return db.withStore(cmd, streams, fn)
	}
	create := &cobra.Command{
		Use:   "create --publisher NAME",
		Short: "Create a token; it is printed once, alone on the last line",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := createFormat.check(); err != nil {
				return err
			}
			return withStore(cmd, func(ctx context.Context, st *store.Store) error {
				token, info, err := st.CreateToken(ctx, publisher, description)
				if err != nil {
					return usageErr(err)
				}
				out := cmd.OutOrStdout()
				if createFormat.is("json") {
					return writeJSON(out, struct {
						ID        int64  `json:"id"`
						Publisher string `json:"publisher"`
						Token     string `json:"token"`
					}{info.ID, info.Publisher, token})
				}
				fmt.Fprintf(out, "created token %d for publisher %s; it is shown only now:\n", info.ID, info.Publisher)
				fmt.Fprintln(out, token)
				return nil
			})
		},
	}
	list := &cobra.Command{
		Use:   "list --publisher NAME",
		Short: "List a publisher's tokens (never the tokens themselves)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := format.check(); err != nil {
				return err
			}
			return withStore(cmd, func(ctx context.Context, st *store.Store) error {
				tokens, err := st.ListTokens(ctx, publisher)
				if err != nil {
					return err
				}
				if format.is("json") {
					if tokens == nil {
						tokens = []store.Token{}
					}
					return writeJSON(cmd.OutOrStdout(), tokens)
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tHINT\tCREATED\tLAST USED\tSTATE\tDESCRIPTION")
				for _, t := range tokens {
					state := "active"
					if t.RevokedAt != nil {
						state = "revoked " + t.RevokedAt.Format(time.DateTime)
					}
					fmt.Fprintf(tw, "%d\t%s…\t%s\t%s\t%s\t%s\n", t.ID, t.Hint, t.CreatedAt.Format(time.DateTime), when(t.LastUsedAt), state, t.Description)
				}
				return tw.Flush()
			})
		},
	}
	revoke := &cobra.Command{
		Use:   "revoke --publisher NAME ID",
		Short: "Revoke a token by its ID (see token list)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := strconv.ParseInt(args[0], 10, 64)
			if err != nil {
				return usageErr(fmt.Errorf("token ID %q is not a number", args[0]))
			}
			return withStore(cmd, func(ctx context.Context, st *store.Store) error {
				if err := st.RevokeToken(ctx, publisher, id); err != nil {
					return failure(err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "revoked token %d of publisher %s\n", id, publisher)
				return nil
			})
		},
	}
	for _, c := range []*cobra.Command{create, list, revoke} {
		db.register(c)
		c.Flags().StringVar(&publisher, "publisher", "", "the publisher the token acts for (required)")
		_ = c.MarkFlagRequired("publisher")
		cmd.AddCommand(c)
	}
	create.Flags().StringVar(&description, "description", "", "what the token is for")
	format = addFormatFlag(list, "text", "json")
	createFormat = addFormatFlag(create, "text", "json")
	return cmd
}

func when(t *time.Time) string {
	if t == nil {
		return "never"
	}
	return t.Format(time.DateTime)
}
