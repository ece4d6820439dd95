// Package cmd holds the krm-catalog commands. It parses flags, calls the packages that do the work,
// and turns their results into output and exit codes; it holds no logic of its own beyond that.
package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

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
	root := newRoot(streams)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(streams.Err, "krm-catalog:", ee.err)
		}
		return ee.code
	}
	// cobra's own errors are usage errors: unknown command or flag, wrong argument count
	fmt.Fprintln(streams.Err, "krm-catalog:", err)
	return ExitUsage
}

func newRoot(streams IO) *cobra.Command {
	root := &cobra.Command{
		Use:   "krm-catalog",
		Short: "Validate, publish, serve and run catalogs of KRM functions",
		Long: `krm-catalog works with catalogs of KRM functions (KEP-2906): it validates
KRMFunctionCatalog and KRMFunctionDefinition documents, serves and publishes them,
moves them through OCI registries, and resolves and runs the functions they name.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(streams.Err)
	root.AddCommand(newVersionCmd(), newValidateCmd())
	root.AddCommand(ociCommands()...)
	root.AddCommand(newServeCmd(streams), newMigrateCmd(streams), newTokenCmd(streams), newPublisherCmd(streams), newPublishCmd())
	root.AddCommand(newResolveCmd(), newCatalogCmd(), newFnCmd(), newBuildCmd())
	root.AddCommand(newSearchCmd(), newMirrorCmd())
	return root
}
