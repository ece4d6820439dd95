package cmd

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/krm-catalog/krm-catalog/apiclient"
)

// proposalFlags are the flags the proposal commands share: the service, and the token of those
// that change something.
type proposalFlags struct {
	serverURL, token string
	allowHTTP        bool
	format           *outputFormat
}

func (f *proposalFlags) add(cmd *cobra.Command, withToken bool) {
	serverFlag(cmd, &f.serverURL)
	if withToken {
		cmd.Flags().StringVar(&f.token, "token", "", "API token (default $KRM_CATALOG_TOKEN)")
		allowHTTPFlag(cmd, &f.allowHTTP)
	}
	f.format = addFormatFlag(cmd, "text", "json")
}

// client checks the format and returns the API client; with a token when the command sends one.
func (f *proposalFlags) client(withToken bool) (*apiclient.Client, error) {
	if err := f.format.check(); err != nil {
		return nil, err
	}
	if !withToken {
		return searchClient(f.serverURL)
	}
	token, err := tokenOrEnv(f.token)
	if err != nil {
		return nil, err
	}
	c, err := tokenClient(serverOrEnv(f.serverURL), token, f.allowHTTP)
	if err != nil {
		return nil, usageErr(err)
	}
	return c, nil
}

// apiFailure is how a proposal command reports a refused request: exit 1 for what the service
// refused or could not be reached for, 2 for the rest.
func apiFailure(what string, err error) error {
	var apiErr *apiclient.Error
	if errors.As(err, &apiErr) || errors.Is(err, apiclient.ErrUnreachable) {
		return failure(fmt.Errorf("%s: %w", what, err))
	}
	return usageErr(fmt.Errorf("%s: %w", what, err))
}

func parseProposalID(s string) (int64, error) {
	id, err := strconv.ParseInt(strings.TrimPrefix(s, "#"), 10, 64)
	if err != nil || id < 1 {
		return 0, usageErr(fmt.Errorf("a proposal is a number from 1, not %q", s))
	}
	return id, nil
}

func newCatalogProposeCmd() *cobra.Command {
	var f proposalFlags
	cmd := &cobra.Command{
		Use:   "propose CATALOG DEFINITION",
		Short: "Propose a function of yours for a catalog another publisher publishes",
		Long: `Propose sends a KRMFunctionDefinition of a function your publisher owns to the service as a
proposed entry of CATALOG. The catalog's publisher approves it (which publishes a new version
of the catalog with the entry) or rejects it with a reason. Proposing the same file again
returns the open proposal.`,
		Example: `  krm-catalog catalog propose --server https://krm.example.com official definition.yaml`,
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.client(true)
			if err != nil {
				return err
			}
			data, err := os.ReadFile(args[1])
			if err != nil {
				return usageErr(fmt.Errorf("read %s: %w", args[1], err))
			}
			p, err := c.Propose(cmd.Context(), args[0], data)
			if err != nil {
				return apiFailure("not proposed", err)
			}
			if f.format.is("json") {
				return writeJSON(cmd.OutOrStdout(), p)
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "proposal %d: %s/%s %s for catalog %s (%s)\n", p.ID, p.Group, p.Kind, strings.Join(p.Versions, ","), p.Catalog, p.Status)
			return err
		},
	}
	f.add(cmd, true)
	return cmd
}

func newCatalogProposalsCmd() *cobra.Command {
	var f proposalFlags
	cmd := &cobra.Command{
		Use:     "proposals CATALOG",
		Short:   "List a catalog's open proposals",
		Example: `  krm-catalog catalog proposals --server https://krm.example.com official`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := f.client(false)
			if err != nil {
				return err
			}
			ps, err := c.Proposals(cmd.Context(), args[0])
			if err != nil {
				return apiFailure("list proposals", err)
			}
			if f.format.is("json") {
				return writeJSON(cmd.OutOrStdout(), map[string]any{"proposals": ps})
			}
			if len(ps) == 0 {
				_, err := fmt.Fprintf(cmd.OutOrStdout(), "catalog %s has no open proposals\n", args[0])
				return err
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tFUNCTION\tVERSIONS\tPROPOSER\tPROPOSED")
			for _, p := range ps {
				fmt.Fprintf(tw, "%d\t%s/%s\t%s\t%s\t%s\n", p.ID, p.Group, p.Kind, strings.Join(p.Versions, ","), p.Proposer, p.CreatedAt.UTC().Format("2006-01-02 15:04"))
			}
			return tw.Flush()
		},
	}
	f.add(cmd, false)
	return cmd
}

func newCatalogApproveCmd() *cobra.Command {
	var (
		f       proposalFlags
		version string
	)
	cmd := &cobra.Command{
		Use:   "approve --version X CATALOG ID",
		Short: "Approve a proposal: publish version X of your catalog with its entry",
		Long: `Approve publishes version X of CATALOG: its latest version with the proposal's entry (in
place of the entry of the same function, else added), listed by reference from the proposer.
Only the catalog's publisher approves.`,
		Example: `  krm-catalog catalog approve --version 1.1.0 official 7`,
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if version == "" {
				return usageErr(errors.New("--version is required: the catalog version the approval publishes"))
			}
			id, err := parseProposalID(args[1])
			if err != nil {
				return err
			}
			c, err := f.client(true)
			if err != nil {
				return err
			}
			res, err := c.Approve(cmd.Context(), args[0], id, version)
			if err != nil {
				return apiFailure("not approved", err)
			}
			if f.format.is("json") {
				return writeJSON(cmd.OutOrStdout(), res)
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "proposal %d approved: catalog %v version %v published: %v\n", id, res.Catalog["catalog"], res.Catalog["version"], res.Catalog["digest"])
			return err
		},
	}
	f.add(cmd, true)
	cmd.Flags().StringVar(&version, "version", "", "the catalog version to publish (required)")
	return cmd
}

func newCatalogRejectCmd() *cobra.Command {
	var (
		f      proposalFlags
		reason string
	)
	cmd := &cobra.Command{
		Use:     "reject --reason TEXT CATALOG ID",
		Short:   "Reject a proposal for your catalog, with a reason",
		Example: `  krm-catalog catalog reject --reason "we run our own linter" official 8`,
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if strings.TrimSpace(reason) == "" {
				return usageErr(errors.New("--reason is required: the proposer reads it"))
			}
			id, err := parseProposalID(args[1])
			if err != nil {
				return err
			}
			c, err := f.client(true)
			if err != nil {
				return err
			}
			p, err := c.Reject(cmd.Context(), args[0], id, reason)
			if err != nil {
				return apiFailure("not rejected", err)
			}
			if f.format.is("json") {
				return writeJSON(cmd.OutOrStdout(), p)
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "proposal %d rejected: %s\n", p.ID, p.Reason)
			return err
		},
	}
	f.add(cmd, true)
	cmd.Flags().StringVar(&reason, "reason", "", "why (required; up to 1000 bytes)")
	return cmd
}
