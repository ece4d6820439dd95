package cmd

import (
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/krm-catalog/krm-catalog/fn/kustomize"
	"github.com/krm-catalog/krm-catalog/fn/kustomize/composition"
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
			o.quietCalls = true
			p := &preparers{o: &o, stderr: cmd.ErrOrStderr(), baseDir: args[0], runners: map[string]*runner.Runner{}}
			defer p.Close()
			opts := kustomize.Options{Kustomize: k.flags(cmd.Flags(), o.env), Functions: p}
			rep, _ := kustomize.Run(cmd.Context(), args[0], opts, resultsDir)
			return printReport(cmd.OutOrStdout(), cmd.ErrOrStderr(), rep)
		},
	}
	o.addRunFlags(cmd.Flags())
	k.add(cmd.Flags())
	cmd.Flags().StringVar(&resultsDir, "results-dir", "", "write the functions' results to DIR/results.yaml")
	return cmd
}

// preparers hands the build one runner per list of catalogs (the command line's, then a
// kustomization's own), created on first use.
type preparers struct {
	o       *fnOptions
	stderr  io.Writer
	baseDir string
	runners map[string]*runner.Runner
}

// Declared records how a kustomization of the build spelled a local catalog, so that
// --trusted-catalog may name it so (kustomize.Declarations).
func (p *preparers) Declared(ref, written string) {
	if p.o.declared == nil {
		p.o.declared = map[string][]string{}
	}
	p.o.declared[ref] = append(p.o.declared[ref], written)
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
	kustomize.Flags
	reorder string
}

func (k *kustomizeFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&k.LoadRestrictor, "load-restrictor", kustomize.DefaultLoadRestrictor, "kustomize: if set to '"+kustomize.LoadRestrictionsNone+"', local kustomizations may load files from outside their root")
	fs.StringVar(&k.reorder, "reorder", kustomize.DefaultReorder, "kustomize: 'legacy' (Namespaces first, webhooks last, ...) or 'none' to keep the input order")
	fs.BoolVar(&k.EnablePlugins, "enable-alpha-plugins", false, "kustomize: enable kustomize's own plugins (functions with a config.kubernetes.io/function annotation)")
	fs.BoolVar(&k.EnableExec, "enable-exec", false, "kustomize: enable exec functions named by a config.kubernetes.io/function annotation")
	fs.BoolVar(&k.EnableHelm, "enable-helm", false, "kustomize: enable the Helm chart inflator generator")
	fs.StringVar(&k.HelmCommand, "helm-command", kustomize.DefaultHelmCommand, "kustomize: helm command (path to executable)")
	fs.StringArrayVar(&k.HelmAPIVersions, "helm-api-versions", nil, "kustomize: Kubernetes api versions used by Helm for Capabilities.APIVersions")
	fs.StringVar(&k.HelmKubeVersion, "helm-kube-version", "", "kustomize: Kubernetes version used by Helm for Capabilities.KubeVersion")
	fs.BoolVar(&k.HelmDebug, "helm-debug", false, "kustomize: debug output from the Helm chart inflator generator")
	fs.BoolVar(&k.AddManagedByLabel, "enable-managedby-label", false, "kustomize: add app.kubernetes.io/managed-by to every resource")
	fs.BoolVar(&k.Network, "network", false, "kustomize: network access for kustomize's container functions that declare it")
	fs.StringVar(&k.NetworkName, "network-name", kustomize.DefaultNetworkName, "kustomize: the docker network kustomize's container functions run in")
	fs.BoolVar(&k.AsCurrentUser, "as-current-user", false, "kustomize: run kustomize's container functions as the current user")
}

// flags returns the flags for kustomize (kustomize.Run checks them): --reorder counts only when
// given, as in kustomize build (otherwise the kustomization's sortOptions decide). env is --env,
// which kustomize's own functions get as the catalog's functions do.
func (k *kustomizeFlags) flags(fs *pflag.FlagSet, env []string) *kustomize.Flags {
	f := k.Flags
	f.Env = env
	if fs.Changed("reorder") {
		f.Reorder = &k.reorder
	}
	return &f
}
