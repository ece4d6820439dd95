package cmd

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/krm-catalog/krm-catalog/oci/sign"
	"github.com/krm-catalog/krm-catalog/store"
)

func newPublisherCmd(streams IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "publisher",
		Short: "Manage who owns which groups (admin) and register a publisher's signing keys",
		Long: `A publisher whose name is a DNS name owns that group and the groups under it: example.com
may publish in example.com and fn.example.com. Any other group needs a grant, which an admin
makes with grant, takes back with revoke and reviews with list. A group's owner decides who
adds new kinds; a kind stays its registrant's until an admin retires it (retire). Like token
create, these work on the service's database directly.

add-key registers a cosign public key for a publisher over the API, proving that the
publisher holds the private key: it signs a challenge the service issued. add-identity
registers a keyless identity (an OIDC issuer and a certificate subject, such as a CI
workflow) the same way: identity-challenge gets the challenge, signed keylessly as the identity.`,
	}
	cmd.AddCommand(newPublisherGrantCmd(streams), newPublisherRevokeCmd(streams), newPublisherListCmd(streams), newPublisherRetireCmd(streams), newPublisherAddKeyCmd(),
		newPublisherIdentityChallengeCmd(), newPublisherAddIdentityCmd())
	return cmd
}

func newPublisherGrantCmd(streams IO) *cobra.Command {
	var (
		db                databaseFlags
		publisher, reason string
	)
	cmd := &cobra.Command{
		Use:   "grant --publisher NAME GROUP",
		Short: "Let a publisher publish in GROUP and the groups under it",
		Long: `Grant lets the publisher add new kinds in GROUP and the groups under it; kinds others
registered there stay theirs, and they keep publishing them. A grant is more specific
than the name of a publisher above it: granting team.example.com to other.org takes that group
from example.com, and grant says so. A group granted to another publisher must be revoked first.
Granting a group that publisher list shows without an owner resolves it.`,
		Example: `  krm-catalog publisher grant --publisher acme.example --reason "shared functions" fn.shared.io`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return db.withStore(cmd, streams, func(ctx context.Context, st *store.Store) error {
				g, created, err := st.GrantGroup(ctx, args[0], publisher, reason)
				if err != nil {
					return failure(err)
				}
				out := cmd.OutOrStdout()
				if !created {
					_, err := fmt.Fprintf(out, "group %s is already granted to %s\n", g.Group, g.Publisher)
					return err
				}
				fmt.Fprintf(out, "granted group %s to %s\n", g.Group, g.Publisher)
				if g.Overrides != "" {
					fmt.Fprintf(out, "note: the group belonged to %s; it can add no new kinds there now\n", g.Overrides)
				}
				return nil
			})
		},
	}
	db.register(cmd)
	cmd.Flags().StringVar(&publisher, "publisher", "", "the publisher to grant the group to (required)")
	_ = cmd.MarkFlagRequired("publisher")
	cmd.Flags().StringVar(&reason, "reason", "", "why, for the audit log")
	return cmd
}

func newPublisherRetireCmd(streams IO) *cobra.Command {
	var (
		db     databaseFlags
		reason string
	)
	cmd := &cobra.Command{
		Use:   "retire GROUP KIND",
		Short: "Take a registered function out of resolution, search and the registry of kinds",
		Long: `Retire takes the function GROUP/KIND out of the service's index: it no longer resolves
and is no longer found, and its kind is no longer registered, so only the group's owner can
register it again. Published catalog versions keep their bytes. Use it, for example, for the
kinds a publisher added under a grant that was revoked.`,
		Example: `  krm-catalog publisher retire --reason "grant revoked" fn.shared.io SetLabels`,
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return db.withStore(cmd, streams, func(ctx context.Context, st *store.Store) error {
				publisher, err := st.RetireFunction(ctx, args[0], args[1], reason)
				if err != nil {
					return failure(err)
				}
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "retired function %s/%s of %s\n", args[0], args[1], publisher)
				return err
			})
		},
	}
	db.register(cmd)
	cmd.Flags().StringVar(&reason, "reason", "", "why, for the audit log")
	return cmd
}

func newPublisherRevokeCmd(streams IO) *cobra.Command {
	var (
		db        databaseFlags
		publisher string
	)
	cmd := &cobra.Command{
		Use:   "revoke --publisher NAME GROUP",
		Short: "Take back a grant; the publisher's functions there stay (until retired), but it can add no new kinds",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return db.withStore(cmd, streams, func(ctx context.Context, st *store.Store) error {
				if err := st.RevokeGroup(ctx, args[0], publisher); err != nil {
					return failure(err)
				}
				_, err := fmt.Fprintf(cmd.OutOrStdout(), "revoked the grant of group %s to %s\n", args[0], publisher)
				return err
			})
		},
	}
	db.register(cmd)
	cmd.Flags().StringVar(&publisher, "publisher", "", "the publisher holding the grant (required)")
	_ = cmd.MarkFlagRequired("publisher")
	return cmd
}

// publisherList is what list prints with --format json.
type publisherList struct {
	Grants    []store.Grant         `json:"grants"`
	Conflicts []store.GroupConflict `json:"conflicts"`
}

func newPublisherListCmd(streams IO) *cobra.Command {
	var (
		db        databaseFlags
		publisher string
		format    *outputFormat
	)
	cmd := &cobra.Command{
		Use:   "list [--publisher NAME]",
		Short: "List who was granted which groups, and any group whose owner is undecided",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := format.check(); err != nil {
				return err
			}
			return db.withStore(cmd, streams, func(ctx context.Context, st *store.Store) error {
				grants, err := st.ListGrants(ctx, publisher)
				if err != nil {
					return err
				}
				conflicts, err := st.GroupConflicts(ctx)
				if err != nil {
					return err
				}
				if format.is("json") {
					if grants == nil {
						grants = []store.Grant{}
					}
					if conflicts == nil {
						conflicts = []store.GroupConflict{}
					}
					return writeJSON(cmd.OutOrStdout(), publisherList{Grants: grants, Conflicts: conflicts})
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "GROUP\tPUBLISHER\tGRANTED\tREASON")
				for _, g := range grants {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", g.Group, g.Publisher, g.GrantedAt.Format(time.DateTime), g.Reason)
				}
				if err := tw.Flush(); err != nil {
					return err
				}
				if len(conflicts) == 0 {
					return nil
				}
				out := cmd.OutOrStdout()
				fmt.Fprintf(out, "\n%d group(s) whose owner is undecided: their functions have several registrants (grant each to resolve it):\n", len(conflicts))
				for _, c := range conflicts {
					fmt.Fprintf(out, "  %s: %s", c.Group, describeConflict(c))
					if c.NameOwner != "" {
						fmt.Fprintf(out, "; owned by name by %s", c.NameOwner)
					}
					fmt.Fprintln(out)
				}
				return nil
			})
		},
	}
	db.register(cmd)
	cmd.Flags().StringVar(&publisher, "publisher", "", "only this publisher's grants")
	format = addFormatFlag(cmd, "text", "json")
	return cmd
}

// describeConflict lists who had which kinds in a conflicted group: "a.example (A, B), b.example (C)".
func describeConflict(c store.GroupConflict) string {
	pubs := make([]string, 0, len(c.Functions))
	for p := range c.Functions {
		pubs = append(pubs, p)
	}
	sort.Strings(pubs)
	parts := make([]string, len(pubs))
	for i, p := range pubs {
		parts[i] = fmt.Sprintf("%s (%s)", p, strings.Join(c.Functions[p], ", "))
	}
	return strings.Join(parts, ", ")
}

func newPublisherAddKeyCmd() *cobra.Command {
	var (
		serverURL, token, publisher, key string
		allowHTTP                        bool
		format                           *outputFormat
	)
	cmd := &cobra.Command{
		Use:   "add-key --publisher NAME --key cosign.key",
		Short: "Register a cosign key for a publisher, proving it holds the private key",
		Long: `Add-key asks the service for a challenge bound to the publisher, signs it with the cosign
private key (the file sign reads; the password comes from COSIGN_PASSWORD) and sends the
public key with the signature. Signatures by the key then count as "verified" for the
publisher's catalogs and functions. The private key never leaves this machine.`,
		Example: `  COSIGN_PASSWORD=... krm-catalog publisher add-key --server http://127.0.0.1:8080 --publisher example.com --key cosign.key`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := format.check(); err != nil {
				return err
			}
			token, err := tokenOrEnv(token)
			if err != nil {
				return err
			}
			signer, err := sign.LoadPrivateKeyFile(key, []byte(os.Getenv(sign.PasswordEnv)))
			if err != nil {
				return usageErr(fmt.Errorf("%w (the password comes from %s; a public key cannot prove anything)", err, sign.PasswordEnv))
			}
			client, err := tokenClient(serverOrEnv(serverURL), token, allowHTTP)
			if err != nil {
				return usageErr(err)
			}
			k, created, err := client.AddKey(cmd.Context(), publisher, signer)
			if err != nil {
				return opErr(fmt.Errorf("add key: %w", err))
			}
			if format.is("json") {
				return writeJSON(cmd.OutOrStdout(), map[string]any{"created": created, "key": k})
			}
			what := "registered"
			if !created {
				what = "already registered"
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "key %s %s for publisher %s\n", k.Fingerprint, what, k.Publisher)
			return err
		},
	}
	serverFlag(cmd, &serverURL)
	cmd.Flags().StringVar(&token, "token", "", "API token of the publisher (default $KRM_CATALOG_TOKEN)")
	allowHTTPFlag(cmd, &allowHTTP)
	cmd.Flags().StringVar(&publisher, "publisher", "", "the publisher to register the key for (required)")
	_ = cmd.MarkFlagRequired("publisher")
	cmd.Flags().StringVar(&key, "key", "", "cosign private key file, as sign reads it (required)")
	_ = cmd.MarkFlagRequired("key")
	format = addFormatFlag(cmd, "text", "json")
	return cmd
}
