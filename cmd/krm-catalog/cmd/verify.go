package cmd

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/krm-catalog/krm-catalog/oci"
	"github.com/krm-catalog/krm-catalog/oci/gate"
	"github.com/krm-catalog/krm-catalog/oci/sign"
)

func newVerifyCmd() *cobra.Command {
	var (
		rf                registryFlags
		format            string
		tf                trustFlags
		requirePinned     bool
		requireSignatures bool
		requireProvenance bool
		provenance        sign.ProvenancePolicy
		strict            bool
		offline           bool
		maxSize           int64
	)
	cmd := &cobra.Command{
		Use:   "verify [--key cosign.pub]... [--require-signatures] [--format text|json|junit|results] INPUT...",
		Short: "The CI gate: validate documents and check the OCI artifacts they name",
		Long: `Verify checks everything validate checks, then the OCI artifacts the documents point at:
  - every container image pinned by digest (--require-pinned, on by default: a semver tag
    without a digest is an error, as KEP-2906 demands); a pinned image must exist;
  - every exec binary (uri: oci://...) and starlark script (oci:// reference) exists, is a
    krm-catalog artifact of that kind, and holds the file whose sha256 the document records;
  - every exec binary and starlark script named by an https:// URL is downloaded (at most
    --max-size) and holds the file whose sha256 the document records;
  - with --key (repeatable), each of those artifacts, and catalogs read from oci://, carries a
    cosign signature by one of the keys; --require-signatures makes a missing one an error, and
    an artifact named by https://, which cannot carry a signature, an error too (publish it with
    push --type exec|starlark and name it by oci:// to sign it);
  - with --certificate-identity[-regexp] and --certificate-oidc-issuer[-regexp], keyless
    signatures (a Fulcio certificate, a Rekor entry, timestamps) by that identity count too,
    checked offline against --trusted-root (default: the Sigstore public-good root built in);
  - with --require-provenance, each pinned artifact has an SLSA provenance attestation (a
    referrer, as cosign attest stores it) signed by a trusted key or identity, about its digest,
    naming --provenance-builder, --provenance-source-repo and --provenance-source-ref when
    given; a catalog entry's provenance.sourceRepository is checked too (a warning without
    --require-provenance).

--offline validates the documents only and checks no artifact; the summary counts what was
checked, and what was not and why.

INPUT is a file, a directory (searched recursively), - for standard input, an oci:// reference
to a catalog or definition artifact, or an https:// URL (plain http:// only to this machine, as for registries).

--format results prints a ResourceList whose results follow the KRM Functions Specification;
junit prints a JUnit XML report for CI test views.

Exit status: 0 when there is no error, 1 when there is one, 2 when an input could not be read
or the command was used wrongly.`,
		Example: `  krm-catalog verify catalog.yaml
  krm-catalog verify --key keys/platform.pub --require-signatures --format junit catalogs/ > verify.xml
  krm-catalog verify --certificate-identity-regexp '^https://github.com/example/fns/' \
    --certificate-oidc-issuer https://token.actions.githubusercontent.com \
    --require-signatures --require-provenance --provenance-source-repo https://github.com/example/fns catalog.yaml
  krm-catalog verify --format results oci://registry.example.com/catalogs/platform:v1.4.0`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !slices.Contains(gate.Formats(), format) {
				return usageErr(fmt.Errorf("--format must be one of %s, not %q", strings.Join(gate.Formats(), ", "), format))
			}
			trust, err := tf.load()
			if err != nil {
				return err
			}
			client, err := rf.client(cmd, withCache)
			if err != nil {
				return err
			}
			g, err := gate.New(client, gate.Options{
				RequirePinned: requirePinned, Strict: strict, Keys: trust.Keys, Identities: trust.Identities, TrustedRoot: trust.Root, RequireSignatures: requireSignatures, Offline: offline,
				RequireProvenance: requireProvenance, Provenance: provenance,
				MaxSize: maxSize,
			})
			if err != nil {
				return usageErr(err)
			}
			rep, readErr := g.Run(cmd.Context(), args, cmd.InOrStdin())
			if err := rep.Write(cmd.OutOrStdout(), format); err != nil {
				return usageErr(fmt.Errorf("write report: %w", err))
			}
			if format == "text" && (readErr == nil || len(rep.Findings()) > 0) {
				fmt.Fprintln(cmd.ErrOrStderr(), rep.Summarize())
			}
			// a gate that checked nothing passes; say so, and why, since that is seldom what was meant
			if readErr == nil {
				if w := uncheckedWarning(rep, offline); w != "" {
					fmt.Fprintln(cmd.ErrOrStderr(), "krm-catalog: warning:", w)
				}
			}
			switch {
			case readErr != nil:
				return usageErr(readErr)
			case rep.Findings().HasErrors():
				return failure(nil)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&rf.plainHTTP, "plain-http", false, "talk plain HTTP to registries (automatic for localhost, 127.0.0.1 and ::1)")
	addRegistryTimeoutFlag(cmd.Flags(), &rf.timeout)
	cmd.Flags().StringVar(&format, "format", "text", "output format: text, json, junit or results")
	tf.register(cmd.Flags(), "trusted cosign public key (repeatable)")
	cmd.Flags().BoolVar(&requirePinned, "require-pinned", true, "a container image with a semver tag must be pinned by digest (false: a warning)")
	cmd.Flags().BoolVar(&requireSignatures, "require-signatures", false, "every OCI artifact checked must be signed by one of the --key keys or by the --certificate-identity")
	cmd.Flags().BoolVar(&requireProvenance, "require-provenance", false, "every pinned OCI artifact must have an SLSA provenance attestation signed by a --key or the --certificate-identity")
	cmd.Flags().StringVar(&provenance.Builder, "provenance-builder", "", "the builder ID the provenance must name (e.g. https://github.com/actions/runner/github-hosted)")
	cmd.Flags().StringVar(&provenance.SourceRepo, "provenance-source-repo", "", "the source repository the provenance must name (e.g. https://github.com/example/fns)")
	cmd.Flags().StringVar(&provenance.SourceRef, "provenance-source-ref", "", "the source ref the provenance must name (e.g. refs/tags/v1.2.0)")
	cmd.Flags().BoolVar(&strict, "strict", false, "treat warnings as errors")
	cmd.Flags().BoolVar(&offline, "offline", false, "validate only; contact no registry or server, check no artifact")
	addSizeFlag(cmd.Flags(), &maxSize, "max-size", oci.DefaultPullMaxBytes, "largest file downloaded to check its sha256 (an exec binary or starlark script named by https://)")
	return cmd
}

// uncheckedWarning says why a gate that passed checked no artifact; "" when it checked one.
func uncheckedWarning(rep gate.Report, offline bool) string {
	s := rep.Summarize()
	switch {
	case rep.Inputs == 0:
		return "nothing to verify: the arguments hold no catalog or definition"
	case s.Artifacts > 0:
		return ""
	case offline && s.SkippedTotal() > 0:
		return fmt.Sprintf("--offline: no artifact was checked (%d skipped)", s.SkippedTotal())
	case offline:
		return "--offline: no artifact was checked; the inputs name none"
	case s.SkippedTotal() > 0:
		return fmt.Sprintf("no artifact was checked: none of the %d the inputs name could be (%s)", s.SkippedTotal(), s.SkippedReasons())
	}
	return "no artifact was checked: the inputs name none (a container image, an exec binary or a starlark script)"
}
