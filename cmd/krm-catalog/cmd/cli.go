// Package cmd holds the krm-catalog commands. It parses flags, calls the packages that do the work,
// and turns their results into output and exit codes; it holds no logic of its own beyond that.
package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/krm-catalog/krm-catalog/fn/runtime/starlark"
)

// ServeSandbox serves a starlark sandbox when this process was started as one: the commands that
// run starlark functions start the program that runs them (os.Executable) that way, so a test
// binary that calls Main must call this first in its TestMain.
func ServeSandbox() (sandboxed bool, code int) {
	if len(os.Args) != 2 || os.Args[1] != starlark.SandboxArg {
		return false, 0
	}
	return true, starlark.ServeSandbox(os.Stdin, os.Stdout, os.Stderr)
}

// IO is where a command reads and writes.
type IO struct {
	In       io.Reader
	Out, Err io.Writer
}

// Main runs the command line and returns the process exit code.
func Main(ctx context.Context, args []string, streams IO) int {
	if len(args) == 1 && args[0] == starlark.SandboxArg {
		// started by this program to run one starlark script (fn/starlarkfn's sandbox)
		return starlark.ServeSandbox(streams.In, streams.Out, streams.Err)
	}
	return execute(ctx, newRoot(streams, args), args, streams)
}

// execute runs root on args and returns the process exit code.
func execute(ctx context.Context, root *cobra.Command, args []string, streams IO) int {
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(streams.Err, colourFor(streams.Err).errorPrefix(), ee.err)
		}
		return ee.code
	}
	// cobra's own errors are usage errors: unknown command or flag, wrong argument count
	fmt.Fprintln(streams.Err, colourFor(streams.Err).errorPrefix(), err)
	if cmd != nil {
		fmt.Fprintf(streams.Err, "usage: %s (%s --help for more)\n", cmd.UseLine(), cmd.CommandPath())
	}
	return ExitUsage
}

// newRoot builds the command line for args: when args[0] names a top-level command, the root and
// that command alone, since building every command and its flags cost every start 0.3-0.5 ms and
// 1,400 allocations, for any command; otherwise (no command, a flag first, help, completion, a
// misspelt command that cobra suggests a name for) the root and every command.
func newRoot(streams IO, args []string) *cobra.Command {
	root := &cobra.Command{
		Use:   "krm-catalog",
		Short: "Validate, publish, serve and run catalogs of KRM functions",
		Long: `krm-catalog works with catalogs of KRM functions (KEP-2906): it validates
KRMFunctionCatalog and KRMFunctionDefinition documents, serves and publishes them,
moves them through OCI registries, and resolves and runs the functions they name.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       currentVersion().Version,
	}
	root.SetVersionTemplate("krm-catalog {{.Version}}\n")
	root.SetFlagErrorFunc(suggestFlag)
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.Err)
	commands := topCommands()
	if len(args) > 0 {
		for _, c := range commands {
			if c.name == args[0] {
				root.AddCommand(c.build(streams))
				// and without cobra's completion command, which only `completion` as the first
				// argument reaches (it and its four subcommands cost 0.1 ms)
				root.CompletionOptions.DisableDefaultCmd = true
				return root
			}
		}
	}
	for _, c := range commands {
		root.AddCommand(c.build(streams))
	}
	return root
}

// topCommand is a top-level command: its name (its Use's first word; TestTopCommandNames holds the
// two together) and how to build it.
type topCommand struct {
	name  string
	build func(IO) *cobra.Command
}

func topCommands() []topCommand {
	without := func(f func() *cobra.Command) func(IO) *cobra.Command {
		return func(IO) *cobra.Command { return f() }
	}
	return []topCommand{
		{"version", without(newVersionCmd)},
		{"validate", without(newValidateCmd)},
		// moving artifacts through OCI registries
		{"push", without(newPushCmd)},
		{"pull", without(newPullCmd)},
		{"key", newKeyCmd},
		{"sign", without(newSignCmd)},
		{"attach", without(newAttachCmd)},
		{"discover", without(newDiscoverCmd)},
		{"verify", without(newVerifyCmd)},
		{"login", without(newLoginCmd)},
		{"logout", without(newLogoutCmd)},
		{"serve", newServeCmd},
		{"migrate", newMigrateCmd},
		{"token", newTokenCmd},
		{"publisher", newPublisherCmd},
		{"publish", without(newPublishCmd)},
		{"backup", newBackupCmd},
		{"restore", newRestoreCmd},
		{"resolve", without(newResolveCmd)},
		{"catalog", without(newCatalogCmd)},
		{"fn", without(newFnCmd)},
		{"build", without(newBuildCmd)},
		{"search", without(newSearchCmd)},
		{"mirror", without(newMirrorCmd)},
	}
}

// suggestFlag adds the nearest flag the command has to an unknown flag's error, as git and kubectl
// suggest a misspelt subcommand.
func suggestFlag(cmd *cobra.Command, err error) error {
	name, ok := strings.CutPrefix(err.Error(), "unknown flag: --")
	if !ok {
		return err
	}
	best, bestDist := "", 3 // farther than two edits is another word
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		if d := editDistance(name, f.Name); d < bestDist {
			best, bestDist = f.Name, d
		}
	})
	if best == "" {
		return err
	}
	return fmt.Errorf("%w; did you mean --%s?", err, best)
}

// editDistance is the Levenshtein distance between two short strings.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
