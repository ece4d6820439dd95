package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/spf13/cobra"

	"github.com/krm-catalog/krm-catalog/fn"
	"github.com/krm-catalog/krm-catalog/fn/invoke"
	"github.com/krm-catalog/krm-catalog/fn/kpt"
	"github.com/krm-catalog/krm-catalog/resolver"
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
			return runExit(fnRender(cmd.Context(), cmd, &o, dir, resultsDir, output, dryRun))
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
		return &exitError{code: ExitUsage, err: fmt.Errorf("--output and --dry-run: choose one")}
	}
	stderr := cmd.ErrOrStderr()
	r, err := o.runner(stderr, "")
	if err != nil {
		return err
	}
	defer r.Close()
	res, renderErr := kpt.Render(ctx, dir, kpt.Options{Runner: r, Tags: &ociAdapter{opts: o}})
	if renderErr != nil {
		if res != nil {
			// a render refused after its functions ran (a path leaving a subpackage) is recorded, so
			// that results.yaml does not say 0
			var runs []fn.FunctionResults
			runs, renderErr = fn.RecordFailure(res.Runs, "krm-catalog fn render", renderErr)
			if err := reportResults(stderr, resultsDir, runs, renderErr); err != nil {
				return err
			}
			// each step that ran or failed to start, by the version it resolved to, as kpt prints it
			for _, st := range append(res.Status.MutationSteps, res.Status.ValidationSteps...) {
				if st.Image != "" {
					fmt.Fprintf(stderr, "krm-catalog: step %s: exit code %d\n", st.Image, st.ExitCode)
				}
			}
			// a catalog the user did not trust is a refusal before anything is decided: nothing at
			// all is written
			refused := errors.Is(renderErr, resolver.ErrUntrustedCatalog) || errors.Is(renderErr, resolver.ErrInvalidReference)
			if output == "" && !dryRun && !refused {
				// the failure is recorded in the root Kptfile's status, as kpt records it; no
				// other file changes
				if err := writeStatus(res, renderErr); err != nil {
					fmt.Fprintf(stderr, "krm-catalog: %v\n", err)
				}
			}
		}
		return renderErr
	}
	if output != "" {
		return renderOut(cmd, res, resultsDir, output)
	}
	// --dry-run previews the write, refusals included
	dest := invoke.WriteBack
	if dryRun {
		dest = invoke.DryRun
	}
	show := dest != invoke.WriteBack
	items := res.Items
	if dest == invoke.WriteBack {
		if items, err = res.StatusItems(nil); err != nil {
			return err
		}
	}
	// the output is planned before the results are written, so that a refused write is in them
	out, outErr := invoke.PackageOutput(res.Package, items, dest)
	runs := res.Runs
	if outErr != nil {
		runs, outErr = fn.RejectedRun(runs, "krm-catalog fn render: write", outErr)
	}
	if err := reportResults(stderr, resultsDir, runs, outErr); err != nil {
		return err
	}
	if outErr != nil {
		if dest == invoke.WriteBack {
			// the last step's output is what cannot be written: kpt records that step as failed
			res.Status.RejectLast(outErr)
			if err := writeStatus(res, outErr); err != nil {
				fmt.Fprintf(stderr, "krm-catalog: %v\n", err)
			}
		}
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

// renderOut puts the rendered package where --output says, as kpt does: stdout (a ResourceList),
// unwrap (the resources alone) or a new directory; the package and its Kptfile status are left
// alone.
func renderOut(cmd *cobra.Command, res *kpt.Result, resultsDir, output string) error {
	stderr := cmd.ErrOrStderr()
	// printed after the results, as kpt prints it
	var b bytes.Buffer
	err := res.Output(&b, output)
	if err == nil {
		defer cmd.OutOrStdout().Write(b.Bytes())
	}
	runs := res.Runs
	if err != nil && !errors.Is(err, kpt.ErrOutputExists) {
		runs, err = fn.RejectedRun(runs, "krm-catalog fn render: write", err)
	}
	if rerr := reportResults(stderr, resultsDir, runs, err); rerr != nil {
		return rerr
	}
	if err != nil {
		return err
	}
	reportSkipped(stderr, res.Package.Skipped)
	fmt.Fprintf(stderr, "Successfully executed %d function(s) in %d package(s)\n", len(res.Runs), res.Packages)
	return nil
}

// writeStatus writes the status of a failed render into the root Kptfile and changes no other
// file, unless the package asks for what rendered to be saved (kpt.dev/save-on-render-failure).
func writeStatus(res *kpt.Result, renderErr error) error {
	items, err := res.StatusItems(renderErr)
	if err != nil {
		return err
	}
	changes, err := res.Package.Plan(items)
	if err != nil {
		return fmt.Errorf("write the Kptfile status: %w", err)
	}
	if !res.Saved {
		changes = slices.DeleteFunc(changes, func(c fn.FileChange) bool { return c.Path != kpt.KptfileName })
	}
	return res.Package.Apply(changes)
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
