package cmd

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/krm-catalog/krm-catalog/fn/invoke"
)

func newFnCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "fn",
		Short: "Run KRM functions resolved from catalogs",
	}
	cmd.AddCommand(newFnRunCmd(), newFnProxyCmd(), newFnRenderCmd(), newFnServeCmd(), newFnHealthCmd(), newFnOutdatedCmd(), newFnUpgradeCmd())
	return cmd
}

func newFnRunCmd() *cobra.Command {
	var (
		o          fnOptions
		configs    []string
		resultsDir string
		dryRun     bool
	)
	cmd := &cobra.Command{
		Use:   "run DIR|- --fn-config FILE... [--catalog REF --trusted-catalog REF]...",
		Short: "Run functions over a package directory or standard input",
		Long: `Run resolves each function config (--fn-config, in order) to a runtime and runs the
functions as a pipeline over the resources of DIR, writing the result back into DIR; or over
standard input (a ResourceList, or a stream of resources) to standard output when DIR is -.

A config names its function by apiVersion and kind, found in the catalogs (the built-in one
first, then --catalog in order; each must be named by --trusted-catalog). A runtime on the
config itself (the config.kubernetes.io/function annotation, a top-level runtime field, or a
StarlarkRun) needs no catalog. Each config is checked against the function's openAPIV3Schema
before anything runs.

Exit status: 0 on success, 1 when a function fails or reports an error result (nothing is
written), 2 for usage errors such as an untrusted catalog.`,
		Example: `  krm-catalog fn run app/ --fn-config set-ns.yaml --catalog catalog.yaml --trusted-catalog catalog.yaml
  kustomize build . | krm-catalog fn run - --fn-config labels.yaml --catalog oci://registry.example.com/catalogs/platform:v1 --trusted-catalog oci://registry.example.com/catalogs/platform:v1`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return fnRun(cmd.Context(), cmd, &o, args[0], configs, resultsDir, dryRun)
		},
	}
	o.addRunFlags(cmd.Flags())
	cmd.Flags().StringArrayVar(&configs, "fn-config", nil, "file holding a function config (repeatable; documents run in order)")
	cmd.Flags().StringVar(&resultsDir, "results-dir", "", "write the functions' results to DIR/results.yaml")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print the resulting resources (with their path annotations) instead of writing DIR; refused where writing would be")
	return cmd
}

func fnRun(ctx context.Context, cmd *cobra.Command, o *fnOptions, targetPath string, configFiles []string, resultsDir string, dryRun bool) error {
	o.quietCalls = true
	r, err := o.runner(cmd.ErrOrStderr(), "")
	if err != nil {
		return err
	}
	defer r.Close()
	req := invoke.Request{ConfigFiles: configFiles, Dir: targetPath, DryRun: dryRun, ResultsDir: resultsDir}
	if targetPath == "-" {
		req.Dir, req.Stdin = "", cmd.InOrStdin()
	}
	rep, _ := invoke.Run(ctx, r, req)
	if errors.Is(rep.Err, invoke.ErrNoFunction) {
		rep.Err = fmt.Errorf("%w: give --fn-config FILE", rep.Err)
	}
	return printReport(cmd.OutOrStdout(), cmd.ErrOrStderr(), rep)
}

// invokeExit makes input that could not be read a usage error.
func invokeExit(err error) error {
	var ie *invoke.InputError
	if errors.As(err, &ie) {
		return usageErr(err)
	}
	return err
}

func newFnProxyCmd() *cobra.Command {
	var (
		o         fnOptions
		evaluator string
		image     string
	)
	cmd := &cobra.Command{
		Use:   "proxy --catalog REF --trusted-catalog REF...",
		Short: "Be a KRM function that runs whatever function its functionConfig resolves to",
		Long: `Proxy is itself a KRM function (a ResourceList on standard input, the result on standard
output). It resolves the ResourceList's functionConfig through the catalogs and runs that
function, so that tools that run exec functions (kustomize, kpt) can use catalogs today.

The config.kubernetes.io/function annotation on the functionConfig is ignored: it is how the
tool started the proxy. A top-level runtime field is honoured.

With --evaluator HOST:PORT and --image IMAGE, the proxy hands the ResourceList to a running
` + "`krm-catalog fn serve`" + ` (or any server of Porch's evaluator API) instead, so that a kpt exec step
uses its warm functions.`,
		Example: `  # a kustomize transformer config, run by kustomize build --enable-alpha-plugins --enable-exec
  apiVersion: fn.example.com/v1
  kind: SetNamespace
  metadata:
    name: set-namespace
    annotations:
      config.kubernetes.io/function: |
        exec:
          path: krm-catalog
          args: [fn, proxy, --catalog, catalog.yaml, --trusted-catalog, catalog.yaml]
  namespace: prod`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if evaluator != "" || image != "" {
				if evaluator == "" || image == "" {
					return usageErr(errors.New("--evaluator and --image go together"))
				}
				return runExit(fnProxyRemote(cmd.Context(), cmd, evaluator, image, o.timeout))
			}
			return runExit(fnProxy(cmd.Context(), cmd, &o))
		},
	}
	o.addRunFlags(cmd.Flags())
	cmd.Flags().StringVar(&evaluator, "evaluator", "", "run the function on this function evaluator (HOST:PORT of krm-catalog fn serve, plaintext)")
	cmd.Flags().StringVar(&image, "image", "", "with --evaluator: the image that names the function")
	return cmd
}

func fnProxy(ctx context.Context, cmd *cobra.Command, o *fnOptions) error {
	data, err := invoke.ReadInput(cmd.InOrStdin())
	if err != nil {
		return invokeExit(err)
	}
	r, err := o.runner(cmd.ErrOrStderr(), "")
	if err != nil {
		return err
	}
	defer r.Close()
	out, runErr := invoke.Proxy(ctx, r, data)
	if out == nil {
		return invokeExit(runErr)
	}
	if _, err := cmd.OutOrStdout().Write(out); err != nil {
		return err
	}
	return runErr
}
