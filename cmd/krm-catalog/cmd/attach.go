package cmd

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/spf13/cobra"

	"github.com/krm-catalog/krm-catalog/oci"
	"github.com/krm-catalog/krm-catalog/oci/sign"
)

func newAttachCmd() *cobra.Command {
	var (
		rf               registryFlags
		definition, sbom string
		key              string
	)
	cmd := &cobra.Command{
		Use:   "attach (--definition FILE | --sbom FILE [--key cosign.key]) IMAGE@DIGEST",
		Short: "Attach a function definition or an SBOM to the function's container image",
		Long: `Attach stores a KRMFunctionDefinition, or an SBOM, as an OCI 1.1 referrer of the image (its
subject is the image manifest), so it travels with the image. The image must be named by digest.
On registries without the referrers API the referrers tag (sha256-<hex>) is maintained instead.

An SBOM is SPDX or CycloneDX JSON, told apart by its content; its referrer's artifactType is
application/spdx+json or application/vnd.cyclonedx+json, as other tools store them. With --key
the SBOM referrer is signed too (the password comes from COSIGN_PASSWORD); to sign it keylessly,
sign the printed reference with sign.`,
		Example: `  krm-catalog attach --definition definition.yaml registry.example.com/fns/set-ns@sha256:0dcc...
  krm-catalog attach --sbom sbom.spdx.json --key cosign.key registry.example.com/fns/set-ns@sha256:0dcc...`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := rf.format.check(); err != nil {
				return err
			}
			if (definition == "") == (sbom == "") {
				return usageErr(fmt.Errorf("one of --definition and --sbom is required"))
			}
			if sbom != "" {
				return attachSBOM(cmd, rf, args[0], sbom, key)
			}
			if key != "" {
				return usageErr(fmt.Errorf("--key signs an SBOM; sign a definition's referrer with sign"))
			}
			data, err := os.ReadFile(definition)
			if err != nil {
				return usageErr(err)
			}
			opts := oci.PushOptions{Kind: oci.KindDefinition}
			if err := checkDocument(cmd, &opts, definition, data); err != nil {
				return err
			}
			client, attachOpts, err := attachClient(cmd, rf)
			if err != nil {
				return err
			}
			res, err := client.Attach(cmd.Context(), args[0], oci.File{Data: data, Title: filepath.Base(definition)}, attachOpts)
			if err != nil {
				return opErr(err)
			}
			return printPushed(cmd, rf, res)
		},
	}
	rf.register(cmd)
	cmd.Flags().StringVar(&definition, "definition", "", "KRMFunctionDefinition file to attach")
	cmd.Flags().StringVar(&sbom, "sbom", "", "SPDX or CycloneDX JSON file to attach")
	cmd.Flags().StringVar(&key, "key", "", "cosign private key to sign the SBOM's referrer with")
	return cmd
}

// attachClient is the registry client of attach, and the options with the creation time
// (SOURCE_DATE_EPOCH or now).
func attachClient(cmd *cobra.Command, rf registryFlags) (*oci.Client, oci.AttachOptions, error) {
	created, err := createdTime()
	if err != nil {
		return nil, oci.AttachOptions{}, err
	}
	client, err := rf.client(cmd, withoutCache)
	if err != nil {
		return nil, oci.AttachOptions{}, err
	}
	return client, oci.AttachOptions{Created: created}, nil
}

// sbomJSON is what attach --sbom prints as JSON.
type sbomJSON struct {
	Reference    string         `json:"reference"`
	Digest       string         `json:"digest"`
	ArtifactType string         `json:"artifactType"`
	Signature    *oci.Signature `json:"signature,omitempty"`
}

func attachSBOM(cmd *cobra.Command, rf registryFlags, ref, path, key string) error {
	data, err := readFileLimited(path, oci.MaxSBOMBytes)
	if err != nil {
		return usageErr(err)
	}
	mediaType, err := oci.DetectSBOM(data)
	if err != nil {
		return usageErr(fmt.Errorf("%s: %w", path, err))
	}
	var signer *sign.Signer
	if key != "" {
		if signer, err = sign.LoadPrivateKeyFile(key, []byte(os.Getenv(sign.PasswordEnv))); err != nil {
			return usageErr(fmt.Errorf("%w (the password comes from %s)", err, sign.PasswordEnv))
		}
	}
	client, opts, err := attachClient(cmd, rf)
	if err != nil {
		return err
	}
	res, err := client.AttachSBOM(cmd.Context(), ref, data, opts)
	if err != nil {
		return opErr(err)
	}
	out := sbomJSON{Reference: res.Reference.String(), Digest: res.Descriptor.Digest.String(), ArtifactType: mediaType}
	if signer != nil {
		sig, err := client.Sign(cmd.Context(), out.Reference, signer, oci.SignOptions{})
		if err != nil {
			return opErr(fmt.Errorf("attached as %s, but signing it failed: %w", out.Reference, err))
		}
		out.Signature = &sig
	}
	if rf.format.is("json") {
		return writeJSON(cmd.OutOrStdout(), out)
	}
	_, err = fmt.Fprintln(cmd.OutOrStdout(), out.Digest)
	return err
}

// readFileLimited reads a file of at most limit bytes.
func readFileLimited(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, limit)
	}
	return data, nil
}

func newDiscoverCmd() *cobra.Command {
	var (
		rf   registryFlags
		keys []string
	)
	cmd := &cobra.Command{
		Use:   "discover [--key cosign.pub]... IMAGE",
		Short: "List the definitions, signatures, attestations and SBOMs attached to an image or artifact",
		Long: `Discover lists what refers to IMAGE: attached function definitions, signatures in both cosign
formats (the sha256-<hex>.sig tag and sigstore bundles stored as referrers), attestations (bundles
of another predicate type, such as SLSA provenance, named by it), SBOMs (SPDX, CycloneDX), and
other referrers. With --key, each signature is checked against the keys.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := rf.format.check(); err != nil {
				return err
			}
			pubs, err := loadKeys(keys)
			if err != nil {
				return err
			}
			client, err := rf.client(cmd, withCache)
			if err != nil {
				return err
			}
			d, err := client.Discover(cmd.Context(), args[0], pubs)
			if err != nil {
				return opErr(err)
			}
			if rf.format.is("json") {
				return writeJSON(cmd.OutOrStdout(), discoverOutput(d))
			}
			return writeDiscovery(cmd.OutOrStdout(), d, len(pubs) > 0)
		},
	}
	rf.register(cmd)
	cmd.Flags().StringArrayVar(&keys, "key", nil, "cosign public key to check signatures with (repeatable)")
	return cmd
}

type referrerJSON struct {
	Digest       string            `json:"digest"`
	ArtifactType string            `json:"artifactType"`
	Annotations  map[string]string `json:"annotations,omitempty"`
}

type discoverJSON struct {
	Reference    string          `json:"reference"`
	Digest       string          `json:"digest"`
	Definitions  []referrerJSON  `json:"definitions"`
	Signatures   []oci.Signature `json:"signatures"`
	Attestations []referrerJSON  `json:"attestations"`
	SBOMs        []referrerJSON  `json:"sboms"`
	Others       []referrerJSON  `json:"others"`
}

func referrers(ds []ocispec.Descriptor) []referrerJSON {
	out := []referrerJSON{}
	for _, d := range ds {
		out = append(out, referrerJSON{Digest: d.Digest.String(), ArtifactType: d.ArtifactType, Annotations: d.Annotations})
	}
	return out
}

func discoverOutput(d oci.Discovery) discoverJSON {
	sigs := d.Signatures
	if sigs == nil {
		sigs = []oci.Signature{}
	}
	return discoverJSON{
		Reference: d.Reference.String(), Digest: d.Subject.Digest.String(),
		Definitions: referrers(d.Definitions), Signatures: sigs, Attestations: referrers(d.Attestations),
		SBOMs: referrers(d.SBOMs), Others: referrers(d.Others),
	}
}

func writeDiscovery(w io.Writer, d oci.Discovery, checked bool) error {
	fmt.Fprintln(w, d.Reference)
	for _, r := range d.Definitions {
		fmt.Fprintf(w, "  definition  %s  %s\n", r.Digest, r.Annotations[ocispec.AnnotationTitle])
	}
	for _, s := range d.Signatures {
		state := "not checked (no --key)"
		switch {
		case s.Verified:
			state = "verified by " + s.Key
		case checked:
			state = "not verified: " + s.Problem
		case s.Problem != "":
			state = "unreadable: " + s.Problem
		}
		fmt.Fprintf(w, "  signature   %s  %s  %s\n", s.Manifest, s.Format, state)
	}
	for _, r := range d.Attestations {
		fmt.Fprintf(w, "  attestation %s  %s\n", r.Digest, r.Annotations[oci.BundlePredicateTypeAnnotation])
	}
	for _, r := range d.SBOMs {
		fmt.Fprintf(w, "  sbom        %s  %s\n", r.Digest, r.ArtifactType)
	}
	for _, r := range d.Others {
		fmt.Fprintf(w, "  referrer    %s  %s\n", r.Digest, r.ArtifactType)
	}
	if len(d.Definitions)+len(d.Signatures)+len(d.Attestations)+len(d.SBOMs)+len(d.Others) == 0 {
		fmt.Fprintln(w, "  nothing attached")
	}
	return nil
}
