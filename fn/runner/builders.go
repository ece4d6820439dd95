package runner

// Building the fn.Function of each runtime, with the permissions the user granted.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/krm-catalog/krm-catalog/fn"
	"github.com/krm-catalog/krm-catalog/fn/internal/fetch"
	"github.com/krm-catalog/krm-catalog/fn/runtime/container"
	"github.com/krm-catalog/krm-catalog/fn/runtime/exec"
	"github.com/krm-catalog/krm-catalog/fn/runtime/starlark"
	"github.com/krm-catalog/krm-catalog/resolver"
)

func (r *Runner) catalogContainer(_ context.Context, res *resolver.Resolution) (fn.Function, error) {
	c := res.Version.Runtime.Container
	image := c.PinnedImage()
	if c.Digest() == "" {
		const why = "the catalog does not pin image %s by digest; krm-catalog runs catalog images by digest only"
		if r.o.Runtime == "" && len(res.Version.Runtime.Kinds()) > 1 {
			// the image only names the function for what resolves by image (fn serve, Porch);
			// another runtime of the entry runs it
			return nil, fmt.Errorf("container: %w: "+why, errUnavailable, c.Image)
		}
		return nil, fmt.Errorf("%w: "+why, fn.ErrNotAllowed, c.Image)
	}
	cfg := container.Config{Image: image}
	if c.RequireNetwork {
		if !r.o.AllowNetwork {
			return nil, fmt.Errorf("%w: the function requires network access; grant it with --allow-network", fn.ErrNotAllowed)
		}
		cfg.Network = true
	}
	if c.RequireStorageMount {
		if len(r.o.Mounts) == 0 {
			return nil, fmt.Errorf("%w: the function requires a storage mount; grant one with --mount type=bind,source=DIR,target=PATH", fn.ErrNotAllowed)
		}
		for _, m := range r.o.Mounts {
			if err := container.MountAllowed(m); err != nil {
				return nil, err
			}
		}
		cfg.Mounts = r.o.Mounts
	}
	engine, err := r.containerEngine()
	if err != nil {
		if r.o.Runtime == "" && errors.Is(err, container.ErrNoEngine) {
			return nil, fmt.Errorf("container: %w: %w", errUnavailable, err)
		}
		return nil, err
	}
	cfg.Engine = engine
	return r.containerFunction(cfg, r.serverMode(res), r.wire(res)), nil
}

func (r *Runner) containerFunction(cfg container.Config, server bool, format fn.Format) fn.Function {
	cfg.Env = append(append([]string(nil), cfg.Env...), r.o.Env...)
	cfg.Memory, cfg.PidsLimit = r.o.ContainerMemory, r.o.ContainerPidsLimit
	if server {
		key := fmt.Sprintf("container\x00%s\x00%t\x00%q", cfg.Image, cfg.Network, cfg.Mounts)
		return r.pool.Function(key, &container.Launcher{Config: cfg, Stderr: r.o.Stderr}, r.o.Timeout)
	}
	return &container.Function{Config: cfg, Stderr: r.callStderr(), Timeout: r.o.Timeout, Format: format}
}

func (r *Runner) catalogExec(ctx context.Context, res *resolver.Resolution) (fn.Function, error) {
	e := res.Version.Runtime.Exec
	p, ok := e.Platform(runtime.GOOS, runtime.GOARCH)
	if !ok {
		var have []string
		for _, q := range e.Platforms {
			have = append(have, q.OS+"/"+q.Arch)
		}
		err := fmt.Errorf("exec: %w: no executable for %s/%s (the catalog has %s)", errUnavailable, runtime.GOOS, runtime.GOARCH, strings.Join(have, ", "))
		if r.o.Runtime == "exec" {
			return nil, errors.Unwrap(err)
		}
		return nil, err
	}
	path, err := r.store.Get(ctx, p)
	if err != nil {
		return nil, err
	}
	return r.execFunction(path, nil, nil, r.serverMode(res), r.wire(res)), nil
}

func (r *Runner) execFunction(path string, args, env []string, server bool, format fn.Format) fn.Function {
	env = append(append([]string(nil), env...), r.o.Env...)
	if server && len(args) == 0 {
		return r.pool.Function("exec\x00"+path, &exec.Launcher{Path: path, Env: env, Stderr: r.o.Stderr}, r.o.Timeout)
	}
	return &exec.Function{Path: path, Args: args, Env: env, Stderr: r.callStderr(), Timeout: r.o.Timeout, Format: format}
}

// callStderr is where one call's standard error goes as it is written (Options.QuietCalls).
func (r *Runner) callStderr() io.Writer {
	if r.o.QuietCalls {
		return nil
	}
	return r.o.Stderr
}

// MaxScriptBytes bounds a starlark script.
const MaxScriptBytes = 4 << 20

func (r *Runner) catalogStarlark(ctx context.Context, res *resolver.Resolution) (fn.Function, error) {
	s := res.Version.Runtime.Starlark
	src := s.Source()
	var rc io.ReadCloser
	var err error
	want := strings.TrimPrefix(s.SHA256, "sha256:")
	ref, isOCI := strings.CutPrefix(src, "oci://")
	if s.Ref != "" {
		ref, isOCI = s.Ref, true
	}
	switch {
	case isOCI:
		if r.o.OCI == nil {
			return nil, errors.New("no OCI client is configured for oci:// scripts")
		}
		rc, err = r.o.OCI.FetchStarlark(ctx, ref)
	case strings.HasPrefix(src, "https://"), strings.HasPrefix(src, "http://"):
		// plain http is refused by fetch unless it is to this machine
		rc, err = fetch.HTTPS(ctx, r.o.HTTPClient, src, time.Minute)
	default:
		return nil, fmt.Errorf("starlark script %q: fetched over https:// (plain http:// only from this machine) or oci:// only", src)
	}
	if err != nil {
		return nil, fmt.Errorf("fetch starlark script %s: %w", src, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, MaxScriptBytes+1))
	if err != nil {
		return nil, fmt.Errorf("fetch starlark script %s: %w", src, err)
	}
	if len(data) > MaxScriptBytes {
		return nil, fmt.Errorf("starlark script %s is larger than %d bytes", src, MaxScriptBytes)
	}
	sum := sha256.Sum256(data)
	got := hex.EncodeToString(sum[:])
	if want == "" && isOCI {
		if _, d, ok := strings.Cut(ref, "@sha256:"); ok {
			want = d // pinned by the manifest digest, which the OCI client checked
			got = d
		}
	}
	if want == "" || got != want {
		return nil, fmt.Errorf("%w: starlark script %s has sha256 %s, the catalog pins %q; it was not run", fn.ErrDigestMismatch, src, got, want)
	}
	return r.starlark(filepath.Base(src), string(data)), nil
}

// starlark is a starlark function, in the sandbox process when the runner has one. Its http.star
// and xlsx.star reach the network when the user allowed it (--allow-network), as kpt's starlark
// function reaches it with --network; a starlark runtime declares no need of its own.
func (r *Runner) starlark(name, script string) *starlark.Function {
	return &starlark.Function{Name: name, Script: script, Timeout: r.o.Timeout, Stderr: r.callStderr(), Sandbox: r.o.StarlarkSandbox, Network: r.o.AllowNetwork}
}

// explicit builds the function for a runtime the config names itself. The user wrote it, so images
// need not be pinned; exec needs --allow-exec, and network and mounts need the user's grant.
func (r *Runner) explicit(_ context.Context, e *resolver.Explicit, baseDir string) (fn.Function, error) {
	switch {
	case e.Starlark != nil && e.Starlark.Script != "":
		name := e.Starlark.Name
		if name == "" {
			name = e.Source
		}
		// a StarlarkRun, or a ConfigMap's source: kpt's starlark function's configs, run as it runs them
		f := r.starlark(name, e.Starlark.Script)
		f.Kpt = true
		return f, nil
	case e.Starlark != nil:
		p := local(baseDir, e.Starlark.Path)
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("starlark script: %w", err)
		}
		return r.starlark(filepath.Base(p), string(data)), nil
	case e.Exec != nil:
		if !r.o.AllowExec {
			return nil, fmt.Errorf("%w: the function config names the executable %s (%s); running it needs --allow-exec", fn.ErrNotAllowed, e.Exec.Path, e.Source)
		}
		return r.execFunction(local(baseDir, e.Exec.Path), e.Exec.Args, e.Exec.Env, false, fn.YAML), nil
	case e.Container != nil:
		engine, err := r.containerEngine()
		if err != nil {
			return nil, err
		}
		cfg := container.Config{Engine: engine, Image: e.Container.Image, Env: e.Container.Env}
		if e.Container.Network {
			if !r.o.AllowNetwork {
				return nil, fmt.Errorf("%w: the function config asks for network (%s); grant it with --allow-network", fn.ErrNotAllowed, e.Source)
			}
			cfg.Network = true
		}
		for _, m := range e.Container.Mounts {
			mount := fmt.Sprintf("type=%s,source=%s,target=%s", m.Type, m.Src, m.Dst)
			if !m.RW {
				mount += ",readonly"
			}
			if !slices.Contains(r.o.Mounts, mount) {
				return nil, fmt.Errorf("%w: the function config asks for the mount %s (%s); grant it with --mount %s", fn.ErrNotAllowed, mount, e.Source, mount)
			}
			cfg.Mounts = append(cfg.Mounts, mount)
		}
		return r.containerFunction(cfg, false, fn.YAML), nil
	}
	return nil, errors.New("empty runtime")
}

func local(baseDir, p string) string {
	if filepath.IsAbs(p) || baseDir == "" {
		return p
	}
	return filepath.Join(baseDir, p)
}
