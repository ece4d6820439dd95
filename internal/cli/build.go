package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"

	"github.com/krm-catalog/krm-catalog/fn/composition"
	"github.com/krm-catalog/krm-catalog/fn/kustomize"
	"github.com/krm-catalog/krm-catalog/fn/runner"
)

func newBuildCmd() *cobra.Command {
	var (
		o          fnOptions
		k          kustomizeFlags
		resultsDir string
	)
	cmd := &cobra.Command{
		Use:   "build DIR",
		Short: "Build a kustomization (with catalogs, KEP-2906) or a composition.yaml (KEP-2299) to YAML",
		Long: `Build prints the resources a directory builds to.

With a kustomization.yaml (Kustomization or Component), it builds it as kustomize build v5.8.2
does, with the same flags, and the same output byte for byte. In addition, any kustomization of
the tree may list catalogs (KEP-2906): a transformers, generators or validators entry that is not a
kustomize built-in and names no runtime (no config.kubernetes.io/function annotation) is resolved
through --catalog, then that kustomization's own catalogs (relative to its file), each of which must
be named by --trusted-catalog exactly as the error shows it; krm-catalog runs it. A Composition may
be named in resources (it generates) or transformers.

With a composition.yaml, it consolidates the Composition (transformersFrom imports, prepended or
appended; transformerOverrides; its own transformers; transformerOrder) and runs it from no
resources. Transformers without apiVersion, or with apiVersion builtin, and inline Kustomizations
run through the kustomize API library; the others are KRM functions resolved from their runtime
field or config.kubernetes.io/function annotation, else from the catalogs (--catalog, then the
Composition's catalogs field).`,
		Example: `  krm-catalog build app/ --trusted-catalog app/catalog.yaml
  krm-catalog build app/ --catalog https://example.com/catalog.yaml --trusted-catalog https://example.com/catalog.yaml`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			if hasComposition(dir) {
				return buildComposition(cmd, &o, dir, resultsDir)
			}
			kopts, err := k.options(cmd.Flags(), o.env)
			if err != nil {
				return &exitError{code: ExitUsage, err: err}
			}
			stderr := cmd.ErrOrStderr()
			p := &preparers{o: &o, stderr: stderr, baseDir: dir, runners: map[string]*runner.Runner{}}
			defer p.Close()
			out, runs, err := kustomize.Build(cmd.Context(), dir, kustomize.Options{Krusty: kopts, Functions: p})
			if rerr := reportResults(stderr, resultsDir, runs, err); rerr != nil {
				return rerr
			}
			if err != nil {
				if errors.Is(err, kustomize.ErrInvalid) {
					return &exitError{code: ExitUsage, err: err}
				}
				return runExit(err)
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		},
	}
	o.addRunFlags(cmd.Flags())
	k.add(cmd.Flags())
	cmd.Flags().StringVar(&resultsDir, "results-dir", "", "write the functions' results to DIR/results.yaml")
	return cmd
}

// hasComposition reports a directory holding a composition.yaml (and no kustomization file: with
// both, the composition loader reports KEP-2299's error).
func hasComposition(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, composition.FileName))
	return err == nil
}

func buildComposition(cmd *cobra.Command, o *fnOptions, dir, resultsDir string) error {
	comp, err := composition.Load(dir)
	if err != nil {
		return &exitError{code: ExitUsage, err: err}
	}
	o.catalogs = append(o.catalogs, comp.Catalogs...)
	stderr := cmd.ErrOrStderr()
	r, err := o.runner(stderr, dir)
	if err != nil {
		return err
	}
	defer r.Close()
	items, runs, runErr := comp.Run(cmd.Context(), r)
	if err := reportResults(stderr, resultsDir, runs, runErr); err != nil {
		return err
	}
	if runErr != nil {
		return runExit(runErr)
	}
	if len(items) == 0 {
		return runExit(errors.New("the composition produced no resources"))
	}
	data, err := composition.Format(items)
	if err != nil {
		return err
	}
	_, err = cmd.OutOrStdout().Write(data)
	return err
}

// preparers hands the build one runner per list of catalogs (the command line's, then a
// kustomization's own), created on first use.
type preparers struct {
	o       *fnOptions
	stderr  io.Writer
	baseDir string
	runners map[string]*runner.Runner
}

func (p *preparers) For(catalogs []string) (composition.StepPreparer, error) {
	key := strings.Join(catalogs, "\x00")
	if r, ok := p.runners[key]; ok {
		return r, nil
	}
	o := *p.o
	o.catalogs = append(append([]string(nil), p.o.catalogs...), catalogs...)
	r, err := o.runner(p.stderr, p.baseDir)
	if err != nil {
		return nil, err
	}
	p.runners[key] = r
	return r, nil
}

// Close stops the function servers of every runner.
func (p *preparers) Close() {
	for _, r := range p.runners {
		_ = r.Close()
	}
}

// kustomizeFlags are kustomize build's own flags, for what kustomize itself runs (its plugins, helm).
type kustomizeFlags struct {
	loadRestrictor, reorder       string
	enablePlugins, enableExec     bool
	enableHelm, helmDebug         bool
	helmCommand, helmKubeVersion  string
	helmAPIVersions               []string
	managedBy, network, asCurrent bool
	networkName                   string
}

func (k *kustomizeFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&k.loadRestrictor, "load-restrictor", types.LoadRestrictionsRootOnly.String(), "kustomize: if set to 'LoadRestrictionsNone', local kustomizations may load files from outside their root")
	fs.StringVar(&k.reorder, "reorder", string(krusty.ReorderOptionLegacy), "kustomize: 'legacy' (Namespaces first, webhooks last, ...) or 'none' to keep the input order")
	fs.BoolVar(&k.enablePlugins, "enable-alpha-plugins", false, "kustomize: enable kustomize's own plugins (functions with a config.kubernetes.io/function annotation)")
	fs.BoolVar(&k.enableExec, "enable-exec", false, "kustomize: enable exec functions named by a config.kubernetes.io/function annotation")
	fs.BoolVar(&k.enableHelm, "enable-helm", false, "kustomize: enable the Helm chart inflator generator")
	fs.StringVar(&k.helmCommand, "helm-command", "helm", "kustomize: helm command (path to executable)")
	fs.StringArrayVar(&k.helmAPIVersions, "helm-api-versions", nil, "kustomize: Kubernetes api versions used by Helm for Capabilities.APIVersions")
	fs.StringVar(&k.helmKubeVersion, "helm-kube-version", "", "kustomize: Kubernetes version used by Helm for Capabilities.KubeVersion")
	fs.BoolVar(&k.helmDebug, "helm-debug", false, "kustomize: debug output from the Helm chart inflator generator")
	fs.BoolVar(&k.managedBy, "enable-managedby-label", false, "kustomize: add app.kubernetes.io/managed-by to every resource")
	fs.BoolVar(&k.network, "network", false, "kustomize: network access for kustomize's container functions that declare it")
	fs.StringVar(&k.networkName, "network-name", "bridge", "kustomize: the docker network kustomize's container functions run in")
	fs.BoolVar(&k.asCurrent, "as-current-user", false, "kustomize: run kustomize's container functions as the current user")
}

// options maps the flags to krusty's options as kustomize build v5.8.2 does; env is --env, which
// kustomize's own functions get as the catalog's functions do.
func (k *kustomizeFlags) options(fs *pflag.FlagSet, env []string) (*krusty.Options, error) {
	opts := krusty.MakeDefaultOptions()
	switch k.loadRestrictor {
	case types.LoadRestrictionsRootOnly.String():
		opts.LoadRestrictions = types.LoadRestrictionsRootOnly
	case types.LoadRestrictionsNone.String():
		opts.LoadRestrictions = types.LoadRestrictionsNone
	default:
		return nil, fmt.Errorf("--load-restrictor must be %s or %s, not %q", types.LoadRestrictionsRootOnly, types.LoadRestrictionsNone, k.loadRestrictor)
	}
	opts.Reorder = krusty.ReorderOptionUnspecified
	if fs.Changed("reorder") {
		switch k.reorder {
		case string(krusty.ReorderOptionLegacy), string(krusty.ReorderOptionNone):
			opts.Reorder = krusty.ReorderOption(k.reorder)
		default:
			return nil, fmt.Errorf("--reorder must be legacy or none, not %q", k.reorder)
		}
	}
	if k.enablePlugins {
		c := types.EnabledPluginConfig(types.BploUseStaticallyLinked)
		c.FnpLoadingOptions = types.FnPluginLoadingOptions{
			EnableExec: k.enableExec, Network: k.network, NetworkName: k.networkName,
			Env: env, AsCurrentUser: k.asCurrent,
		}
		opts.PluginConfig = c
	} else {
		opts.PluginConfig.HelmConfig.Enabled = k.enableHelm
	}
	opts.PluginConfig.HelmConfig.Command = k.helmCommand
	opts.PluginConfig.HelmConfig.ApiVersions = k.helmAPIVersions
	opts.PluginConfig.HelmConfig.KubeVersion = k.helmKubeVersion
	opts.PluginConfig.HelmConfig.Debug = k.helmDebug
	opts.AddManagedbyLabel = k.managedBy
	return opts, nil
}
