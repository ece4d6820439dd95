package cmd

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/krm-catalog/krm-catalog/catalog"
	"github.com/krm-catalog/krm-catalog/catalog/diff"
)

func newCatalogDiffCmd() *cobra.Command {
	var (
		o      fnOptions
		format *outputFormat
		failOn string
	)
	cmd := &cobra.Command{
		Use:   "diff OLD NEW",
		Short: "Show what a catalog update changes, and whether it breaks users of the old catalog",
		Long: `Diff compares two catalogs (paths, https:// URLs, git references or oci:// references) and
lists what a reviewer of the update needs: functions and versions added and removed, runtimes
added and removed, changed sources and digests, new network or mount requirements, and schema
changes (fields added, removed, made required or optional, types changed, enums narrowed).
Breaking changes are marked, each with its reason (docs/catalog-diff.md). With --key, oci://
catalogs must be signed by one of the keys.

Exit status: 0, or 1 when --fail-on breaking finds a breaking change (--fail-on any: any change);
2 for usage errors and catalogs that cannot be read.`,
		Example: `  krm-catalog catalog diff old/catalog.yaml catalog.yaml
  krm-catalog catalog diff --fail-on breaking --format json oci://registry.example.com/catalogs/platform:v1 catalog.yaml`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := format.check(); err != nil {
				return err
			}
			if err := checkFailOn(failOn); err != nil {
				return err
			}
			// both catalogs are only read and compared, never run: naming them is trusting them
			o.catalogs, o.trusted = args, args
			r, err := o.resolver(&ociAdapter{opts: &o})
			if err != nil {
				return err
			}
			var cats [2]*catalog.Catalog
			for i, ref := range args {
				if cats[i], err = r.Load(cmd.Context(), ref); err != nil {
					return usageErr(err)
				}
			}
			rep := diff.NewReport(args[0], args[1], cats[0], cats[1])
			if format.is("json") {
				err = writeJSON(cmd.OutOrStdout(), rep)
			} else {
				err = writeDiffText(cmd.OutOrStdout(), rep)
			}
			if err != nil {
				return err
			}
			if failsOn(failOn, rep) {
				return failure(nil)
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringArrayVar(&o.keys, "key", nil, "public key (PEM): oci:// catalogs must be signed by one of these keys (repeatable)")
	fs.StringVar(&o.cacheDir, "cache-dir", "", "cache for catalogs and OCI content (default: the user cache directory)")
	failOnFlag(cmd, &failOn)
	format = addFormatFlag(cmd, "text", "json")
	return cmd
}

// failOnFlag registers --fail-on, which catalog diff and publish share.
func failOnFlag(cmd *cobra.Command, failOn *string) {
	cmd.Flags().StringVar(failOn, "fail-on", "none", "exit 1 on: none, breaking (breaking changes) or any (any change)")
}

func checkFailOn(failOn string) error {
	if failOn != "none" && failOn != "breaking" && failOn != "any" {
		return usageErr(fmt.Errorf("--fail-on must be none, breaking or any, not %q", failOn))
	}
	return nil
}

// failsOn reports whether --fail-on's value failOn fails on the changes of rep.
func failsOn(failOn string, rep diff.Report) bool {
	return (failOn == "breaking" && rep.Breaking > 0) || (failOn == "any" && len(rep.Changes) > 0)
}

func writeDiffText(w io.Writer, r diff.Report) error {
	fmt.Fprintf(w, "%s -> %s\n", r.Old, r.New)
	if len(r.Changes) == 0 {
		_, err := fmt.Fprintln(w, "no changes")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, c := range r.Changes {
		mark := ""
		if c.Breaking {
			mark = "BREAKING"
		}
		what := c.New
		switch {
		case c.Old != "" && c.New != "":
			what = c.Old + " -> " + c.New
		case c.Old != "":
			what = "was " + c.Old
		}
		if c.Reason != "" {
			what = strings.TrimSpace(what + " (" + c.Reason + ")")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", mark, c.Kind, c.Subject(), what)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%d change(s), %d breaking\n", len(r.Changes), r.Breaking)
	return err
}
