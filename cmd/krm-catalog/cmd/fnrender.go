package cmd

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/krm-catalog/krm-catalog/fn/kpt"
)

func newFnRenderCmd() *cobra.Command {
	var (
		o          fnOptions
		resultsDir string
		output     string
		dryRun     bool
		pinImages  bool
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
written), 2 for usage errors such as an untrusted catalog or a missing --allow-exec.

With --pin-images, once the render has succeeded and been written, each step that names only a
configPath gets the image its catalog entry lists, with its digest, written into its Kptfile
(one line added, the rest of the file kept), so that kpt renders the package too. A step whose
function lists no container image is left as it is, with a warning naming it.`,
		Example: `  krm-catalog fn render app/ --catalog catalog.yaml --trusted-catalog catalog.yaml
  krm-catalog fn render app/ --output stdout`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			// as kpt, the package is the working directory unless named
			dir := "."
			if len(args) == 1 {
				dir = args[0]
			}
			if pinImages && (output != "" || dryRun) {
				return usageErr(errors.New("--pin-images writes the Kptfiles: not with --output or --dry-run"))
			}
			if err := fnRender(cmd.Context(), cmd, &o, dir, resultsDir, output, dryRun); err != nil || !pinImages {
				return err
			}
			return fnPinImages(cmd.Context(), cmd, &o, dir)
		},
	}
	o.addRunFlags(cmd.Flags())
	cmd.Flags().StringVar(&resultsDir, "results-dir", "", "write the functions' results to DIR/results.yaml")
	cmd.Flags().StringVarP(&output, "output", "o", "", "stdout: print the rendered resources as a ResourceList; unwrap: print them alone; a directory (which must not exist): write the rendered package there. The package itself is left alone")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print the rendered resources (with their path annotations) instead of writing DIR; refused where writing would be")
	cmd.Flags().BoolVar(&pinImages, "pin-images", false, "after a successful render, write into each step that names only a configPath the image@digest its function's catalog entry lists, so that kpt renders the package too")
	return cmd
}

// fnPinImages writes the by-kind steps' images into the Kptfiles and says what it did, each step
// kpt still cannot run as a warning (docs/kpt.md, Pinning images).
func fnPinImages(ctx context.Context, cmd *cobra.Command, o *fnOptions, dir string) error {
	res, err := o.resolver(&ociAdapter{opts: o})
	if err != nil {
		return err
	}
	steps, err := kpt.PinImages(ctx, res, dir)
	w := cmd.ErrOrStderr()
	for _, s := range steps {
		switch {
		case s.Image == "":
			fmt.Fprintf(w, "krm-catalog: warning: %s: step %s: %s\n", s.Kptfile, s.Step, s.Problem)
		case s.Problem != "":
			fmt.Fprintf(w, "krm-catalog: %s: step %s: pinned %s (warning: %s)\n", s.Kptfile, s.Step, s.Image, s.Problem)
		default:
			fmt.Fprintf(w, "krm-catalog: %s: step %s: pinned %s\n", s.Kptfile, s.Step, s.Image)
		}
	}
	return runExit(err)
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
