package cmd

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"sigs.k8s.io/kustomize/kyaml/yaml"

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
		image      string
	)
	cmd := &cobra.Command{
		Use:   "run DIR|- (--fn-config FILE... | --image IMAGE [-- KEY=VALUE...]) [--catalog REF --trusted-catalog REF]...",
		Short: "Run functions over a package directory or standard input",
		Long: `Run resolves each function config (--fn-config, in order) to a runtime and runs the
functions as a pipeline over the resources of DIR, writing the result back into DIR; or over
standard input (a ResourceList, or a stream of resources) to standard output when DIR is -.

A config names its function by apiVersion and kind, found in the catalogs (the built-in one
first, then --catalog in order; each must be named by --trusted-catalog). A runtime on the
config itself (the config.kubernetes.io/function annotation, a top-level runtime field, or a
StarlarkRun) needs no catalog. Each config is checked against the function's openAPIV3Schema
before anything runs.

With --image, as kpt fn eval --image takes it: the image is looked up in the trusted catalogs
(a name without registry or path as fn render completes it, else with kpt's default prefix)
and its function runs however its catalog entry says (starlark, container or exec, as
--runtime chooses). Its functionConfig is --fn-config, or the ConfigMap kpt makes of the
arguments after --: metadata.name function-input, each KEY=VALUE in data as a string.

Exit status: 0 on success, 1 when a function fails or reports an error result (nothing is
written), 2 for usage errors such as an untrusted catalog.`,
		Example: `  krm-catalog fn run app/ --fn-config set-ns.yaml --catalog catalog.yaml --trusted-catalog catalog.yaml
  krm-catalog fn run app/ --image set-namespace:v0.4.1 --catalog catalog.yaml --trusted-catalog catalog.yaml -- namespace=prod
  kustomize build . | krm-catalog fn run - --fn-config labels.yaml --catalog oci://registry.example.com/catalogs/platform:v1 --trusted-catalog oci://registry.example.com/catalogs/platform:v1`,
		Args: func(cmd *cobra.Command, args []string) error {
			if dash := cmd.ArgsLenAtDash(); dash >= 0 {
				args = args[:dash]
			}
			return cobra.ExactArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			var fnArgs []string
			if dash := cmd.ArgsLenAtDash(); dash >= 0 {
				fnArgs = args[dash:]
			}
			switch {
			case len(fnArgs) > 0 && image == "":
				return usageErr(errors.New("arguments after -- make a function config for --image: give --image IMAGE"))
			case len(fnArgs) > 0 && len(configs) > 0:
				return usageErr(errFnArgsWithConfig)
			case image != "" && len(configs) > 1:
				return usageErr(errors.New("--image runs one function: give at most one --fn-config"))
			}
			return fnRun(cmd.Context(), cmd, &o, fnRunInput{dir: args[0], configFiles: configs, image: image, fnArgs: fnArgs}, resultsDir, dryRun)
		},
	}
	o.addRunFlags(cmd.Flags())
	cmd.Flags().StringArrayVar(&configs, "fn-config", nil, "file holding a function config (repeatable; documents run in order)")
	cmd.Flags().StringVar(&image, "image", "", "run the function a trusted catalog lists with this container image (kpt fn eval's --image); KEY=VALUE arguments after -- make its ConfigMap functionConfig")
	cmd.Flags().StringVar(&resultsDir, "results-dir", "", "write the functions' results to DIR/results.yaml")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print the resulting resources (with their path annotations) instead of writing DIR; refused where writing would be")
	return cmd
}

// fnRunInput is what fn run runs over, and what.
type fnRunInput struct {
	dir         string
	configFiles []string
	// image, with the arguments after --, is kpt fn eval's form
	image  string
	fnArgs []string
}

func fnRun(ctx context.Context, cmd *cobra.Command, o *fnOptions, in fnRunInput, resultsDir string, dryRun bool) error {
	o.quietCalls = true
	if in.image != "" {
		// the name kpt would complete, as fn serve completes Porch's
		o.shortImagePrefix = porchImagePrefix
	}
	r, err := o.runner(cmd.ErrOrStderr(), "")
	if err != nil {
		return err
	}
	defer r.Close()
	req := invoke.Request{ConfigFiles: in.configFiles, Dir: in.dir, DryRun: dryRun, ResultsDir: resultsDir}
	if in.dir == "-" {
		req.Dir, req.Stdin = "", cmd.InOrStdin()
	}
	var p invoke.Preparer = r
	if in.image != "" {
		if len(in.configFiles) == 0 {
			cfg, err := functionInput(in.fnArgs)
			if err != nil {
				return usageErr(err)
			}
			req.Configs = []*yaml.RNode{cfg}
		}
		res, err := resolveRunImage(ctx, r.Resolver(), in.image)
		if err != nil {
			return runExit(err)
		}
		p = imagePreparer{r: r, res: res}
	}
	rep, _ := invoke.Run(ctx, p, req)
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
