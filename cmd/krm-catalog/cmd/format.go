package cmd

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
)

// outputFormat is the value of --format, the one spelling of "the output format" across commands
// (docs/cli.md). -o/--output names where output goes (pull's directory), never its format.
type outputFormat struct {
	value   string
	allowed []string
	legacy  bool
}

// addFormatFlag registers --format on cmd with its default and the values it accepts (the
// default first). withLegacyAlias also accepts -o/--output, the spelling validate, resolve,
// catalog view, publish, token list and version used before: hidden, deprecated, kept for a release.
func addFormatFlag(cmd *cobra.Command, withLegacyAlias bool, allowed ...string) *outputFormat {
	f := &outputFormat{allowed: allowed, legacy: withLegacyAlias}
	usage := "output format: " + strings.Join(allowed, ", ")
	cmd.Flags().StringVar(&f.value, "format", allowed[0], usage)
	if withLegacyAlias {
		cmd.Flags().StringVarP(&f.value, "output", "o", allowed[0], usage)
		// Hidden rather than pflag-deprecated: pflag prints its notice where cobra sends usage,
		// which is stdout, and would break JSON read from it.
		_ = cmd.Flags().MarkHidden("output")
	}
	return f
}

// check is the usage error for a value --format does not accept. It also tells, on stderr, that
// the old spelling is on its way out.
func (f *outputFormat) check(cmd *cobra.Command) error {
	if f.legacy && cmd.Flags().Changed("output") {
		fmt.Fprintln(cmd.ErrOrStderr(), "krm-catalog: -o/--output for the output format is deprecated; use --format")
	}
	if slices.Contains(f.allowed, f.value) {
		return nil
	}
	return usageErr(fmt.Errorf("--format must be %s, not %q", strings.Join(f.allowed, " or "), f.value))
}

// is reports whether the chosen format is name.
func (f *outputFormat) is(name string) bool { return f.value == name }
