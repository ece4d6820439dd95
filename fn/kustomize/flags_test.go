package kustomize

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
)

func TestFlagsDefaultsAreKustomizes(t *testing.T) {
	t.Parallel()
	if DefaultLoadRestrictor != types.LoadRestrictionsRootOnly.String() || LoadRestrictionsNone != types.LoadRestrictionsNone.String() {
		t.Errorf("load restrictors %q, %q; kustomize's are %q, %q", DefaultLoadRestrictor, LoadRestrictionsNone, types.LoadRestrictionsRootOnly, types.LoadRestrictionsNone)
	}
	defaults := &Flags{LoadRestrictor: DefaultLoadRestrictor, HelmCommand: DefaultHelmCommand, NetworkName: DefaultNetworkName}
	got, err := defaults.krustyOptions()
	if err != nil {
		t.Fatal(err)
	}
	want := krusty.MakeDefaultOptions()
	want.Reorder = krusty.ReorderOptionUnspecified            // no --reorder: the kustomization's sortOptions decide
	want.PluginConfig.HelmConfig.Command = DefaultHelmCommand // the flag's default; the library has none
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the default flags (-kustomize's defaults, +mapped):\n%s", diff)
	}
	var none *Flags
	if got, err := none.krustyOptions(); err != nil || !cmp.Equal(krusty.MakeDefaultOptions(), got) {
		t.Errorf("nil flags: %+v, %v; want kustomize's defaults", got, err)
	}
}

func TestFlagsMapping(t *testing.T) {
	t.Parallel()
	str := func(s string) *string { return &s }
	tests := []struct {
		name    string
		flags   Flags
		check   func(*krusty.Options) bool
		wantErr string
	}{
		{"load restrictor none", Flags{LoadRestrictor: LoadRestrictionsNone},
			func(o *krusty.Options) bool { return o.LoadRestrictions == types.LoadRestrictionsNone }, ""},
		{"bad load restrictor", Flags{LoadRestrictor: "LoadRestrictionsSome"}, nil, "--load-restrictor must be"},
		{"reorder none", Flags{LoadRestrictor: DefaultLoadRestrictor, Reorder: str("none")},
			func(o *krusty.Options) bool { return o.Reorder == krusty.ReorderOptionNone }, ""},
		{"reorder given empty", Flags{LoadRestrictor: DefaultLoadRestrictor, Reorder: str("")}, nil, "--reorder must be legacy or none"},
		{"plugins with exec", Flags{LoadRestrictor: DefaultLoadRestrictor, EnablePlugins: true, EnableExec: true, Env: []string{"A=1"}},
			func(o *krusty.Options) bool {
				return o.PluginConfig.FnpLoadingOptions.EnableExec && cmp.Equal(o.PluginConfig.FnpLoadingOptions.Env, []string{"A=1"})
			}, ""},
		{"helm without plugins", Flags{LoadRestrictor: DefaultLoadRestrictor, EnableHelm: true, HelmCommand: "h3", AddManagedByLabel: true},
			func(o *krusty.Options) bool {
				return o.PluginConfig.HelmConfig.Enabled && o.PluginConfig.HelmConfig.Command == "h3" && o.AddManagedbyLabel
			}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := tt.flags.krustyOptions()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tt.wantErr)
				}
				if cerr := tt.flags.Check(); cerr == nil || cerr.Error() != err.Error() {
					t.Errorf("Check: %v, want %v", cerr, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(got) {
				t.Errorf("options %+v", got)
			}
		})
	}
}
