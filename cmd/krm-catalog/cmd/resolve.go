package cmd

import (
	"runtime"

	"github.com/spf13/cobra"

	"github.com/krm-catalog/krm-catalog/catalog"
	"github.com/krm-catalog/krm-catalog/resolver"
)

// resolved is what resolve prints.
type resolved struct {
	APIVersion              string           `json:"apiVersion" yaml:"apiVersion"`
	Kind                    string           `json:"kind" yaml:"kind"`
	Catalog                 string           `json:"catalog" yaml:"catalog"`
	CatalogName             string           `json:"catalogName,omitempty" yaml:"catalogName,omitempty"`
	Builtin                 bool             `json:"builtin,omitempty" yaml:"builtin,omitempty"`
	Publisher               string           `json:"publisher,omitempty" yaml:"publisher,omitempty"`
	ConformWithSpecVersions []string         `json:"conformWithSpecVersions,omitempty" yaml:"conformWithSpecVersions,omitempty"`
	Runtime                 resolvedRuntimes `json:"runtime" yaml:"runtime"`
}

type resolvedRuntimes struct {
	Container *catalog.ContainerRuntime `json:"container,omitempty" yaml:"container,omitempty"`
	Exec      *resolvedExec             `json:"exec,omitempty" yaml:"exec,omitempty"`
	Starlark  *catalog.StarlarkRuntime  `json:"starlark,omitempty" yaml:"starlark,omitempty"`
}

type resolvedExec struct {
	// Platform is the entry for this machine, when there is one.
	Platform  *catalog.ExecPlatform  `json:"platform,omitempty" yaml:"platform,omitempty"`
	Platforms []catalog.ExecPlatform `json:"platforms" yaml:"platforms"`
}

func newResolveCmd() *cobra.Command {
	var (
		o      fnOptions
		format *outputFormat
	)
	cmd := &cobra.Command{
		Use:   "resolve --catalog REF [--trusted-catalog REF]... APIVERSION KIND",
		Short: "Print the runtime a function config of APIVERSION and KIND resolves to",
		Long: `Resolve searches the built-in catalog and then the --catalog references in order, and prints
the first function whose group/version and kind match, with its runtimes: the container
image pinned by digest, the exec platforms with their sha256 (and the one for this machine),
the starlark script with its sha256. Each catalog must be named by --trusted-catalog; a
catalog the search does not reach is never fetched.`,
		Example: `  krm-catalog resolve --catalog examples/functions/catalog.yaml --trusted-catalog examples/functions/catalog.yaml fn.example.com/v1 SetNamespace`,
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := format.check(); err != nil {
				return err
			}
			r, err := o.resolver(&ociAdapter{opts: &o})
			if err != nil {
				return err
			}
			res, err := r.ResolveGVK(cmd.Context(), args[0], args[1])
			if err != nil {
				return runExit(err)
			}
			data, err := marshalOutput(describeResolution(res), format.value)
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(data)
			return err
		},
	}
	o.addResolveFlags(cmd.Flags())
	cmd.ValidArgsFunction = completeFunctionArgs(&o)
	format = addFormatFlag(cmd, "yaml", "json")
	return cmd
}

func describeResolution(res *resolver.Resolution) resolved {
	rt := res.Version.Runtime
	out := resolved{
		APIVersion: res.APIVersion, Kind: res.Kind,
		Catalog: res.Catalog, CatalogName: res.CatalogName, Builtin: res.Builtin,
		Publisher:               res.Function.Publisher,
		ConformWithSpecVersions: res.Version.ConformWithSpecVersions,
		Runtime:                 resolvedRuntimes{Starlark: rt.Starlark},
	}
	if rt.Container != nil {
		c := *rt.Container
		c.Image = c.PinnedImage()
		c.SHA256 = ""
		out.Runtime.Container = &c
	}
	if rt.Exec != nil {
		e := &resolvedExec{Platforms: rt.Exec.Platforms}
		if p, ok := rt.Exec.Platform(runtime.GOOS, runtime.GOARCH); ok {
			e.Platform = &p
		}
		out.Runtime.Exec = e
	}
	return out
}
