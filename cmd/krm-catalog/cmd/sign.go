package cmd

import (
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/krm-catalog/krm-catalog/oci"
	"github.com/krm-catalog/krm-catalog/oci/sign"
)

func newSignCmd() *cobra.Command {
	var (
		rf            registryFlags
		key           string
		sigFormat     string
		keyless       bool
		kl            sign.KeylessOptions
		idToken       string
		signingConfig string
	)
	cmd := &cobra.Command{
		Use:   "sign (--key cosign.key [--signature-format legacy|bundle] | --keyless) REF",
		Short: "Sign an artifact with a cosign key, offline, or keylessly in CI",
		Long: `Sign signs the manifest REF names with a cosign private key (password from COSIGN_PASSWORD)
and stores the signature in cosign's format: a simple-signing payload in the manifest tagged
sha256-<hex>.sig next to it. ` + "`cosign verify --key cosign.pub --insecure-ignore-tlog`" + ` accepts it.
With --signature-format bundle it is instead a sigstore bundle stored as an OCI 1.1 referrer,
the format cosign v3 writes. Nothing is sent to a transparency log.

With --keyless, the signature is made as ` + "`cosign sign`" + ` makes it without a key: an ephemeral key,
a certificate from Fulcio for an OIDC identity token, an entry in Rekor, and a sigstore bundle
stored as a referrer. The token is --identity-token, else $SIGSTORE_ID_TOKEN, else the one GitHub
Actions gives a job with ` + "`permissions: id-token: write`" + ` ($ACTIONS_ID_TOKEN_REQUEST_URL and
$ACTIONS_ID_TOKEN_REQUEST_TOKEN). Fulcio and Rekor are --fulcio-url and --rekor-url, or the
ones a --signing-config (signing_config.json) names; verify checks the result with
--certificate-identity and --certificate-oidc-issuer.`,
		Example: `  COSIGN_PASSWORD=... krm-catalog sign --key cosign.key registry.example.com/catalogs/platform:v1.4.0
  krm-catalog sign --keyless --fulcio-url https://fulcio.sigstore.dev --rekor-url https://rekor.sigstore.dev registry.example.com/fns/set-ns@sha256:...`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := rf.format.check(); err != nil {
				return err
			}
			if sigFormat != "legacy" && sigFormat != "bundle" {
				return usageErr(fmt.Errorf("--signature-format must be legacy or bundle, not %q", sigFormat))
			}
			if keyless {
				return signKeyless(cmd, &rf, args[0], kl, idToken, signingConfig, key)
			}
			if key == "" {
				return usageErr(fmt.Errorf("--key is required: a cosign private key file (or --keyless)"))
			}
			signer, err := sign.LoadPrivateKeyFile(key, []byte(os.Getenv(sign.PasswordEnv)))
			if err != nil {
				return usageErr(fmt.Errorf("%w (the password comes from %s)", err, sign.PasswordEnv))
			}
			client, err := rf.client(cmd, withoutCache)
			if err != nil {
				return err
			}
			sig, err := client.Sign(cmd.Context(), args[0], signer, oci.SignOptions{Format: formatName(sigFormat)})
			if err != nil {
				return opErr(err)
			}
			if rf.format.is("json") {
				return writeJSON(cmd.OutOrStdout(), sig)
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "signed %s: signature %s (%s)\n", args[0], sig.Manifest, sig.Format)
			return err
		},
	}
	rf.register(cmd)
	cmd.Flags().StringVar(&key, "key", "", "cosign private key file")
	cmd.Flags().StringVar(&sigFormat, "signature-format", "legacy", "legacy (the sha256-<hex>.sig tag) or bundle (a sigstore bundle referrer)")
	cmd.Flags().BoolVar(&keyless, "keyless", false, "sign keylessly: a Fulcio certificate for an OIDC identity token, logged in Rekor (a bundle referrer)")
	cmd.Flags().StringVar(&idToken, "identity-token", "", "the OIDC identity token of --keyless (default: $SIGSTORE_ID_TOKEN, else GitHub Actions' token)")
	cmd.Flags().StringVar(&kl.FulcioURL, "fulcio-url", "", "the Fulcio --keyless asks for a certificate")
	cmd.Flags().StringVar(&kl.RekorURL, "rekor-url", "", "the Rekor --keyless logs the signature in")
	cmd.Flags().StringVar(&kl.TimestampURL, "timestamp-url", "", "a timestamp authority --keyless asks for an RFC 3161 timestamp (optional)")
	cmd.Flags().StringVar(&signingConfig, "signing-config", "", "signing_config.json naming the Fulcio, Rekor and timestamp authority of --keyless")
	return cmd
}

// signKeyless is sign --keyless.
func signKeyless(cmd *cobra.Command, rf *registryFlags, ref string, kl sign.KeylessOptions, idToken, signingConfig, key string) error {
	if key != "" {
		return usageErr(fmt.Errorf("--keyless and --key exclude each other"))
	}
	if signingConfig != "" {
		if kl.FulcioURL != "" || kl.RekorURL != "" {
			return usageErr(fmt.Errorf("--signing-config and --fulcio-url/--rekor-url exclude each other"))
		}
		var err error
		if kl, err = sign.KeylessFromSigningConfig(signingConfig, time.Now()); err != nil {
			return usageErr(err)
		}
	}
	if kl.FulcioURL == "" || kl.RekorURL == "" {
		return usageErr(fmt.Errorf("--keyless needs --fulcio-url and --rekor-url, or --signing-config"))
	}
	tok, err := sign.IdentityToken(cmd.Context(), &http.Client{Timeout: time.Minute}, idToken, os.Getenv)
	if err != nil {
		return usageErr(err)
	}
	kl.IDToken = tok
	client, err := rf.client(cmd, withoutCache)
	if err != nil {
		return err
	}
	sig, err := client.SignKeyless(cmd.Context(), ref, kl)
	if err != nil {
		return opErr(err)
	}
	if rf.format.is("json") {
		return writeJSON(cmd.OutOrStdout(), sig)
	}
	_, err = fmt.Fprintf(cmd.OutOrStdout(), "signed %s keylessly: signature %s (%s)\n", ref, sig.Manifest, sig.Format)
	return err
}

// formatName maps the flag's short names to the oci package's format names.
func formatName(flag string) string {
	if flag == "bundle" {
		return oci.FormatBundle
	}
	return oci.FormatLegacy
}
