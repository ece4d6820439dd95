package cmd

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/krm-catalog/krm-catalog/oci"
	"github.com/krm-catalog/krm-catalog/oci/sign"
)

func newSignCmd() *cobra.Command {
	var (
		rf        registryFlags
		key       string
		sigFormat string
	)
	cmd := &cobra.Command{
		Use:   "sign --key cosign.key [--signature-format legacy|bundle] REF",
		Short: "Sign an artifact with a cosign key, offline",
		Long: `Sign signs the manifest REF names with a cosign private key (password from COSIGN_PASSWORD)
and stores the signature in cosign's format: a simple-signing payload in the manifest tagged
sha256-<hex>.sig next to it. ` + "`cosign verify --key cosign.pub --insecure-ignore-tlog`" + ` accepts it.
With --signature-format bundle it is instead a sigstore bundle stored as an OCI 1.1 referrer,
the format cosign v3 writes. Nothing is sent to a transparency log.`,
		Example: `  COSIGN_PASSWORD=... krm-catalog sign --key cosign.key registry.example.com/catalogs/platform:v1.4.0`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := rf.format.check(); err != nil {
				return err
			}
			if sigFormat != "legacy" && sigFormat != "bundle" {
				return usageErr(fmt.Errorf("--signature-format must be legacy or bundle, not %q", sigFormat))
			}
			if key == "" {
				return usageErr(fmt.Errorf("--key is required: a cosign private key file"))
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
	return cmd
}

// formatName maps the flag's short names to the oci package's format names.
func formatName(flag string) string {
	if flag == "bundle" {
		return oci.FormatBundle
	}
	return oci.FormatLegacy
}
