package kustomize

import (
	"fmt"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
)

// Flags are `kustomize build`'s own flags (v5.8.2), for what kustomize itself runs: its plugins,
// helm, the load restrictions and the output order. The command line fills them; Build maps them
// to the kustomize API's options, so that no caller needs that API.
type Flags struct {
	// LoadRestrictor is DefaultLoadRestrictor or LoadRestrictionsNone.
	LoadRestrictor string
	// Reorder is --reorder when it was given (DefaultReorder or "none"); nil leaves the order to
	// the kustomization's sortOptions, as kustomize does when the flag is not given.
	Reorder                                   *string
	EnablePlugins, EnableExec                 bool
	EnableHelm, HelmDebug                     bool
	HelmCommand, HelmKubeVersion              string
	HelmAPIVersions, Env                      []string
	AddManagedByLabel, Network, AsCurrentUser bool
	NetworkName                               string
}

// The flags' defaults, as kustomize build has them.
const (
	DefaultLoadRestrictor = "LoadRestrictionsRootOnly"
	LoadRestrictionsNone  = "LoadRestrictionsNone"
	DefaultReorder        = string(krusty.ReorderOptionLegacy)
	DefaultHelmCommand    = "helm"
	DefaultNetworkName    = "bridge"
)

// Check reports flags that kustomize build would refuse, naming the flag.
func (f *Flags) Check() error {
	_, err := f.krustyOptions()
	return err
}

// krustyOptions maps the flags to the kustomize API's options as kustomize build v5.8.2 does; nil
// flags are the defaults.
func (f *Flags) krustyOptions() (*krusty.Options, error) {
	opts := krusty.MakeDefaultOptions()
	if f == nil {
		return opts, nil
	}
	switch f.LoadRestrictor {
	case types.LoadRestrictionsRootOnly.String():
		opts.LoadRestrictions = types.LoadRestrictionsRootOnly
	case types.LoadRestrictionsNone.String():
		opts.LoadRestrictions = types.LoadRestrictionsNone
	default:
		return nil, fmt.Errorf("--load-restrictor must be %s or %s, not %q", types.LoadRestrictionsRootOnly, types.LoadRestrictionsNone, f.LoadRestrictor)
	}
	opts.Reorder = krusty.ReorderOptionUnspecified
	if f.Reorder != nil {
		switch *f.Reorder {
		case string(krusty.ReorderOptionLegacy), string(krusty.ReorderOptionNone):
			opts.Reorder = krusty.ReorderOption(*f.Reorder)
		default:
			return nil, fmt.Errorf("--reorder must be legacy or none, not %q", *f.Reorder)
		}
	}
	if f.EnablePlugins {
		c := types.EnabledPluginConfig(types.BploUseStaticallyLinked)
		c.FnpLoadingOptions = types.FnPluginLoadingOptions{
			EnableExec: f.EnableExec, Network: f.Network, NetworkName: f.NetworkName,
			Env: f.Env, AsCurrentUser: f.AsCurrentUser,
		}
		opts.PluginConfig = c
	} else {
		opts.PluginConfig.HelmConfig.Enabled = f.EnableHelm
	}
	opts.PluginConfig.HelmConfig.Command = f.HelmCommand
	opts.PluginConfig.HelmConfig.ApiVersions = f.HelmAPIVersions
	opts.PluginConfig.HelmConfig.KubeVersion = f.HelmKubeVersion
	opts.PluginConfig.HelmConfig.Debug = f.HelmDebug
	opts.AddManagedbyLabel = f.AddManagedByLabel
	return opts, nil
}
