package cmd

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/krm-catalog/krm-catalog/fn/upgrade"
	"github.com/krm-catalog/krm-catalog/resolver"
)

// upgradeOptions are the flags fn outdated and fn upgrade share.
type upgradeOptions struct {
	fnOptions
	only   []string
	format *outputFormat
}

func (o *upgradeOptions) add(cmd *cobra.Command) {
	o.addResolveFlags(cmd.Flags())
	cmd.Flags().StringArrayVar(&o.only, "only", nil, "only the steps of this function, GROUP/KIND (repeatable)")
	o.format = addFormatFlag(cmd, "table", "json")
}

// options checks the shared flags and builds the library's options.
func (o *upgradeOptions) options() (upgrade.Options, error) {
	if err := o.format.check(); err != nil {
		return upgrade.Options{}, err
	}
	for _, id := range o.only {
		if group, kind, ok := strings.Cut(id, "/"); !ok || group == "" || kind == "" || strings.Contains(kind, "/") {
			return upgrade.Options{}, usageErr(fmt.Errorf("--only takes GROUP/KIND (fn.example.com/SetLabels), not %q", id))
		}
	}
	r, err := o.resolver(&ociAdapter{opts: &o.fnOptions})
	if err != nil {
		return upgrade.Options{}, err
	}
	// a Kustomization's or Composition's own catalogs come after the command line's, as build
	// searches them
	resolverFor := func(catalogs []string, declared map[string][]string) (*resolver.Resolver, error) {
		with := o.fnOptions
		with.catalogs = append(slices.Clone(o.catalogs), catalogs...)
		with.declared = declared
		return with.resolver(&ociAdapter{opts: &with})
	}
	return upgrade.Options{Resolver: r, ResolverFor: resolverFor, Only: o.only}, nil
}

// upgradeExit maps the library's errors to exit codes: input that cannot be read (a file, a
// catalog) and usage are 2, as for every command.
func upgradeExit(err error) error {
	if errors.Is(err, upgrade.ErrInvalidInput) {
		return usageErr(err)
	}
	return runExit(err)
}

func newFnOutdatedCmd() *cobra.Command {
	var (
		o      upgradeOptions
		failOn string
	)
	cmd := &cobra.Command{
		Use:   "outdated PATH... [--catalog REF --trusted-catalog REF]...",
		Short: "List the function steps of packages and the newest versions the catalogs list",
		Long: `Outdated finds every function step under the paths: the pipelines of Kptfiles (subpackages
included), the generators, transformers and validators of Kustomizations, the transformers of
Compositions. For each it says what runs now (the image's tag or digest, the executable's
sha256 or the catalog version the config's apiVersion and kind resolve to) and the newest
version the catalogs list (--catalog, each named by --trusted-catalog; every one is read), and
whether that is a patch, minor or major upgrade (docs/upgrade.md).

Exit status: 0; 1 with --fail-on outdated when a step is outdated; 2 for usage errors and for
files or catalogs that cannot be read.`,
		Example: `  krm-catalog fn outdated packages/ --catalog catalog.yaml --trusted-catalog catalog.yaml
  krm-catalog fn outdated packages/ --catalog oci://registry.example.com/catalogs/platform:v3 \
      --trusted-catalog oci://registry.example.com/catalogs/platform:v3 --fail-on outdated --format json`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if failOn != "none" && failOn != "outdated" {
				return usageErr(fmt.Errorf("--fail-on must be none or outdated, not %q", failOn))
			}
			opts, err := o.options()
			if err != nil {
				return err
			}
			rep, err := upgrade.List(cmd.Context(), args, opts)
			if err != nil {
				return upgradeExit(err)
			}
			if o.format.is("json") {
				err = writeJSON(cmd.OutOrStdout(), rep)
			} else {
				err = writeOutdated(cmd.OutOrStdout(), rep)
			}
			if err != nil {
				return err
			}
			if failOn == "outdated" && rep.Summary.Outdated > 0 {
				return failure(nil)
			}
			return nil
		},
	}
	o.add(cmd)
	cmd.Flags().StringVar(&failOn, "fail-on", "none", "exit 1 on: none, or outdated (a step has a newer version)")
	return cmd
}

func newFnUpgradeCmd() *cobra.Command {
	var (
		o      upgradeOptions
		to     string
		dryRun bool
	)
	cmd := &cobra.Command{
		Use:   "upgrade PATH... [--to patch|minor|latest] [--only GROUP/KIND] [--dry-run]",
		Short: "Upgrade the function steps of packages where the new version is safe for them",
		Long: `Upgrade rewrites each function step under the paths (as fn outdated finds them) to the newest
version --to allows, pinned by digest, where that is safe: the step's functionConfig validates
against the new version's schema, and catalog diff finds nothing breaking between the version
the step runs and the new one. When the newest is not safe the next older one is tried; a step
with no safe version is left as it is, and the report says why (the schema violation at its
line, or the breaking change). An image step is rewritten to repository:tag@sha256:digest; a
step found by its config's kind gets the new apiVersion in its config. Only the rewritten value
changes in each file: comments, key order and layout stay. A second run changes nothing.

--dry-run writes nothing and prints the unified diff of each file, then the report.

Exit status: 0 (held steps included: the report says why); 2 for usage errors and for files or
catalogs that cannot be read, and then nothing is written.`,
		Example: `  krm-catalog fn upgrade packages/ --catalog catalog.yaml --trusted-catalog catalog.yaml --dry-run
  krm-catalog fn upgrade packages/ --to latest --only fn.example.com/SetLabels --catalog catalog.yaml --trusted-catalog catalog.yaml`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			level, err := upgrade.ParseLevel(to)
			if err != nil {
				return usageErr(err)
			}
			opts, err := o.options()
			if err != nil {
				return err
			}
			opts.To, opts.Write = level, !dryRun
			rep, err := upgrade.Upgrade(cmd.Context(), args, opts)
			if err != nil {
				return upgradeExit(err)
			}
			if o.format.is("json") {
				return writeJSON(cmd.OutOrStdout(), rep)
			}
			return writeUpgrade(cmd.OutOrStdout(), rep)
		},
	}
	o.add(cmd)
	cmd.Flags().StringVar(&to, "to", "minor", "how far to upgrade: patch, minor or latest (a major version too)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "write nothing: print the diff of each file and the report")
	return cmd
}

// where is a step's place for a table: the file and line that name the function, then the
// declaration when it is in another file.
func where(s *upgrade.Step) string {
	at := fmt.Sprintf("%s:%d", s.File, s.Line)
	if rest, ok := strings.CutPrefix(s.Step, s.File+" "); ok {
		return at + " " + rest
	}
	return at + " (" + s.Step + ")"
}

func orDash(v *upgrade.Version) string {
	if v == nil {
		return "-"
	}
	return dash(v.Version)
}

func writeOutdated(w io.Writer, rep *upgrade.Report) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tFUNCTION\tCURRENT\tNEWEST\tAVAILABLE")
	var notes []string
	for _, s := range rep.Steps {
		avail := string(s.Available)
		switch {
		case s.Status == upgrade.Unknown:
			avail = "unknown"
			notes = append(notes, fmt.Sprintf("%s:%d: %s", s.File, s.Line, s.Note))
		case avail == "":
			avail = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", where(s), dash(s.Function), orDash(s.Current), orDash(s.Newest), avail)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, n := range notes {
		fmt.Fprintln(w, n)
	}
	sum := rep.Summary
	_, err := fmt.Fprintf(w, "%d step(s): %d outdated, %d up to date, %d unknown\n", sum.Steps, sum.Outdated, sum.UpToDate, sum.Unknown)
	return err
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func writeUpgrade(w io.Writer, rep *upgrade.Report) error {
	if rep.DryRun {
		for _, f := range rep.Files {
			if _, err := io.WriteString(w, f.Diff); err != nil {
				return err
			}
		}
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tFUNCTION\tCURRENT\tTO\tRESULT")
	var reasons []string
	for _, s := range rep.Steps {
		result := string(s.Status)
		if s.Status == upgrade.Upgraded && rep.DryRun {
			result = "would upgrade"
		}
		if s.Note != "" {
			reasons = append(reasons, fmt.Sprintf("%s:%d: %s", s.File, s.Line, s.Note))
		}
		for _, r := range s.Reasons {
			at := ""
			if r.File != "" {
				at = fmt.Sprintf(" (%s:%d)", r.File, r.Line)
			}
			reasons = append(reasons, fmt.Sprintf("%s:%d: %s %s not applied: %s: %s%s", s.File, s.Line, dash(s.Function), r.Version, r.Kind, r.Message, at))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", where(s), dash(s.Function), orDash(s.Current), orDash(s.To), result)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range reasons {
		fmt.Fprintln(w, r)
	}
	sum := rep.Summary
	verb := "written"
	if rep.DryRun {
		verb = "to write (dry run: nothing written)"
	}
	_, err := fmt.Fprintf(w, "%d step(s): %d upgraded, %d held, %d up to date, %d unknown; %d file(s) %s\n",
		sum.Steps, sum.Upgraded, sum.Held, sum.UpToDate, sum.Unknown, sum.Files, verb)
	return err
}
