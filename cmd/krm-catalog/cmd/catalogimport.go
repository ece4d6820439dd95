package cmd

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/krm-catalog/krm-catalog/catalog"
	"github.com/krm-catalog/krm-catalog/oci"
	"github.com/krm-catalog/krm-catalog/oci/sign"
)

// maxKptFunctions bounds how many metadata.yaml files one import reads (kpt's catalog has ~30).
const maxKptFunctions = 1000

func newCatalogImportCmd() *cobra.Command {
	var (
		reg                            registryFlags
		dir, tag, name, publisher, ver string
		out, push, signKey, sigFormat  string
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
catalog is validated before it is written.

--push REF pushes the catalog to an OCI registry (as push does) and prints its digest instead of
the catalog (-o still writes it); --sign-key then signs what was pushed, by digest, as sign does.`,
		Example: `  krm-catalog catalog import --kpt-metadata krm-functions-catalog/functions --tag v0.4 --name kpt-functions -o catalog.yaml
  COSIGN_PASSWORD=... krm-catalog catalog import --kpt-metadata krm-functions-catalog/functions --tag v0.4 --name kpt-functions \
      --push oci://registry.example.com/catalogs/kpt-functions:v0.4 --sign-key cosign.key`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := reg.format.check(); err != nil {
				return err
			}
			if dir == "" || tag == "" || name == "" {
				return usageErr(errors.New("--kpt-metadata, --tag and --name are required"))
			}
			pub, err := importPushFlags(push, signKey, sigFormat, offline)
			if err != nil {
				return err
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
			if out == "-" || (out == "" && pub.refText == "") {
				if _, err := cmd.OutOrStdout().Write(data); err != nil {
					return err
				}
			} else if out != "" {
				if err := os.WriteFile(out, data, 0o644); err != nil {
					return failure(err)
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s: %d function(s)\n", out, len(metas))
			}
			if pub.refText == "" {
				return nil
			}
			client, err := reg.client(cmd, withoutCache)
			if err != nil {
				return err
			}
			return pub.pushAndSign(cmd, client, name, data, reg.format.is("json"))
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
	fs.StringVar(&push, "push", "", "push the catalog to this OCI reference ([oci://]registry/repository[:tag])")
	fs.StringVar(&signKey, "sign-key", "", "cosign private key to sign the pushed catalog with (password from COSIGN_PASSWORD; needs --push)")
	fs.StringVar(&sigFormat, "signature-format", "legacy", "signature of the pushed catalog: legacy (the sha256-<hex>.sig tag) or bundle")
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
		data, err := readRegularFile(path, catalog.MaxKptMetadataBytes)
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

// readRegularFile reads the regular file at path, of at most limit bytes, reading no more than
// that: a link, a device or a FIFO is refused before it is read (a metadata.yaml linked to
// /dev/zero would read until memory ran out, a FIFO would wait for ever), and the file opened is
// checked to be the one looked at.
func readRegularFile(path string, limit int64) ([]byte, error) {
	before, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !before.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%s); links and special files are not read", path, before.Mode().Type())
	}
	if before.Size() > limit {
		return nil, fmt.Errorf("%s is %d bytes, above the limit of %d", path, before.Size(), limit)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if opened, err := f.Stat(); err != nil || !os.SameFile(before, opened) {
		return nil, fmt.Errorf("%s changed while it was opened", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s is larger than the limit of %d bytes", path, limit)
	}
	return data, nil
}

// importPush is where an imported catalog goes: the reference to push it to ("" for none) and
// the signer of what was pushed (nil for none).
type importPush struct {
	ref       oci.Reference
	refText   string
	signer    *sign.Signer
	sigFormat string
}

// importPushFlags checks --push, --sign-key and --signature-format before any registry is
// asked, and loads the key, so that a wrong password fails before anything is resolved or pushed.
func importPushFlags(push, signKey, sigFormat string, offline bool) (importPush, error) {
	var p importPush
	if sigFormat != "legacy" && sigFormat != "bundle" {
		return p, usageErr(fmt.Errorf("--signature-format must be legacy or bundle, not %q", sigFormat))
	}
	if push == "" {
		if signKey != "" {
			return p, usageErr(errors.New("--sign-key signs the pushed catalog: give --push REF"))
		}
		return p, nil
	}
	if offline {
		return p, usageErr(errors.New("--offline asks no registry, and --push pushes to one: give one of them"))
	}
	p.refText = strings.TrimPrefix(push, "oci://")
	ref, err := oci.ParseReference(p.refText)
	if err != nil {
		return p, usageErr(fmt.Errorf("--push: %w", err))
	}
	p.ref, p.sigFormat = ref, formatName(sigFormat)
	if signKey != "" {
		if p.signer, err = sign.LoadPrivateKeyFile(signKey, []byte(os.Getenv(sign.PasswordEnv))); err != nil {
			return p, usageErr(fmt.Errorf("--sign-key: %w (the password comes from %s)", err, sign.PasswordEnv))
		}
	}
	return p, nil
}

// pushAndSign pushes the catalog as push does, signs it by digest when a key was given, and
// prints the pushed digest (with --format json, what push and sign print).
func (p importPush) pushAndSign(cmd *cobra.Command, client *oci.Client, name string, data []byte, asJSON bool) error {
	created, err := createdTime()
	if err != nil {
		return err
	}
	res, err := client.Push(cmd.Context(), p.refText, oci.PushOptions{
		Kind: oci.KindCatalog, Title: name, Version: p.ref.Tag, Created: created,
		Files: []oci.File{{Data: data, Title: "catalog.yaml"}},
	})
	if err != nil {
		return opErr(err)
	}
	var sig *oci.Signature
	if p.signer != nil {
		pinned := p.ref.Name() + "@" + res.Descriptor.Digest.String()
		s, err := client.Sign(cmd.Context(), pinned, p.signer, oci.SignOptions{Format: p.sigFormat})
		if err != nil {
			return opErr(fmt.Errorf("pushed %s, but not signed: %w", pinned, err))
		}
		sig = &s
		fmt.Fprintf(cmd.ErrOrStderr(), "signed %s: signature %s (%s)\n", pinned, s.Manifest, s.Format)
	}
	if asJSON {
		return writeJSON(cmd.OutOrStdout(), struct {
			pushJSON
			Signature *oci.Signature `json:"signature,omitempty"`
		}{pushOutput(res), sig})
	}
	_, err = fmt.Fprintln(cmd.OutOrStdout(), res.Descriptor.Digest)
	return err
}
