package cmd

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/krm-catalog/krm-catalog/catalog"
	"github.com/krm-catalog/krm-catalog/oci"
	"github.com/krm-catalog/krm-catalog/resolver"
)

func newCatalogCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "catalog",
		Short: "Inspect function catalogs",
	}
	cmd.AddCommand(newCatalogViewCmd(), newCatalogDiffCmd(), newCatalogProposeCmd(), newCatalogProposalsCmd(), newCatalogApproveCmd(), newCatalogRejectCmd(), newCatalogImportCmd(), newCatalogAddCmd())
	return cmd
}

// catalogView is what catalog view prints.
type catalogView struct {
	Reference string            `json:"reference"`
	Name      string            `json:"name"`
	Labels    map[string]string `json:"labels,omitempty"`
	Signature string            `json:"signature"`
	Functions []functionView    `json:"functions"`
}

type functionView struct {
	Function  string        `json:"function"`
	Version   string        `json:"version"`
	Publisher string        `json:"publisher"`
	SpecV2    bool          `json:"serverMode,omitempty"`
	Runtimes  []runtimeView `json:"runtimes"`
}

type runtimeView struct {
	Kind     string `json:"kind"`
	Platform string `json:"platform,omitempty"`
	Source   string `json:"source"`
	Digest   string `json:"digest,omitempty"`
	Note     string `json:"note,omitempty"`
}

func newCatalogViewCmd() *cobra.Command {
	var (
		o      fnOptions
		format *outputFormat
	)
	cmd := &cobra.Command{
		Use:   "view REF",
		Short: "Show a catalog: publisher, functions, runtimes, digests and signature status",
		Long: `View fetches a catalog (a path, https:// URL, git reference or oci:// reference) and shows
what it would let run: each function's publisher, versions, runtimes, and the digests that pin
them, with the catalog's signature status. It is how to decide whether to trust a catalog, so
it needs no --trusted-catalog and runs nothing. Signatures are checked against --key; only
oci:// catalogs carry signatures.`,
		Example: `  krm-catalog catalog view examples/functions/catalog.yaml
  krm-catalog catalog view --key platform.pub oci://registry.example.com/catalogs/platform:v1`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := format.check(); err != nil {
				return err
			}
			ref := args[0]
			sigStatus := signatureStatus(cmd.Context(), &ociAdapter{opts: &o}, ref)
			// viewing runs nothing: it is how one decides to trust a catalog, so the catalog is
			// trusted for the view and fetched whatever its signatures, which are shown instead
			fetch := o
			fetch.catalogs, fetch.keys = []string{ref}, nil
			r, err := fetch.resolver(&ociAdapter{opts: &fetch}, ref)
			if err != nil {
				return err
			}
			cat, err := r.Load(cmd.Context(), ref)
			if err != nil {
				return runExit(err)
			}
			v := viewOf(ref, cat, sigStatus)
			if format.is("json") {
				return writeJSON(cmd.OutOrStdout(), v)
			}
			return writeCatalogView(cmd.OutOrStdout(), v)
		},
	}
	o.addResolveFlags(cmd.Flags())
	format = addFormatFlag(cmd, "text", "json")
	return cmd
}

// signatureStatus describes the catalog's signatures: verified by a --key, signed but not by a key
// given, unsigned, or not applicable for references that are not oci://.
func signatureStatus(ctx context.Context, oa *ociAdapter, ref string) string {
	r, err := resolver.ParseRef(ref)
	if err != nil || r.Kind != resolver.RefOCI {
		return "not applicable: only oci:// catalogs carry signatures"
	}
	a, err := oa.get(ctx)
	if err != nil {
		return "unknown: " + err.Error()
	}
	_, sigs, err := a.Client.Signatures(ctx, r.OCI, a.Keys)
	if err != nil {
		return "unknown: " + err.Error()
	}
	switch oci.Classify(sigs) {
	case oci.StatusUnsigned:
		return "unsigned"
	case oci.StatusVerified:
		s := sigs[slices.IndexFunc(sigs, func(s oci.Signature) bool { return s.Verified })]
		return fmt.Sprintf("verified (%s signature by key %s)", s.Format, s.Key)
	}
	if len(a.Keys) == 0 {
		return fmt.Sprintf("signed (%d signature(s); give --key to verify)", len(sigs))
	}
	return fmt.Sprintf("signed, but by none of the keys given (%d signature(s))", len(sigs))
}

func viewOf(ref string, cat *catalog.Catalog, sig string) catalogView {
	v := catalogView{Reference: ref, Name: cat.Name, Labels: cat.Labels, Signature: sig}
	for _, f := range cat.Functions {
		for _, ver := range f.Versions {
			fv := functionView{Function: f.ID(), Version: ver.Name, Publisher: f.Publisher, SpecV2: ver.SpecV2()}
			rt := ver.Runtime
			if c := rt.Container; c != nil {
				r := runtimeView{Kind: "container", Source: c.Image, Digest: c.Digest()}
				var needs []string
				if c.RequireNetwork {
					needs = append(needs, "network")
				}
				if c.RequireStorageMount {
					needs = append(needs, "storage mount")
				}
				if len(needs) > 0 {
					r.Note = "requires " + strings.Join(needs, " and ")
				}
				if r.Digest == "" {
					r.Note = "NOT PINNED: krm-catalog will not run it"
				}
				fv.Runtimes = append(fv.Runtimes, r)
			}
			if e := rt.Exec; e != nil {
				for _, p := range e.Platforms {
					fv.Runtimes = append(fv.Runtimes, runtimeView{Kind: "exec", Platform: p.OS + "/" + p.Arch, Source: p.URI, Digest: "sha256:" + p.SHA256})
				}
			}
			if s := rt.Starlark; s != nil {
				fv.Runtimes = append(fv.Runtimes, runtimeView{Kind: "starlark", Source: s.Source(), Digest: s.Digest()})
			}
			v.Functions = append(v.Functions, fv)
		}
	}
	return v
}

func writeCatalogView(w io.Writer, v catalogView) error {
	fmt.Fprintf(w, "Catalog:    %s\n", v.Name)
	fmt.Fprintf(w, "Reference:  %s\n", v.Reference)
	fmt.Fprintf(w, "Signature:  %s\n", v.Signature)
	publishers := map[string]bool{}
	var pubs []string
	for _, f := range v.Functions {
		if !publishers[f.Publisher] {
			publishers[f.Publisher] = true
			pubs = append(pubs, f.Publisher)
		}
	}
	fmt.Fprintf(w, "Publishers: %s\n", strings.Join(pubs, ", "))
	fmt.Fprintf(w, "Functions:  %d versions\n\n", len(v.Functions))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FUNCTION\tVERSION\tPUBLISHER\tRUNTIME\tSOURCE\tDIGEST")
	for _, f := range v.Functions {
		for i, r := range f.Runtimes {
			name, version, pub := f.Function, f.Version, f.Publisher
			if i > 0 {
				name, version, pub = "", "", ""
			}
			kind := r.Kind
			if r.Platform != "" {
				kind += " " + r.Platform
			}
			if f.SpecV2 && r.Kind != "starlark" {
				kind += " (v2)"
			}
			digest := r.Digest
			if r.Note != "" {
				digest = strings.TrimSpace(digest + " " + r.Note)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", name, version, pub, kind, r.Source, digest)
		}
	}
	return tw.Flush()
}
