package cmd

import (
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/krm-catalog/krm-catalog/catalog"
)

func newValidateCmd() *cobra.Command {
	var (
		strict  bool
		verbose bool
		format  *outputFormat
	)
	cmd := &cobra.Command{
		Use:   "validate [--strict] [--format text|json] PATH...",
		Short: "Check KRMFunctionCatalog, KRMFunctionDefinition, ResourceList and Composition documents",
		Long: `Validate checks documents against their schemas and the rules a careful reviewer
would apply: pinned images, exec platforms with sha256 digests, unique function versions,
compilable functionConfig schemas, well-formed references and URLs.

PATH is a file, a directory (searched recursively for .yaml, .yml and .json files)
or - for standard input. Each finding names its file, line, column and JSON pointer.

Exit status: 0 when there is no error, 1 when there is one, 2 when the input could
not be read or the command was used wrongly.`,
		Example: `  krm-catalog validate examples/
  krm-catalog validate --strict --format json catalog.yaml
  cat catalog.yaml | krm-catalog validate -`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := format.check(); err != nil {
				return err
			}
			v, err := catalog.NewValidator()
			if err != nil {
				return usageErr(err)
			}
			inputs, readErr := catalog.ReadInputs(args, cmd.InOrStdin())
			findings := v.ValidateInputs(inputs, catalog.Options{})
			if strict {
				findings = findings.Strict()
			}
			out := cmd.OutOrStdout()
			if format.is("json") {
				err = catalog.WriteJSON(out, len(inputs), findings)
			} else {
				shown := findings
				if !verbose {
					// info findings say which files of a directory were skipped: noise unless asked for
					shown = slices.DeleteFunc(slices.Clone(findings), func(f catalog.Finding) bool { return f.Severity == catalog.SeverityInfo })
				}
				err = writeFindings(out, shown)
				if err == nil && (len(findings) > 0 || readErr == nil) {
					summary := catalog.Summarize(len(inputs), findings).String()
					if skipped := findings.Count(catalog.SeverityInfo); skipped > 0 && !verbose {
						summary += fmt.Sprintf(" (%d documents of other kinds skipped; -v lists them)", skipped)
					}
					fmt.Fprintln(cmd.ErrOrStderr(), summary)
				}
			}
			switch {
			case err != nil:
				return usageErr(fmt.Errorf("write report: %w", err))
			case readErr != nil:
				return usageErr(readErr)
			case findings.HasErrors():
				return failure(nil)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&strict, "strict", false, "treat warnings as errors")
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "also list the documents of other kinds that were skipped")
	format = addFormatFlag(cmd, "text", "json")
	return cmd
}
