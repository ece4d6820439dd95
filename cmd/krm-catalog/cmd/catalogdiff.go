package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/krm-catalog/krm-catalog/apiclient"
	"github.com/krm-catalog/krm-catalog/catalog"
	"github.com/krm-catalog/krm-catalog/catalog/diff"
)

func newCatalogDiffCmd() *cobra.Command {
	var (
		o         fnOptions
		format    *outputFormat
		failOn    string
		serverURL string
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

With --server, diff also asks the krm-catalog service what the publishers of NEW's curated
entries (other publishers' functions, listed by reference) publish now, and lists under
"lagging" each entry behind it: a version the publisher publishes that NEW lacks, a version
whose runtime the publisher has moved, a version it no longer publishes. These are not changes
between OLD and NEW, never breaking, and do not count for --fail-on.

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
			if serverURL != "" || os.Getenv(envServer) != "" {
				c, err := searchClient(serverURL)
				if err != nil {
					return err
				}
				upstream, err := publishedNow(cmd.Context(), c, cats[1])
				if err != nil {
					return usageErr(fmt.Errorf("compare curated entries with their publishers': %w", err))
				}
				rep.Lagging = diff.Lagging(cats[1], upstream)
			}
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
	fs.StringVar(&serverURL, "server", "", "the krm-catalog service to ask what the publishers of NEW's curated entries publish now (default $"+envServer+"; with neither, none is asked)")
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
		fmt.Fprintln(w, "no changes")
	} else {
		if err := writeChanges(w, r.Changes); err != nil {
			return err
		}
		fmt.Fprintf(w, "%d change(s), %d breaking\n", len(r.Changes), r.Breaking)
	}
	if len(r.Lagging) == 0 {
		return nil
	}
	fmt.Fprintf(w, "%d curated entr(ies) of %s behind their publishers:\n", len(r.Lagging), r.New)
	return writeChanges(w, r.Lagging)
}

// writeChanges writes one aligned line a change: the breaking mark, kind, where, and what.
func writeChanges(w io.Writer, changes []diff.Change) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, c := range changes {
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
	return tw.Flush()
}

// publishedNow asks the service what the publisher of each of cat's curated entries publishes
// now: the versions and runtimes of its own current sources, never a curator's copy. An entry
// is curated when it names another publisher than the catalog's; a catalog the service does not
// know has no publisher yet, so every entry is compared. Functions the service does not know
// are left out.
func publishedNow(ctx context.Context, c *apiclient.Client, cat *catalog.Catalog) (map[string]diff.Published, error) {
	curator := ""
	info, err := c.Catalog(ctx, cat.Name)
	switch {
	case err == nil:
		curator = info.Publisher
	case !notFound(err):
		return nil, err
	}
	out := map[string]diff.Published{}
	for _, f := range cat.Functions {
		if _, done := out[f.ID()]; done || f.Publisher == curator {
			continue
		}
		d, err := c.Function(ctx, f.Group, f.Kind)
		if notFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		p := diff.Published{Publisher: d.Publisher, Versions: map[string][]catalog.Runtime{}}
		for _, e := range d.Entries {
			if e.Source.CuratedBy == "" && e.Publisher == d.Publisher {
				p.Versions[e.Version] = append(p.Versions[e.Version], catalog.DecodeVersion(e.Spec).Runtime)
			}
		}
		out[f.ID()] = p
	}
	return out, nil
}

func notFound(err error) bool {
	var apiErr *apiclient.Error
	return errors.As(err, &apiErr) && apiErr.Status == http.StatusNotFound
}
