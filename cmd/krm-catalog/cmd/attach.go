package cmd

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/spf13/cobra"

	"github.com/krm-catalog/krm-catalog/oci"
)

func newAttachCmd() *cobra.Command {
	var (
		rf         registryFlags
		definition string
	)
	cmd := &cobra.Command{
		Use:   "attach --definition FILE IMAGE@DIGEST",
		Short: "Attach a function definition to the function's container image",
		Long: `Attach stores a KRMFunctionDefinition as an OCI 1.1 referrer of the image (its subject is
the image manifest), so the metadata travels with the image. The image must be named by digest.
On registries without the referrers API the referrers tag (sha256-<hex>) is maintained instead.`,
		Example: `  krm-catalog attach --definition definition.yaml registry.example.com/fns/set-ns@sha256:0dcc...`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := rf.format.check(); err != nil {
				return err
			}
			if definition == "" {
				return usageErr(fmt.Errorf("--definition is required"))
			}
			data, err := os.ReadFile(definition)
			if err != nil {
				return usageErr(err)
			}
			opts := oci.PushOptions{Kind: oci.KindDefinition}
			if err := checkDocument(cmd, &opts, definition, data); err != nil {
				return err
			}
			created, err := createdTime()
			if err != nil {
				return err
			}
			client, err := rf.client(cmd, withoutCache)
			if err != nil {
				return err
			}
			res, err := client.Attach(cmd.Context(), args[0], oci.File{Data: data, Title: filepath.Base(definition)}, oci.AttachOptions{Created: created})
			if err != nil {
				return opErr(err)
			}
			return printPushed(cmd, rf, res)
		},
	}
	rf.register(cmd)
	cmd.Flags().StringVar(&definition, "definition", "", "KRMFunctionDefinition file to attach")
	return cmd
}

func newDiscoverCmd() *cobra.Command {
	var (
		rf   registryFlags
		keys []string
	)
	cmd := &cobra.Command{
		Use:   "discover [--key cosign.pub]... IMAGE",
		Short: "List the definitions and signatures attached to an image or artifact",
		Long: `Discover lists what refers to IMAGE: attached function definitions, signatures in both cosign
formats (the sha256-<hex>.sig tag and sigstore bundles stored as referrers), and other referrers.
With --key, each signature is checked against the keys.`,
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
	Reference   string          `json:"reference"`
	Digest      string          `json:"digest"`
	Definitions []referrerJSON  `json:"definitions"`
	Signatures  []oci.Signature `json:"signatures"`
	Others      []referrerJSON  `json:"others"`
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
		Definitions: referrers(d.Definitions), Signatures: sigs, Others: referrers(d.Others),
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
	for _, r := range d.Others {
		fmt.Fprintf(w, "  referrer    %s  %s\n", r.Digest, r.ArtifactType)
	}
	if len(d.Definitions)+len(d.Signatures)+len(d.Others) == 0 {
		fmt.Fprintln(w, "  nothing attached")
	}
	return nil
}
