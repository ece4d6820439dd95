package cmd

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/krm-catalog/krm-catalog/mirror"
	"github.com/krm-catalog/krm-catalog/oci"
	"github.com/krm-catalog/krm-catalog/oci/sign"
	"github.com/krm-catalog/krm-catalog/resolver"
)

func newMirrorCmd() *cobra.Command {
	var (
		rf                     registryFlags
		o                      fnOptions
		signKey, sigFormat, tg string
		dryRun                 bool
	)
	cmd := &cobra.Command{
		Use:   "mirror SOURCE DEST-PREFIX",
		Short: "Copy a catalog and everything it names to another registry, for air-gapped use",
		Long: `Mirror reads the catalog SOURCE (a path, https:// URL, git reference or oci:// reference;
with --key an oci:// catalog must be signed by one of the keys) and copies to DEST-PREFIX every
artifact it names: container images and exec indexes with all their platforms, starlark
scripts, their referrers (attached definitions, sigstore bundle signatures) and cosign legacy
signatures. Files named over https are checked against their sha256 and pushed as OCI artifacts
with the KEP-2906 media types. It then pushes DEST-PREFIX/catalogs/NAME:TAG, a copy of the
catalog whose runtimes point at the mirror with the same digests and sha256, signs it with
--sign-key, and prints its reference on the last line.

What the mirror already has is not sent again: a second run copies nothing, and a run that
failed part-way is completed by running it again. --dry-run prints the plan.
Layout and decisions: docs/mirror.md.`,
		Example: `  krm-catalog mirror --key platform.pub oci://registry.example.com/catalogs/platform:v1 mirror.example.com/krm
  COSIGN_PASSWORD=... krm-catalog mirror --sign-key mirror.key catalog.yaml 127.0.0.1:5000/krm`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := rf.format.check(); err != nil {
				return err
			}
			if sigFormat != "legacy" && sigFormat != "bundle" {
				return usageErr(fmt.Errorf("--signature-format must be legacy or bundle, not %q", sigFormat))
			}
			src, prefix := args[0], args[1]
			var signer *sign.Signer
			if signKey != "" {
				var err error
				if signer, err = sign.LoadPrivateKeyFile(signKey, []byte(os.Getenv(sign.PasswordEnv))); err != nil {
					return usageErr(fmt.Errorf("--sign-key: %w (the password comes from %s)", err, sign.PasswordEnv))
				}
			}
			// naming the source is trusting it: mirror runs nothing, and --key still checks it
			o.catalogs, o.trusted = []string{src}, []string{src}
			o.registryTimeout = rf.timeout
			r, err := o.resolver(&ociAdapter{opts: &o})
			if err != nil {
				return err
			}
			data, cat, err := r.LoadBytes(cmd.Context(), src)
			if err != nil {
				return usageErr(err)
			}
			client, err := rf.client(cmd, withoutCache)
			if err != nil {
				return err
			}
			created, err := createdTime()
			if err != nil {
				return err
			}
			opts := mirror.Options{
				Client: client, Prefix: prefix, Tag: catalogTag(tg, src, cat.Labels), Signer: signer,
				SignatureFormat: formatName(sigFormat), Created: created, DryRun: dryRun,
			}
			if isTerminal(cmd.ErrOrStderr()) {
				opts.Progress = func(s mirror.Step, done bool) { writeMirrorProgress(cmd.ErrOrStderr(), s, done) }
			}
			res, err := mirror.Mirror(cmd.Context(), data, cat, opts)
			if err != nil {
				return opErr(err)
			}
			if rf.format.is("json") {
				return writeJSON(cmd.OutOrStdout(), res)
			}
			return writeMirrorText(cmd.OutOrStdout(), res, dryRun)
		},
	}
	rf.register(cmd)
	fs := cmd.Flags()
	o.trust.register(fs, "public key (PEM): an oci:// SOURCE must be signed by one of these keys, or by the --certificate-identity (repeatable)")
	fs.StringVar(&o.cacheDir, "cache-dir", "", "cache for catalogs (default: the user cache directory)")
	fs.StringVar(&signKey, "sign-key", "", "cosign private key to sign the mirrored catalog with (password from COSIGN_PASSWORD)")
	fs.StringVar(&sigFormat, "signature-format", "legacy", "signature of the mirrored catalog: legacy (the sha256-<hex>.sig tag) or bundle")
	fs.StringVar(&tg, "tag", "", "tag of the mirrored catalog (default: SOURCE's tag, else its app.kubernetes.io/version label, else latest)")
	fs.BoolVar(&dryRun, "dry-run", false, "print the plan; copy nothing")
	return cmd
}

// catalogTag is --tag, else the oci:// source's tag, else the catalog's version label.
func catalogTag(flag, src string, labels map[string]string) string {
	if flag != "" {
		return flag
	}
	if ref, err := resolver.ParseRef(src); err == nil && ref.Kind == resolver.RefOCI {
		if r, err := oci.ParseReference(ref.OCI); err == nil && r.Tag != "" {
			return r.Tag
		}
	}
	return labels[versionLabel]
}

func writeMirrorProgress(w io.Writer, s mirror.Step, done bool) {
	if !done {
		fmt.Fprintf(w, "%s %s ...\n", s.Action, s.Destination)
		return
	}
	fmt.Fprintf(w, "%s %s: %d sent, %d already there\n", s.Action, s.Destination, s.Copied, s.Present)
}

func writeMirrorText(w io.Writer, res mirror.Result, dryRun bool) error {
	for _, s := range res.Steps {
		subjects := ""
		if len(s.Subjects) > 0 {
			subjects = " (" + strings.Join(s.Subjects, "; ") + ")"
		}
		from := ""
		if s.Source != "" {
			from = s.Source + " -> "
		}
		if dryRun {
			fmt.Fprintf(w, "would %s %s%s%s\n", s.Action, from, s.Destination, subjects)
			continue
		}
		extra := ""
		if s.Referrers > 0 {
			extra += fmt.Sprintf(", %d referrer(s)", s.Referrers)
		}
		if s.LegacySignature {
			extra += ", legacy signature"
		}
		fmt.Fprintf(w, "%s %s%s: %d sent, %d already there%s%s\n", s.Action, from, s.Result, s.Copied, s.Present, extra, subjects)
	}
	if dryRun {
		_, err := fmt.Fprintln(w, "dry run: nothing was copied")
		return err
	}
	fmt.Fprintf(w, "%d sent in all\n", res.Copied())
	_, err := fmt.Fprintln(w, res.Catalog)
	return err
}
