package cmd

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/krm-catalog/krm-catalog/oci"
)

func newPullCmd() *cobra.Command {
	var (
		rf       registryFlags
		dir      string
		platform string
		tf       trustFlags
		noCache  bool
		maxSize  int64
	)
	cmd := &cobra.Command{
		Use:   "pull [-o DIR] [--platform os/arch] [--key cosign.pub]... REF",
		Short: "Pull a krm-catalog artifact from an OCI registry",
		Long: `Pull writes the files of the artifact REF names into DIR under their titles. For an exec
artifact it picks the binary of the running platform (or --platform) and makes it executable.

Every byte is checked against its digest before the file appears under its name, and content is
cached under $XDG_CACHE_HOME/krm-catalog/oci: a pull by digest that is cached needs no network.
With --key, a signature by one of the keys must verify before anything is written; with
--certificate-identity[-regexp] and --certificate-oidc-issuer, a keyless signature of that
identity counts too (checked offline against --trusted-root, default the public-good root).

Artifacts whose media type is not one of krm-catalog's are refused, and so are artifacts a pull
must not write: a layer title that is not a plain file name (a directory, "..", a hidden file such
as .bashrc), two layers of one title, or layers larger together than --max-size (checked on the
sizes the manifest declares before anything is fetched, and again on the bytes written).`,
		Example: `  krm-catalog pull -o out/ registry.example.com/catalogs/platform:v1.4.0
  krm-catalog pull --platform linux/arm64 registry.example.com/fns/set-ns-exec@sha256:...
  krm-catalog pull --key cosign.pub registry.example.com/catalogs/platform:v1.4.0`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := rf.format.check(); err != nil {
				return err
			}
			opts := oci.PullOptions{Dir: dir, MaxBytes: maxSize}
			if platform != "" {
				p, err := oci.ParsePlatform(platform)
				if err != nil {
					return usageErr(err)
				}
				opts.Platform = &p
			}
			trust, err := tf.load()
			if err != nil {
				return err
			}
			opts.Keys, opts.Identities, opts.TrustedRoot = trust.Keys, trust.Identities, trust.Root
			client, err := rf.client(cmd, !noCache)
			if err != nil {
				return err
			}
			res, err := client.Pull(cmd.Context(), args[0], opts)
			if err != nil {
				return opErr(err)
			}
			if rf.format.is("json") {
				return writeJSON(cmd.OutOrStdout(), pullOutput(res))
			}
			for _, f := range res.Files {
				if _, err := fmt.Fprintln(cmd.OutOrStdout(), f.Path); err != nil {
					return err
				}
			}
			return nil
		},
	}
	rf.register(cmd)
	cmd.Flags().StringVarP(&dir, "output", "o", ".", "directory to write the files into")
	cmd.Flags().StringVar(&platform, "platform", "", "platform of an exec artifact, as os/arch[/variant] (default: the running platform)")
	tf.register(cmd.Flags(), "cosign public key; a signature by one of them, or by the --certificate-identity, must verify (repeatable)")
	addSizeFlag(cmd.Flags(), &maxSize, "max-size", oci.DefaultPullMaxBytes, "largest size of the files a pull writes, all layers together")
	cmd.Flags().BoolVar(&noCache, "no-cache", false, "neither read nor fill the cache (a one-off pull writes each file once instead of twice)")
	return cmd
}

type pullJSON struct {
	Reference string           `json:"reference"`
	Digest    string           `json:"digest"`
	Manifest  string           `json:"manifest"`
	Kind      oci.Kind         `json:"kind"`
	Platform  string           `json:"platform,omitempty"`
	Files     []oci.PulledFile `json:"files"`
	Cached    bool             `json:"cached"`
	Signature *oci.Signature   `json:"signature,omitempty"`
}

func pullOutput(res oci.PullResult) pullJSON {
	out := pullJSON{
		Reference: res.Reference.String(), Digest: res.Root.Digest.String(), Manifest: res.Manifest.Digest.String(),
		Kind: res.Kind, Files: res.Files, Cached: res.Cached, Signature: res.Signature,
	}
	if res.Manifest.Platform != nil {
		out.Platform = oci.PlatformString(*res.Manifest.Platform)
	}
	return out
}
