package cmd

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/krm-catalog/krm-catalog/apiclient"
	// as ident: identity names a signer's identity in this package
	ident "github.com/krm-catalog/krm-catalog/identity"
)

// publisherAPIFlags are the flags of a publisher command that talks to the API.
type publisherAPIFlags struct {
	serverURL, token, publisher string
	allowHTTP                   bool
}

func (f *publisherAPIFlags) register(cmd *cobra.Command, what string) {
	cmd.Flags().StringVar(&f.serverURL, "server", "http://127.0.0.1:8080", "the krm-catalog service")
	cmd.Flags().StringVar(&f.token, "token", "", "API token of the publisher (default $KRM_CATALOG_TOKEN)")
	allowHTTPFlag(cmd, &f.allowHTTP)
	cmd.Flags().StringVar(&f.publisher, "publisher", "", "the publisher to "+what+" (required)")
	_ = cmd.MarkFlagRequired("publisher")
}

// client is the API client of the publisher's token.
func (f *publisherAPIFlags) client() (*apiclient.Client, error) {
	token, err := tokenOrEnv(f.token)
	if err != nil {
		return nil, err
	}
	c, err := tokenClient(f.serverURL, token, f.allowHTTP)
	if err != nil {
		return nil, usageErr(err)
	}
	return c, nil
}

func newPublisherIdentityChallengeCmd() *cobra.Command {
	var (
		api     publisherAPIFlags
		payload string
	)
	cmd := &cobra.Command{
		Use:   "identity-challenge --publisher NAME --payload FILE",
		Short: "Get a challenge to sign keylessly, to register an identity with add-identity",
		Long: `Identity-challenge asks the service for a challenge bound to the publisher, writes the
exact bytes to sign to --payload, and prints the challenge's nonce. Sign the file keylessly as
the identity to register (cosign sign-blob --bundle proof.json FILE, in the CI workflow whose
identity it is), then run add-identity with the nonce and the bundle within ten minutes.`,
		Example: `  nonce=$(krm-catalog publisher identity-challenge --publisher example.com --payload challenge.txt)
  cosign sign-blob --yes --bundle proof.json challenge.txt
  krm-catalog publisher add-identity --publisher example.com --nonce "$nonce" --bundle proof.json \
    --issuer https://token.actions.githubusercontent.com \
    --subject 'https://github.com/example/fns/.github/workflows/release.yml@refs/tags/*'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			client, err := api.client()
			if err != nil {
				return err
			}
			ch, err := client.IdentityChallenge(cmd.Context(), api.publisher)
			if err != nil {
				return opErr(err)
			}
			if err := os.WriteFile(payload, ch.Payload(), 0o644); err != nil {
				return opErr(fmt.Errorf("write the payload: %w", err))
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), ch.Nonce)
			return err
		},
	}
	api.register(cmd, "register an identity for")
	cmd.Flags().StringVar(&payload, "payload", "", "file to write the bytes to sign to (required)")
	_ = cmd.MarkFlagRequired("payload")
	return cmd
}

func newPublisherAddIdentityCmd() *cobra.Command {
	var (
		api                    publisherAPIFlags
		issuer, subject, nonce string
		bundlePath             string
		format                 *outputFormat
	)
	cmd := &cobra.Command{
		Use:   "add-identity --publisher NAME --issuer URL --subject PATTERN --nonce NONCE --bundle FILE",
		Short: "Register a keyless identity (OIDC issuer and subject) for a publisher, with proof",
		Long: `Add-identity registers an identity beside the publisher's keys: signatures whose Fulcio
certificate it matches then count as "verified" for the publisher's catalogs and functions.
The subject is exact, or a URL whose * stands for any run of characters after its host and
first path segment (a GitHub workflow on any tag: .../release.yml@refs/tags/*). The proof is a
sigstore bundle over a challenge from identity-challenge, signed keylessly by a certificate the
identity matches (the service verifies it against its trusted root).`,
		Example: `  krm-catalog publisher add-identity --publisher example.com --nonce "$nonce" --bundle proof.json \
    --issuer https://token.actions.githubusercontent.com \
    --subject 'https://github.com/example/fns/.github/workflows/release.yml@refs/tags/*'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := format.check(); err != nil {
				return err
			}
			pattern := ident.Pattern{Issuer: issuer, Subject: subject}
			if err := pattern.Validate(); err != nil {
				return usageErr(err)
			}
			b, err := os.ReadFile(bundlePath)
			if err != nil {
				return usageErr(fmt.Errorf("read the bundle: %w", err))
			}
			client, err := api.client()
			if err != nil {
				return err
			}
			id, created, err := client.RegisterIdentity(cmd.Context(), api.publisher, ident.KeylessProof{Pattern: pattern, Nonce: nonce, Bundle: b})
			if err != nil {
				return opErr(fmt.Errorf("add identity: %w", err))
			}
			if format.is("json") {
				return writeJSON(cmd.OutOrStdout(), map[string]any{"created": created, "identity": id})
			}
			what := "registered"
			if !created {
				what = "already registered"
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "identity %s %s for publisher %s\n", id.Pattern, what, id.Publisher)
			return err
		},
	}
	api.register(cmd, "register the identity for")
	cmd.Flags().StringVar(&issuer, "issuer", "", "the OIDC issuer, exact (required)")
	cmd.Flags().StringVar(&subject, "subject", "", "the certificate subject, or a URL pattern with * (required)")
	cmd.Flags().StringVar(&nonce, "nonce", "", "the nonce identity-challenge printed (required)")
	cmd.Flags().StringVar(&bundlePath, "bundle", "", "the sigstore bundle over the challenge's payload (required)")
	for _, f := range []string{"issuer", "subject", "nonce", "bundle"} {
		_ = cmd.MarkFlagRequired(f)
	}
	format = addFormatFlag(cmd, "text", "json")
	return cmd
}
