package cmd

// catalog add: a catalog entry from what a publisher has built (executables, an image, a starlark
// script), so that nobody writes a runtime block's platforms and sha256 values by hand.

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/catalog"
	"github.com/krm-catalog/krm-catalog/internal/atomicfile"
)

// catalogEntry is one function version as catalog add writes it; the runtimes left empty are kept
// as the file has them.
type catalogEntry struct {
	group, kind, version     string
	description, publisher   string
	execs                    []execBinary
	image, imageSHA256       string
	starlarkURI, starlarkSHA string
}

// execBinary is one platform's executable, hashed.
type execBinary struct{ os, arch, bin, uri, sha256 string }

func newCatalogAddCmd() *cobra.Command {
	var (
		reg                      registryFlags
		e                        catalogEntry
		name, baseURL, bin       string
		execFlags                []string
		starlarkFile, starlarkAt string
		dryRun                   bool
	)
	cmd := &cobra.Command{
		Use:   "add FILE --group GROUP --kind KIND --version VERSION (--exec OS/ARCH=PATH... --base-url URL | --image REF | --starlark FILE --uri URL)...",
		Short: "Add a function version to a catalog file, or update it, from built executables, an image or a starlark script",
		Long: `Add writes one function version into the KRMFunctionCatalog FILE (created when missing, named
--name or after the file): the function group/kind is found or added, then the version, then the
runtimes given, each replacing what the version had of that runtime (an exec platform replaces the
one of the same os/arch; the others stay).

  --exec OS/ARCH=PATH   an executable (or archive) built for one platform, repeatable: its sha256
                        is computed while it is read, its uri is --base-url/ and the file's name,
                        its bin --bin or the file's name
  --image REF           a container image: its digest is asked of the registry (REF may carry
                        @sha256:... instead, and then no registry is asked)
  --starlark FILE       a starlark script, hashed, published at --uri (default --base-url/ and
                        the file's name)

The resulting catalog is validated as krm-catalog validate does before anything is written, and
written in one step (a reader never sees half a file); comments and the order of the existing
file are kept. Exit status: 0 written; 1 when the catalog would not validate (the findings are
printed, nothing is written) or the registry cannot say the digest; 2 for usage errors.`,
		Example: `  krm-catalog catalog add catalog.yaml --group fn.example.com --kind SetNamespace --version v1 \
    --description "Sets metadata.namespace" --publisher example.com \
    --exec linux/amd64=dist/set-namespace_linux_amd64 --exec darwin/arm64=dist/set-namespace_darwin_arm64 \
    --base-url https://functions.example.com/set-namespace/v1.0.0 --bin set-namespace
  krm-catalog catalog add catalog.yaml --group fn.example.com --kind SetNamespace --version v1 \
    --image registry.example.com/fns/set-namespace:v1.0.0`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if e.group == "" || e.kind == "" || e.version == "" {
				return usageErr(errors.New("--group, --kind and --version name the function version: give all three"))
			}
			if len(execFlags) > 0 && baseURL == "" {
				return usageErr(errors.New("--exec needs --base-url: where the executables are published"))
			}
			if starlarkFile != "" && starlarkAt == "" && baseURL == "" {
				return usageErr(errors.New("--starlark needs --uri (or --base-url): where the script is published"))
			}
			if starlarkFile == "" && starlarkAt != "" {
				return usageErr(errors.New("--uri goes with --starlark FILE"))
			}
			var err error
			if e.execs, err = execBinaries(execFlags, baseURL, bin); err != nil {
				return usageErr(err)
			}
			if starlarkFile != "" {
				if e.starlarkSHA, err = fileSHA256(starlarkFile); err != nil {
					return usageErr(err)
				}
				e.starlarkURI = starlarkAt
				if e.starlarkURI == "" {
					e.starlarkURI = joinURL(baseURL, filepath.Base(starlarkFile))
				}
			}
			if e.image != "" {
				if e.image, e.imageSHA256, err = imageDigest(cmd, &reg, e.image); err != nil {
					return err
				}
			}
			return catalogAdd(cmd, args[0], name, e, dryRun)
		},
	}
	f := cmd.Flags()
	f.StringVar(&e.group, "group", "", "the function's group (its functionConfig's API group)")
	f.StringVar(&e.kind, "kind", "", "the function's kind (its functionConfig's kind)")
	f.StringVar(&e.version, "version", "", "the functionConfig version this entry serves (v1, v1beta1, ...)")
	f.StringVar(&e.description, "description", "", "what the function does (needed for a new function)")
	f.StringVar(&e.publisher, "publisher", "", "who publishes the function (needed for a new function)")
	f.StringVar(&name, "name", "", "metadata.name of a catalog FILE creates (default: the file's name without its extension)")
	f.StringArrayVar(&execFlags, "exec", nil, "OS/ARCH=PATH: the executable (or archive) built for that platform (repeatable)")
	f.StringVar(&baseURL, "base-url", "", "where the executables (and a starlark script without --uri) are published: each uri is BASE/ and the file's name")
	f.StringVar(&bin, "bin", "", "the executable's path inside each archive (default: the file's name)")
	f.StringVar(&e.image, "image", "", "the container image (REGISTRY/REPOSITORY:TAG, or with @sha256:...): its digest comes from the registry")
	f.StringVar(&starlarkFile, "starlark", "", "the starlark script, hashed here")
	f.StringVar(&starlarkAt, "uri", "", "with --starlark: the https:// or oci:// address the script is published at")
	f.BoolVar(&dryRun, "dry-run", false, "print the resulting catalog instead of writing FILE")
	reg.register(cmd)
	_ = f.MarkHidden("format")
	return cmd
}

// execBinaries hashes each --exec OS/ARCH=PATH; two platforms cannot share a published name.
func execBinaries(flags []string, base, bin string) ([]execBinary, error) {
	var out []execBinary
	byURI := map[string]string{}
	for _, s := range flags {
		platform, p, ok := strings.Cut(s, "=")
		goos, goarch, ok2 := strings.Cut(platform, "/")
		if !ok || !ok2 || goos == "" || goarch == "" || p == "" {
			return nil, fmt.Errorf("--exec %q: want OS/ARCH=PATH (linux/amd64=dist/fn)", s)
		}
		sum, err := fileSHA256(p)
		if err != nil {
			return nil, fmt.Errorf("--exec %s: %w", platform, err)
		}
		b := bin
		if b == "" {
			b = filepath.Base(p)
		}
		uri := joinURL(base, filepath.Base(p))
		if other, dup := byURI[uri]; dup {
			return nil, fmt.Errorf("--exec %s and %s would both be published as %s: give each platform's file its own name", other, platform, uri)
		}
		byURI[uri] = platform
		out = append(out, execBinary{os: goos, arch: goarch, bin: b, uri: uri, sha256: sum})
	}
	return out, nil
}

func joinURL(base, name string) string { return strings.TrimRight(base, "/") + "/" + name }

// fileSHA256 hashes a regular file as it reads it: executables can be large.
func fileSHA256(p string) (string, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil {
		return "", err
	} else if !st.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", p)
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("read %s: %w", p, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// imageDigest splits an image into what the catalog's image field holds and its digest: the one
// the reference carries, else the one the registry reports for its tag.
func imageDigest(cmd *cobra.Command, reg *registryFlags, image string) (name, sum string, err error) {
	ref, err := catalog.ParseImage(strings.TrimPrefix(image, "oci://"))
	if err != nil {
		return "", "", usageErr(fmt.Errorf("--image: %w", err))
	}
	digest := ref.Digest
	ref.Digest = ""
	if digest == "" {
		if ref.Tag == "" {
			return "", "", usageErr(fmt.Errorf("--image %s: give a tag or a digest", image))
		}
		client, err := reg.client(cmd, withoutCache)
		if err != nil {
			return "", "", err
		}
		desc, found, err := client.Exists(cmd.Context(), ref.String())
		switch {
		case err != nil:
			return "", "", failure(fmt.Errorf("--image %s: %w", image, err))
		case !found:
			return "", "", failure(fmt.Errorf("--image %s: the registry has no such tag", image))
		}
		digest = desc.Digest.String()
	}
	hexSum, ok := strings.CutPrefix(digest, "sha256:")
	if !ok {
		return "", "", failure(fmt.Errorf("--image %s: digest %s is not sha256", image, digest))
	}
	return ref.String(), hexSum, nil
}

// catalogAdd reads FILE (or starts a catalog), adds the entry, validates and writes it.
func catalogAdd(cmd *cobra.Command, file, name string, e catalogEntry, dryRun bool) error {
	data, err := os.ReadFile(file)
	perm := fs.FileMode(0o644)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if name == "" {
			name = strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
		}
		data = []byte(fmt.Sprintf("apiVersion: %s\nkind: %s\nmetadata:\n  name: %s\nspec:\n  krmFunctions: []\n", catalog.APIVersion, catalog.KindCatalog, yamlScalar(name)))
	case err != nil:
		return usageErr(err)
	default:
		if st, err := os.Stat(file); err == nil {
			perm = st.Mode().Perm()
		}
	}
	out, what, err := addEntry(data, e)
	if err != nil {
		return usageErr(fmt.Errorf("%s: %w", file, err))
	}
	v, err := catalog.NewValidator()
	if err != nil {
		return err
	}
	_, findings := v.Validate(file, out, catalog.Options{})
	if len(findings) > 0 {
		_ = catalog.WriteText(cmd.ErrOrStderr(), findings)
	}
	if findings.HasErrors() {
		return failure(fmt.Errorf("%s: not written: the catalog would not validate", file))
	}
	if dryRun {
		_, err := cmd.OutOrStdout().Write(out)
		return err
	}
	if err := atomicfile.WriteFile(file, out, perm); err != nil {
		return failure(err)
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "krm-catalog: %s: %s\n", file, what)
	return nil
}

// yamlScalar writes a string as a YAML scalar that reads back as that string.
func yamlScalar(s string) string {
	return strings.TrimSpace(yaml.NewStringRNode(s).MustString())
}

// addEntry adds or updates the entry in the catalog document data and says what it did. The
// document is edited as a node tree, so its comments and the order of its fields and entries stay.
func addEntry(data []byte, e catalogEntry) ([]byte, string, error) {
	nodes, err := (&kio.ByteReader{Reader: bytes.NewReader(data), PreserveSeqIndent: true}).Read()
	if err != nil {
		return nil, "", err
	}
	if len(nodes) != 1 {
		return nil, "", fmt.Errorf("holds %d documents: catalog add edits a file of one KRMFunctionCatalog", len(nodes))
	}
	doc := nodes[0]
	if k := doc.GetKind(); k != catalog.KindCatalog && k != catalog.KindCatalogShort {
		return nil, "", fmt.Errorf("is a %q, not a %s", k, catalog.KindCatalog)
	}
	fns, err := doc.Pipe(yaml.LookupCreate(yaml.SequenceNode, "spec", "krmFunctions"))
	if err != nil {
		return nil, "", err
	}
	if len(fns.Content()) == 0 {
		// an empty list written [] would have every entry added written inline
		fns.YNode().Style = 0
	}
	id := e.group + "/" + e.version + " " + e.kind
	added := false
	fnNode := findElement(fns, func(n *yaml.RNode) bool {
		return str(n, "group") == e.group && str(n, "names", "kind") == e.kind
	})
	what := "updated " + id
	if fnNode == nil {
		if e.description == "" || e.publisher == "" {
			return nil, "", fmt.Errorf("%s/%s is a new function: give --description and --publisher", e.group, e.kind)
		}
		fnNode = yaml.NewMapRNode(nil)
		if err := setStrings(fnNode, "group", e.group); err != nil {
			return nil, "", err
		}
		if err := setStrings(fnNode, "kind", e.kind, "names"); err != nil {
			return nil, "", err
		}
		if err := fns.PipeE(yaml.Append(fnNode.YNode())); err != nil {
			return nil, "", err
		}
		added = true
	}
	for _, f := range []struct{ field, value string }{{"description", e.description}, {"publisher", e.publisher}} {
		if f.value != "" {
			if err := setStrings(fnNode, f.field, f.value); err != nil {
				return nil, "", err
			}
		}
	}
	versions, err := fnNode.Pipe(yaml.LookupCreate(yaml.SequenceNode, "versions"))
	if err != nil {
		return nil, "", err
	}
	ver := findElement(versions, func(n *yaml.RNode) bool { return str(n, "name") == e.version })
	if ver == nil {
		ver = yaml.NewMapRNode(nil)
		if err := setStrings(ver, "name", e.version); err != nil {
			return nil, "", err
		}
		if err := versions.PipeE(yaml.Append(ver.YNode())); err != nil {
			return nil, "", err
		}
		what = "added " + id
		if added {
			what = "added the function " + id
		}
	}
	rt, err := ver.Pipe(yaml.LookupCreate(yaml.MappingNode, "runtime"))
	if err != nil {
		return nil, "", err
	}
	var runtimes []string
	if e.image != "" {
		if err := setStrings(rt, "image", e.image, "container"); err != nil {
			return nil, "", err
		}
		if err := setStrings(rt, "sha256", e.imageSHA256, "container"); err != nil {
			return nil, "", err
		}
		runtimes = append(runtimes, "container "+e.image+"@sha256:"+e.imageSHA256)
	}
	if len(e.execs) > 0 {
		platforms, err := rt.Pipe(yaml.LookupCreate(yaml.SequenceNode, "exec", "platforms"))
		if err != nil {
			return nil, "", err
		}
		var names []string
		for _, b := range e.execs {
			p := findElement(platforms, func(n *yaml.RNode) bool { return str(n, "os") == b.os && str(n, "arch") == b.arch })
			if p == nil {
				p = yaml.NewMapRNode(nil)
				if err := platforms.PipeE(yaml.Append(p.YNode())); err != nil {
					return nil, "", err
				}
			}
			for _, f := range [][2]string{{"bin", b.bin}, {"os", b.os}, {"arch", b.arch}, {"uri", b.uri}, {"sha256", b.sha256}} {
				if err := setStrings(p, f[0], f[1]); err != nil {
					return nil, "", err
				}
			}
			names = append(names, b.os+"/"+b.arch)
		}
		runtimes = append(runtimes, "exec "+strings.Join(names, ", "))
	}
	if e.starlarkURI != "" {
		st, err := rt.Pipe(yaml.LookupCreate(yaml.MappingNode, "starlark"))
		if err != nil {
			return nil, "", err
		}
		// a script has one source: a uri replaces a ref
		if _, err := st.Pipe(yaml.Clear("ref")); err != nil {
			return nil, "", err
		}
		if err := setStrings(st, "uri", e.starlarkURI); err != nil {
			return nil, "", err
		}
		if err := setStrings(st, "sha256", e.starlarkSHA); err != nil {
			return nil, "", err
		}
		runtimes = append(runtimes, "starlark "+e.starlarkURI)
	}
	if len(runtimes) > 0 {
		what += " (" + strings.Join(runtimes, "; ") + ")"
	}
	var buf bytes.Buffer
	if err := (kio.ByteWriter{Writer: &buf}).Write(nodes); err != nil {
		return nil, "", err
	}
	return buf.Bytes(), what, nil
}

// findElement returns the first mapping of a sequence that matches, or nil.
func findElement(seq *yaml.RNode, match func(*yaml.RNode) bool) *yaml.RNode {
	for _, n := range seq.Content() {
		if rn := yaml.NewRNode(n); n.Kind == yaml.MappingNode && match(rn) {
			return rn
		}
	}
	return nil
}

// str is the string at a path of a mapping, "" when there is none.
func str(n *yaml.RNode, fields ...string) string {
	v, err := n.Pipe(yaml.Lookup(fields...))
	if err != nil || v == nil || v.YNode().Kind != yaml.ScalarNode {
		return ""
	}
	return v.YNode().Value
}

// setStrings sets field, under the mappings of parents (created when missing), to a string value.
func setStrings(n *yaml.RNode, field, value string, parents ...string) error {
	target := n
	if len(parents) > 0 {
		var err error
		if target, err = n.Pipe(yaml.LookupCreate(yaml.MappingNode, parents...)); err != nil {
			return err
		}
	}
	// a value the file has already is changed in place, which keeps its comments
	if f := target.Field(field); f != nil && f.Value != nil && f.Value.YNode().Kind == yaml.ScalarNode {
		n := f.Value.YNode()
		n.Value, n.Tag = value, yaml.NodeTagString
		return nil
	}
	return target.PipeE(yaml.SetField(field, yaml.NewStringRNode(value)))
}
