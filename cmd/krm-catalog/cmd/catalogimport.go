package cmd

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/krm-catalog/krm-catalog/catalog"
)

// maxKptFunctions bounds how many metadata.yaml files one import reads (kpt's catalog has ~30).
const maxKptFunctions = 1000

func newCatalogImportCmd() *cobra.Command {
	var (
		reg                            registryFlags
		dir, tag, name, publisher, ver string
		out                            string
		offline, hidden                bool
	)
	cmd := &cobra.Command{
		Use:   "import --kpt-metadata DIR --tag TAG --name NAME",
		Short: "Write a catalog of kpt's functions from their metadata.yaml files, each image pinned to its digest",
		Long: `Import reads every metadata.yaml under DIR (kpt's function catalog describes each function in one,
in a directory named after the function) and writes a KRMFunctionCatalog named NAME: group
fn.kpt.dev, the kind from the function's name (set-namespace: SetNamespace), one version whose
runtime is the image at TAG pinned to the digest the registry reports now, and the description,
tags, license, sourceURL (as home) and examplePackageURLs (as examples). Functions marked
hidden are left out unless --include-hidden.

An image whose tag does not resolve is an error naming it; --offline asks no registry and writes
every image unpinned, with a warning (krm-catalog runs catalog images by digest only). The
catalog is validated before it is written.`,
		Example: `  krm-catalog catalog import --kpt-metadata krm-functions-catalog/functions --tag v0.4 --name kpt-functions -o catalog.yaml`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := reg.format.check(); err != nil {
				return err
			}
			if dir == "" || tag == "" || name == "" {
				return usageErr(errors.New("--kpt-metadata, --tag and --name are required"))
			}
			metas, err := readKptMetadata(dir, hidden)
			if err != nil {
				return usageErr(err)
			}
			in := catalog.KptImport{Name: name, Publisher: publisher, Tag: tag, Version: ver, Digests: map[string]string{}}
			if offline {
				for _, m := range metas {
					fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s: %s:%s left unpinned (--offline); it runs only once pinned\n", m.Name, m.Image, tag)
				}
			} else {
				client, err := reg.client(cmd, withoutCache)
				if err != nil {
					return err
				}
				var unresolved []string
				for _, m := range metas {
					// the digest the registry reports for the tag, as `oras resolve` asks it
					desc, found, err := client.Exists(cmd.Context(), m.Image+":"+tag)
					switch {
					case err != nil:
						unresolved = append(unresolved, fmt.Sprintf("%s (%s:%s): %v", m.Name, m.Image, tag, err))
					case !found:
						unresolved = append(unresolved, fmt.Sprintf("%s (%s:%s): no such tag", m.Name, m.Image, tag))
					default:
						in.Digests[m.Name] = desc.Digest.String()
					}
				}
				if len(unresolved) > 0 {
					return failure(fmt.Errorf("not imported: %d image(s) do not resolve at tag %s (--offline writes them unpinned):\n  %s", len(unresolved), tag, strings.Join(unresolved, "\n  ")))
				}
			}
			data, err := catalog.KptCatalog(in, metas)
			if err != nil {
				return failure(err)
			}
			v, err := catalog.NewValidator()
			if err != nil {
				return err
			}
			if _, findings := v.Validate("catalog.yaml", data, catalog.Options{}); findings.HasErrors() {
				_ = catalog.WriteText(cmd.ErrOrStderr(), findings)
				return failure(errors.New("not imported: the catalog does not validate"))
			}
			if out == "" || out == "-" {
				_, err = cmd.OutOrStdout().Write(data)
				return err
			}
			if err := os.WriteFile(out, data, 0o644); err != nil {
				return failure(err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s: %d function(s)\n", out, len(metas))
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&dir, "kpt-metadata", "", "directory of kpt's function catalog to read every metadata.yaml under (required)")
	fs.StringVar(&tag, "tag", "", "the image tag to pin every function at (required)")
	fs.StringVar(&name, "name", "", "metadata.name of the catalog (required)")
	fs.StringVar(&publisher, "publisher", "kpt.dev", "the functions' publisher")
	fs.StringVar(&ver, "fn-version", "v1", "the functionConfig version of every function")
	fs.StringVarP(&out, "output", "o", "", "write the catalog to this file (default: standard output)")
	fs.BoolVar(&offline, "offline", false, "ask no registry: write images unpinned, with a warning")
	fs.BoolVar(&hidden, "include-hidden", false, "also import functions marked hidden: true")
	reg.register(cmd)
	return cmd
}

// readKptMetadata reads every metadata.yaml under dir; the function's name is its directory's.
func readKptMetadata(dir string, hidden bool) ([]catalog.KptMetadata, error) {
	var metas []catalog.KptMetadata
	seen := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || d.Name() != "metadata.yaml" {
			return nil
		}
		if len(seen) >= maxKptFunctions {
			return fmt.Errorf("more than %d metadata.yaml files under %s", maxKptFunctions, dir)
		}
		fn := filepath.Base(filepath.Dir(path))
		if other, ok := seen[fn]; ok {
			return fmt.Errorf("two functions named %s: %s and %s", fn, other, path)
		}
		seen[fn] = path
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		m, err := catalog.ParseKptMetadata(fn, data)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if !m.Hidden || hidden {
			metas = append(metas, m)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("import kpt metadata: %w", err)
	}
	if len(metas) == 0 {
		return nil, fmt.Errorf("import kpt metadata: no metadata.yaml of a function to import under %s", dir)
	}
	sort.Slice(metas, func(i, j int) bool { return metas[i].Name < metas[j].Name })
	return metas, nil
}
