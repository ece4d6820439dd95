package diff

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/krm-catalog/krm-catalog/catalog"
)

// TestLagging compares the base catalog's entries, curated from example.com, with what example.com
// publishes now.
func TestLagging(t *testing.T) {
	t.Parallel()
	cat := load(t, base)
	v1 := func(id string) catalog.Runtime {
		for _, f := range cat.Functions {
			if f.ID() == id {
				return f.Versions[0].Runtime
			}
		}
		t.Fatalf("no %s", id)
		return catalog.Runtime{}
	}
	setNS, setLabels := v1("fn.example.com/SetNamespace"), v1("fn.example.com/SetLabels")
	moved := catalog.Runtime{Starlark: &catalog.StarlarkRuntime{URI: "https://example.com/set-labels.star", SHA256: strings.Repeat("4", 64)}}
	// the same runtime spelled another way: the digest in the image, platforms in another order
	respelled := catalog.Runtime{
		Container: &catalog.ContainerRuntime{Image: "registry.example.com/fns/set-namespace:v1.3.0@sha256:0dccf88826d80f10f13332fbc81c34af84fad81718c2266c151efaabf7922120"},
		Exec:      &catalog.ExecRuntime{Platforms: []catalog.ExecPlatform{setNS.Exec.Platforms[1], setNS.Exec.Platforms[0]}},
	}

	for _, tc := range []struct {
		name     string
		upstream map[string]Published
		want     []Change
	}{
		{"up to date", map[string]Published{
			"fn.example.com/SetNamespace": {"example.com", map[string][]catalog.Runtime{"v1": {respelled}}},
			"fn.example.com/SetLabels":    {"example.com", map[string][]catalog.Runtime{"v1": {moved, setLabels}}},
		}, nil},
		{"functions upstream does not hold are not compared", nil, nil},
		{"a newer version", map[string]Published{
			"fn.example.com/SetNamespace": {"example.com", map[string][]catalog.Runtime{"v1": {setNS}, "v2": {setNS}}},
		}, []Change{{Kind: CuratedLags, Function: "fn.example.com/SetNamespace", Version: "v2", New: "example.com publishes it",
			Reason: "lags the owner's version v2: the catalog does not list it"}}},
		{"a moved runtime", map[string]Published{
			"fn.example.com/SetLabels": {"example.com", map[string][]catalog.Runtime{"v1": {moved}}},
		}, []Change{{Kind: CuratedLags, Function: "fn.example.com/SetLabels", Version: "v1",
			Old:    "starlark https://example.com/set-labels.star@sha256:" + strings.Repeat("3", 64),
			New:    "starlark https://example.com/set-labels.star@sha256:" + strings.Repeat("4", 64),
			Reason: "lags the owner's runtime of version v1"}}},
		{"a withdrawn version", map[string]Published{
			"fn.example.com/SetLabels": {"example.com", map[string][]catalog.Runtime{"v2": {moved}}},
		}, []Change{
			{Kind: CuratedLags, Function: "fn.example.com/SetLabels", Version: "v1",
				Old:    "starlark https://example.com/set-labels.star@sha256:" + strings.Repeat("3", 64),
				Reason: "the owner no longer publishes version v1: the catalog's next version cannot list it"},
			{Kind: CuratedLags, Function: "fn.example.com/SetLabels", Version: "v2", New: "example.com publishes it",
				Reason: "lags the owner's version v2: the catalog does not list it"},
		}},
		{"an entry naming another publisher is a claim, not compared", map[string]Published{
			"fn.example.com/SetNamespace": {"other.example", map[string][]catalog.Runtime{"v2": {setNS}}},
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := Lagging(cat, tc.upstream)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("Lagging (-want +got):\n%s", d)
			}
			for _, c := range got {
				if c.Breaking {
					t.Errorf("%+v is marked breaking; a lag never is", c)
				}
			}
		})
	}
}
