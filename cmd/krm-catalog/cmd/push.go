package cmd

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/spf13/cobra"

	"github.com/krm-catalog/krm-catalog/catalog"
	"github.com/krm-catalog/krm-catalog/oci"
)

func newPushCmd() *cobra.Command {
	var (
		rf                     registryFlags
		kind                   string
		platforms              []string
		title, version, source string
	)
	cmd := &cobra.Command{
		Use:   "push [--type catalog|definition|starlark|exec] REF [FILE]",
		Short: "Push a catalog, definition, starlark script or exec binaries to an OCI registry",
		Long: `Push uploads an artifact to REF (registry/repository[:tag]) and prints its manifest digest.

A catalog or definition is recognised from the document, which must validate; a starlark
script needs --type starlark. Exec binaries need --type exec and one --platform os/arch=PATH
per platform, and become an image index with one manifest per platform.

The manifest carries org.opencontainers.image.title, version, created and source annotations.
With SOURCE_DATE_EPOCH set, created comes from it and the digest is reproducible.`,
		Example: `  krm-catalog push registry.example.com/catalogs/platform:v1.4.0 catalog.yaml
  krm-catalog push --type starlark registry.example.com/fns/set-labels-star:v1 set-labels.star
  krm-catalog push --type exec registry.example.com/fns/set-ns-exec:v1.3.0 \
      --platform linux/amd64=dist/linux-amd64/set-ns --platform darwin/arm64=dist/darwin-arm64/set-ns`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := rf.format.check(); err != nil {
				return err
			}
			ref, err := oci.ParseReference(args[0])
			if err != nil {
				return usageErr(err)
			}
			opts := oci.PushOptions{Title: title, Version: version, Source: source}
			if opts.Created, err = createdTime(); err != nil {
				return err
			}
			if opts.Version == "" {
				opts.Version = ref.Tag
			}
			if err := pushFiles(cmd, &opts, kind, args[1:], platforms); err != nil {
				return err
			}
			client, err := rf.client(cmd, withoutCache)
			if err != nil {
				return err
			}
			res, err := client.Push(cmd.Context(), args[0], opts)
			if err != nil {
				return opErr(err)
			}
			return printPushed(cmd, rf, res)
		},
	}
	rf.register(cmd)
	cmd.Flags().StringVar(&kind, "type", "", "artifact type: catalog, definition, starlark or exec (default: from the document)")
	cmd.Flags().StringArrayVar(&platforms, "platform", nil, "exec binary for a platform, as os/arch[/variant]=PATH (repeatable)")
	cmd.Flags().StringVar(&title, "title", "", "org.opencontainers.image.title (default: the catalog's name, the function's group/Kind, or the file name)")
	cmd.Flags().StringVar(&version, "version", "", "org.opencontainers.image.version (default: the tag of REF)")
	cmd.Flags().StringVar(&source, "source", "", "org.opencontainers.image.source, such as the repository URL")
	return cmd
}

// pushFiles fills opts.Kind and opts.Files from the flags and arguments, reading and validating
// catalogs and definitions.
func pushFiles(cmd *cobra.Command, opts *oci.PushOptions, kind string, files, platforms []string) error {
	if kind != "" {
		k, err := oci.ParseKind(kind)
		if err != nil {
			return usageErr(err)
		}
		opts.Kind = k
	}
	if opts.Kind == oci.KindExec {
		if len(files) > 0 || len(platforms) == 0 {
			return usageErr(fmt.Errorf("--type exec takes its binaries as --platform os/arch=PATH, not as FILE"))
		}
		for _, p := range platforms {
			plat, path, ok := strings.Cut(p, "=")
			if !ok || path == "" {
				return usageErr(fmt.Errorf("--platform %q: expected os/arch=PATH", p))
			}
			pl, err := oci.ParsePlatform(plat)
			if err != nil {
				return usageErr(err)
			}
			if _, err := os.Stat(path); err != nil {
				return usageErr(fmt.Errorf("--platform %s: %w", plat, err))
			}
			opts.Files = append(opts.Files, oci.File{Path: path, Platform: &pl})
		}
		return nil
	}
	if len(platforms) > 0 {
		return usageErr(fmt.Errorf("--platform is for --type exec"))
	}
	if len(files) != 1 {
		return usageErr(fmt.Errorf("push needs the FILE to push"))
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		return usageErr(err)
	}
	opts.Files = []oci.File{{Data: data, Title: filepath.Base(files[0])}}
	if opts.Kind == oci.KindStarlark {
		return nil
	}
	return checkDocument(cmd, opts, files[0], data)
}

// checkDocument validates a catalog or definition before it is pushed (a registry is no place to
// discover a broken catalog), and takes the artifact kind and default title from it.
func checkDocument(cmd *cobra.Command, opts *oci.PushOptions, file string, data []byte) error {
	v, err := catalog.NewValidator()
	if err != nil {
		return usageErr(err)
	}
	doc, findings, err := v.ReadPublishable(file, data)
	if findings.HasErrors() {
		_ = writeFindings(cmd.ErrOrStderr(), findings)
		return failure(fmt.Errorf("%s does not validate; not pushed", file))
	}
	if err != nil {
		return usageErr(fmt.Errorf("push takes a catalog or definition, or a file with --type starlark|exec: %w", err))
	}
	k := oci.KindDefinition
	if doc.Catalog != nil {
		k = oci.KindCatalog
	}
	if opts.Kind != "" && opts.Kind != k {
		return usageErr(fmt.Errorf("--type %s, but %s is a %s", opts.Kind, file, k))
	}
	opts.Kind = k
	if opts.Title == "" {
		opts.Title = doc.Name()
	}
	return nil
}

// printPushed prints the digest of what was pushed, or with --format json a description of it.
func printPushed(cmd *cobra.Command, rf registryFlags, res oci.PushResult) error {
	if rf.format.is("json") {
		return writeJSON(cmd.OutOrStdout(), pushOutput(res))
	}
	_, err := fmt.Fprintln(cmd.OutOrStdout(), res.Descriptor.Digest)
	return err
}

type pushedPlatform struct {
	Platform string `json:"platform"`
	Digest   string `json:"digest"`
}

type pushJSON struct {
	Reference    string           `json:"reference"`
	Digest       string           `json:"digest"`
	MediaType    string           `json:"mediaType"`
	ArtifactType string           `json:"artifactType"`
	Kind         oci.Kind         `json:"kind"`
	Platforms    []pushedPlatform `json:"platforms,omitempty"`
}

func pushOutput(res oci.PushResult) pushJSON {
	out := pushJSON{
		Reference: res.Reference.String(), Digest: res.Descriptor.Digest.String(),
		MediaType: res.Descriptor.MediaType, ArtifactType: res.Kind.MediaType(), Kind: res.Kind,
	}
	for _, p := range res.Platforms {
		out.Platforms = append(out.Platforms, pushedPlatform{Platform: oci.PlatformString(platformOf(p)), Digest: p.Digest.String()})
	}
	return out
}

func platformOf(d ocispec.Descriptor) ocispec.Platform {
	if d.Platform == nil {
		return ocispec.Platform{}
	}
	return *d.Platform
}
