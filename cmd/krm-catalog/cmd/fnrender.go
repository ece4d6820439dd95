package cmd

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/krm-catalog/krm-catalog/fn"
	"github.com/krm-catalog/krm-catalog/fn/invoke"
	"github.com/krm-catalog/krm-catalog/fn/kpt"
)

func newFnRenderCmd() *cobra.Command {
	var (
		o          fnOptions
		resultsDir string
		output     string
		dryRun     bool
	)
	cmd := &cobra.Command{
		Use:   "render DIR [--catalog REF --trusted-catalog REF]...",
		Short: "Render a kpt package: run the pipelines of its Kptfiles",
		Long: `Render runs the pipeline of DIR/Kptfile as kpt fn render does: the pipelines of the
subpackages (directories with their own Kptfile) first, depth-first, each over its own
resources; then the package's own mutators over its resources and its subpackages' output,
then its validators. Resources marked config.kubernetes.io/local-config: "true" are not given
to functions. The package is written back only when every step succeeds.

A step names an image (run in a container), an exec (a local executable: --allow-exec), or
only a configPath: the config's apiVersion and kind are then resolved through the catalogs
(the built-in one, then --catalog in order, each named by --trusted-catalog), as fn run does.
With --runtime exec or starlark, an image that a trusted catalog lists with that runtime runs
that runtime instead of a container. kpt's starlark image with a StarlarkRun config runs
in-process.

Exit status: 0 on success, 1 when a function fails or reports an error result (nothing is
written), 2 for usage errors such as an untrusted catalog or a missing --allow-exec.`,
		Example: `  krm-catalog fn render app/ --catalog catalog.yaml --trusted-catalog catalog.yaml
  krm-catalog fn render app/ --output stdout`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runExit(fnRender(cmd.Context(), cmd, &o, args[0], resultsDir, output, dryRun))
		},
	}
	o.addRunFlags(cmd.Flags())
	// a Kptfile's exec steps are often line-based tools (sed, shell scripts) written against the
	// YAML kpt sends them
	o.explicitExecYAML = true
	cmd.Flags().StringVar(&resultsDir, "results-dir", "", "write the functions' results to DIR/results.yaml")
	cmd.Flags().StringVarP(&output, "output", "o", "", "stdout: print the rendered resources instead of writing DIR")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print the rendered resources (with their path annotations) instead of writing DIR; refused where writing would be")
	return cmd
}

func fnRender(ctx context.Context, cmd *cobra.Command, o *fnOptions, dir, resultsDir, output string, dryRun bool) error {
	switch output {
	case "", "stdout":
	default:
		return usageErr(fmt.Errorf("--output must be stdout, not %q (to render into another directory, copy the package first)", output))
	}
	stderr := cmd.ErrOrStderr()
	r, err := o.runner(stderr, "")
	if err != nil {
		return err
	}
	defer r.Close()
	res, renderErr := kpt.Render(ctx, dir, kpt.Options{Runner: r, Runtime: o.runtime})
	if renderErr != nil {
		if res != nil {
			// a render refused after its functions ran (a path leaving a subpackage) is recorded, so
			// that results.yaml does not say 0
			var runs []fn.FunctionResults
			runs, renderErr = fn.RecordFailure(res.Runs, "krm-catalog fn render", renderErr)
			if err := reportResults(stderr, resultsDir, runs, renderErr); err != nil {
				return err
			}
		}
		return renderErr
	}
	// --dry-run previews the write, refusals included; --output stdout is kpt's, for another tool
	dest := invoke.WriteBack
	switch {
	case dryRun:
		dest = invoke.DryRun
	case output == "stdout":
		dest = invoke.Print
	}
	show := dest != invoke.WriteBack
	// the output is planned before the results are written, so that a refused write is in them
	out, outErr := invoke.PackageOutput(res.Package, res.Items, dest)
	runs := res.Runs
	if outErr != nil {
		runs, outErr = fn.RejectedRun(runs, "krm-catalog fn render: write", outErr)
	}
	if err := reportResults(stderr, resultsDir, runs, outErr); err != nil {
		return err
	}
	if outErr != nil {
		return outErr
	}
	reportSkipped(stderr, res.Package.Skipped)
	if show {
		fmt.Fprintf(stderr, "Successfully executed %d function(s) in %d package(s)\n", len(res.Runs), res.Packages)
		_, err = cmd.OutOrStdout().Write(out.Output)
		return err
	}
	if err := out.Apply(); err != nil {
		return err
	}
	reportChanges(stderr, out.Changes)
	// kpt's summary, on stdout as kpt prints it, for scripts that read it
	_, err = fmt.Fprintf(cmd.OutOrStdout(), "Successfully executed %d function(s) in %d package(s)\n", len(res.Runs), res.Packages)
	return err
}

// reportSkipped says on stderr which files of a package were not read.
func reportSkipped(stderr io.Writer, skipped []string) {
	for _, s := range skipped {
		fmt.Fprintf(stderr, "krm-catalog: %s: skipped, not a Kubernetes resource\n", s)
	}
}

// reportChanges says on stderr which files a write changed.
func reportChanges(stderr io.Writer, changes []fn.FileChange) {
	for _, c := range changes {
		verb := "wrote"
		if c.Delete {
			verb = "deleted"
		}
		fmt.Fprintf(stderr, "%s %s\n", verb, c.Path)
	}
}
