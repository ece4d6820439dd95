package cmd

import (
	"context"
	"errors"

	"github.com/spf13/cobra"

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
		Use:   "render [DIR] [--catalog REF --trusted-catalog REF]...",
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
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			// as kpt, the package is the working directory unless named
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			return fnRender(cmd.Context(), cmd, &o, dir, resultsDir, output, dryRun)
		},
	}
	o.addRunFlags(cmd.Flags())
	cmd.Flags().StringVar(&resultsDir, "results-dir", "", "write the functions' results to DIR/results.yaml")
	cmd.Flags().StringVarP(&output, "output", "o", "", "stdout: print the rendered resources as a ResourceList; unwrap: print them alone; a directory (which must not exist): write the rendered package there. The package itself is left alone")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print the rendered resources (with their path annotations) instead of writing DIR; refused where writing would be")
	return cmd
}

func fnRender(ctx context.Context, cmd *cobra.Command, o *fnOptions, dir, resultsDir, output string, dryRun bool) error {
	if output != "" && dryRun {
		return usageErr(errors.New("--output and --dry-run: choose one"))
	}
	o.quietCalls = true
	r, err := o.runner(cmd.ErrOrStderr(), "")
	if err != nil {
		return err
	}
	defer r.Close()
	rep, _ := kpt.Run(ctx, kpt.Request{
		Dir:        dir,
		Options:    kpt.Options{Runner: r, Tags: &ociAdapter{opts: o}, MemoDir: o.cache().Render(), Force: o.noSkip},
		ResultsDir: resultsDir,
		Output:     output,
		DryRun:     dryRun,
	})
	return printReport(cmd.OutOrStdout(), cmd.ErrOrStderr(), rep)
}
