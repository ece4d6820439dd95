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
}

// addFormatFlag registers --format on cmd with its default and the values it accepts (the
// default first).
func addFormatFlag(cmd *cobra.Command, allowed ...string) *outputFormat {
	f := &outputFormat{allowed: allowed}
	cmd.Flags().StringVar(&f.value, "format", allowed[0], "output format: "+strings.Join(allowed, ", "))
	return f
}

// check is the usage error for a value --format does not accept.
func (f *outputFormat) check() error {
	if slices.Contains(f.allowed, f.value) {
		return nil
	}
	return usageErr(fmt.Errorf("--format must be %s, not %q", strings.Join(f.allowed, " or "), f.value))
}

// is reports whether the chosen format is name.
func (f *outputFormat) is(name string) bool { return f.value == name }
