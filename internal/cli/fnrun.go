package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/fn"
	"github.com/krm-catalog/krm-catalog/fn/runner"
	"github.com/krm-catalog/krm-catalog/resolver"
)

func newFnCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "fn",
		Short: "Run KRM functions resolved from catalogs",
	}
	cmd.AddCommand(newFnRunCmd(), newFnProxyCmd(), newFnRenderCmd())
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
			return runExit(fnRun(cmd.Context(), cmd, &o, args[0], configs, resultsDir, dryRun))
		},
	}
	o.addRunFlags(cmd.Flags())
	cmd.Flags().StringArrayVar(&configs, "fn-config", nil, "file holding a function config (repeatable; documents run in order)")
	cmd.Flags().StringVar(&resultsDir, "results-dir", "", "write the functions' results to DIR/results.yaml")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print the resulting resources (with their path annotations) instead of writing DIR")
	return cmd
}

// readConfigs reads function configs: every document of every file, in order. local lists the
// files whose documents are all local config (config.kubernetes.io/local-config: "true"): only those
// are left out of a package they live in; any other config file there is one of its resources.
func readConfigs(files []string) (configs []*yaml.RNode, local []string, err error) {
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, nil, &exitError{code: ExitUsage, err: fmt.Errorf("--fn-config: %w", err)}
		}
		rl, _, err := fn.DecodeInput(data)
		if err != nil {
			return nil, nil, &exitError{code: ExitUsage, err: fmt.Errorf("--fn-config %s: %w", f, err)}
		}
		allLocal := len(rl.Items) > 0
		for _, it := range rl.Items {
			allLocal = allLocal && fn.IsLocalConfig(it)
		}
		if allLocal {
			local = append(local, f)
		}
		configs = append(configs, rl.Items...)
	}
	return configs, local, nil
}

// target is what fn run works on: a package directory, or standard input.
type target struct {
	items []*yaml.RNode
	pkg   *fn.Package
	in    fn.Input
	list  *fn.ResourceList
	err   error
}

func (t target) skipped() []string {
	if t.pkg == nil {
		return nil
	}
	return t.pkg.Skipped
}

func readTarget(cmd *cobra.Command, path string, localConfigs []string) target {
	if path == "-" {
		data, err := readStdin(cmd)
		if err != nil {
			return target{err: err}
		}
		list, in, err := fn.DecodeInput(data)
		if err != nil {
			return target{err: &exitError{code: ExitUsage, err: fmt.Errorf("standard input: %w", err)}}
		}
		return target{items: list.Items, in: in, list: list}
	}
	pkg, items, err := fn.ReadPackage(path, localConfigs...)
	if err != nil {
		return target{err: &exitError{code: ExitUsage, err: err}}
	}
	return target{items: items, pkg: pkg}
}

func fnRun(ctx context.Context, cmd *cobra.Command, o *fnOptions, targetPath string, configFiles []string, resultsDir string, dryRun bool) error {
	configs, localConfigs, err := readConfigs(configFiles)
	if err != nil {
		return err
	}
	stderr := cmd.ErrOrStderr()
	r, err := o.runner(stderr, "")
	if err != nil {
		return err
	}
	defer r.Close()

	// the input is read and parsed while the functions are resolved and fetched
	read := make(chan target, 1)
	go func() { read <- readTarget(cmd, targetPath, localConfigs) }()
	var got target
	if len(configs) == 0 {
		got = <-read
		if got.err == nil && got.list != nil && got.list.FunctionConfig != nil {
			configs = []*yaml.RNode{got.list.FunctionConfig}
		}
		read <- got
	}
	if len(configs) == 0 {
		if got.err != nil {
			return got.err
		}
		return &exitError{code: ExitUsage, err: errors.New("no function to run: give --fn-config FILE")}
	}
	steps, invalid, prepErr := r.Prepare(ctx, configs)
	got = <-read
	if got.err != nil {
		return got.err
	}
	for _, s := range got.skipped() {
		fmt.Fprintf(stderr, "krm-catalog: %s: skipped, not a Kubernetes resource\n", s)
	}
	if prepErr != nil {
		if err := reportResults(stderr, resultsDir, invalid); err != nil {
			return err
		}
		return prepErr
	}
	out, runs, runErr := fn.Run(ctx, steps, got.items)
	// what would be written is worked out before the results are reported, so that a run rejected
	// here (a path the write rule refuses, two resources at one path and index) is in results.yaml
	var data []byte
	var changes []fn.FileChange
	if runErr == nil {
		data, changes, runErr = fnRunOutput(got, targetPath == "-", dryRun, out, runs)
		if runErr != nil {
			runs = fn.RejectedRun(runs, "krm-catalog fn run: write", runErr)
		}
	}
	if err := reportResults(stderr, resultsDir, runs); err != nil {
		return err
	}
	if runErr != nil {
		return runErr
	}
	if data != nil {
		_, err := cmd.OutOrStdout().Write(data)
		return err
	}
	if err := got.pkg.Apply(changes); err != nil {
		return err
	}
	reportChanges(stderr, changes)
	return nil
}

// fnRunOutput encodes what fn run prints (standard input's shape, or a --dry-run list), or plans
// the changes to the package directory.
func fnRunOutput(got target, stdin, dryRun bool, out []*yaml.RNode, runs []fn.FunctionResults) ([]byte, []fn.FileChange, error) {
	switch {
	case stdin:
		res := &fn.ResourceList{APIVersion: got.list.APIVersion, Items: out, FunctionConfig: got.list.FunctionConfig}
		for _, run := range runs {
			res.Results = append(res.Results, run.Results...)
		}
		data, err := res.EncodeOutput(got.in)
		return data, nil, err
	case dryRun:
		data, err := (&fn.ResourceList{Items: out}).Encode(fn.YAML)
		return data, nil, err
	}
	changes, err := got.pkg.Plan(out)
	return nil, changes, err
}

func newFnProxyCmd() *cobra.Command {
	var o fnOptions
	cmd := &cobra.Command{
		Use:   "proxy --catalog REF --trusted-catalog REF...",
		Short: "Be a KRM function that runs whatever function its functionConfig resolves to",
		Long: `Proxy is itself a KRM function (a ResourceList on standard input, the result on standard
output). It resolves the ResourceList's functionConfig through the catalogs and runs that
function, so that tools that run exec functions (kustomize, kpt) can use catalogs today.

The config.kubernetes.io/function annotation on the functionConfig is ignored: it is how the
tool started the proxy. A top-level runtime field is honoured.`,
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
			return runExit(fnProxy(cmd.Context(), cmd, &o))
		},
	}
	o.addRunFlags(cmd.Flags())
	return cmd
}

func fnProxy(ctx context.Context, cmd *cobra.Command, o *fnOptions) error {
	data, err := readStdin(cmd)
	if err != nil {
		return err
	}
	list, format, err := fn.DecodeResourceList(data)
	if err != nil {
		return &exitError{code: ExitUsage, err: err}
	}
	if list.FunctionConfig == nil {
		return &exitError{code: ExitUsage, err: errors.New("the ResourceList has no functionConfig to resolve")}
	}
	cfg := list.FunctionConfig.Copy()
	for _, k := range []string{resolver.FunctionAnnotation, "config.k8s.io/function"} {
		if err := cfg.PipeE(yaml.ClearAnnotation(k)); err != nil {
			return err
		}
	}
	stderr := cmd.ErrOrStderr()
	r, err := o.runner(stderr, "")
	if err != nil {
		return err
	}
	defer r.Close()
	out, runs, runErr := r.Run(ctx, []*yaml.RNode{cfg}, list.Items)
	res := &fn.ResourceList{APIVersion: list.APIVersion, Items: out, FunctionConfig: list.FunctionConfig}
	if runErr != nil {
		res.Items = list.Items
	}
	for _, run := range runs {
		res.Results = append(res.Results, run.Results...)
	}
	if runErr != nil && len(res.Results) == 0 && !errors.Is(runErr, runner.ErrInvalidConfig) {
		res.Results = append(res.Results, fn.Result{Message: runErr.Error(), Severity: fn.SeverityError})
	}
	enc, err := res.Encode(format)
	if err != nil {
		return err
	}
	if _, err := io.Copy(cmd.OutOrStdout(), bytes.NewReader(enc)); err != nil {
		return err
	}
	return runErr
}
