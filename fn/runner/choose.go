package runner

// Choosing what runs for a resolution: the runtime among those a version offers, server mode.

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/fn"
	"github.com/krm-catalog/krm-catalog/fn/runtime/container"
	"github.com/krm-catalog/krm-catalog/resolver"
)

func useKey(res *resolver.Resolution) string {
	return res.Catalog + "\x00" + res.Function.ID() + "\x00" + res.Version.Name
}

// serverMode reports whether a resolved function runs as a spec v2 server: it declares v2, and the
// runner has it run more than once (or is told to always use servers).
func (r *Runner) serverMode(res *resolver.Resolution) bool {
	if !res.Version.SpecV2() || r.o.NoServerMode {
		return false
	}
	if r.o.ServerModeAlways {
		return true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.uses[useKey(res)] > 1
}

func describe(res *resolver.Resolution) string {
	return strings.TrimSpace(res.APIVersion + " " + res.Kind)
}

// withoutRuntimeField returns the config without KEP-2299's top-level runtime field: it tells the
// orchestrator how to run the function and is not part of the function's own configuration.
func withoutRuntimeField(cfg *yaml.RNode) *yaml.RNode {
	if cfg == nil || cfg.Field("runtime") == nil {
		return cfg
	}
	c := cfg.Copy()
	_ = c.PipeE(yaml.Clear("runtime"))
	return c
}

// function builds the runnable function for a resolution and says which runtime it chose.
func (r *Runner) function(ctx context.Context, res *resolver.Resolution, baseDir string) (fn.Function, string, error) {
	if e := res.Explicit; e != nil {
		f, err := r.explicit(ctx, e, baseDir)
		return f, e.Kind() + ", " + e.Source, err
	}
	kinds := res.Version.Runtime.Kinds()
	var tried []string
	for _, kind := range r.order(kinds) {
		var f fn.Function
		var err error
		switch kind {
		case "starlark":
			f, err = r.catalogStarlark(ctx, res)
		case "container":
			f, err = r.catalogContainer(ctx, res)
		case "exec":
			f, err = r.catalogExec(ctx, res)
		}
		if errors.Is(err, errUnavailable) {
			tried = append(tried, err.Error())
			continue
		}
		if err != nil {
			return nil, kind, err
		}
		mode := kind
		if r.serverMode(res) && kind != "starlark" {
			mode += ", server mode"
		}
		return f, mode + ", catalog " + res.Catalog, nil
	}
	if len(tried) == 0 {
		return nil, "", fmt.Errorf("the catalog offers runtimes %v and --runtime asks for %q", kinds, r.o.Runtime)
	}
	return nil, "", fmt.Errorf("no runtime of the catalog entry can run here: %s", strings.Join(tried, "; "))
}

// errUnavailable marks a runtime that cannot run on this machine, so that the next one is tried.
var errUnavailable = errors.New("unavailable")

// order is the runtime preference: the forced one, else Options.Prefer, by default starlark
// (in-process and sandboxed), then container (sandboxed), then exec (native, unconfined, though verified).
func (r *Runner) order(kinds []string) []string {
	has := map[string]bool{}
	for _, k := range kinds {
		has[k] = true
	}
	if r.o.Runtime != "" {
		if has[r.o.Runtime] {
			return []string{r.o.Runtime}
		}
		return nil
	}
	prefer := r.o.Prefer
	if prefer == nil {
		prefer = []string{"starlark", "container", "exec"}
	}
	var out []string
	for _, k := range prefer {
		if has[k] {
			out = append(out, k)
		}
	}
	return out
}

func (r *Runner) containerEngine() (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.engine != "" {
		return r.engine, nil
	}
	e, err := container.Engine(r.o.LookupEnv)
	if err != nil {
		return "", err
	}
	r.engine = e
	return e, nil
}
