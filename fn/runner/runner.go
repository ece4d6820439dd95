// Package runner turns function configs into runnable pipeline steps: it resolves each config to a
// runtime (explicit, or from the catalogs), validates the config against the function's
// openAPIV3Schema, applies the permission rules (exec, network, mounts), fetches and verifies what
// will run, and chooses between one process per call and a reused spec v2 server.
package runner

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/fn"
	"github.com/krm-catalog/krm-catalog/fn/container"
	"github.com/krm-catalog/krm-catalog/fn/execfn"
	"github.com/krm-catalog/krm-catalog/fn/internal/fetch"
	"github.com/krm-catalog/krm-catalog/fn/servermode"
	"github.com/krm-catalog/krm-catalog/fn/starlarkfn"
	"github.com/krm-catalog/krm-catalog/resolver"
	"github.com/krm-catalog/krm-catalog/schemas"
)

// ErrInvalidConfig: a functionConfig does not match its function's schema; nothing ran.
var ErrInvalidConfig = errors.New("functionConfig does not match the function's schema")

// ArtifactFetcher reads OCI runtime artifacts: exec (per platform) and starlark scripts.
type ArtifactFetcher interface {
	execfn.ArtifactFetcher
	FetchStarlark(ctx context.Context, ref string) (io.ReadCloser, error)
}

// Options configure a Runner.
type Options struct {
	Resolver *resolver.Resolver
	// AllowExec permits explicit exec paths on function configs (--allow-exec).
	AllowExec bool
	// AllowNetwork grants network to container functions whose definition requires it.
	AllowNetwork bool
	// Mounts are granted to container functions whose definition requires a storage mount.
	Mounts []string
	// Timeout bounds each function call; 0 means DefaultTimeout.
	Timeout time.Duration
	// Stderr receives the functions' standard error.
	Stderr io.Writer
	// CacheDir is the cache root (executables, scripts); "" means os.UserCacheDir()/krm-catalog.
	CacheDir string
	// BaseDir resolves relative exec and starlark paths of explicit runtimes; "" means the working
	// directory.
	BaseDir string
	// HTTPClient downloads executables and scripts over https.
	HTTPClient *http.Client
	// OCI fetches oci:// runtime artifacts.
	OCI ArtifactFetcher
	// Runtime forces a runtime kind (container, exec, starlark) when a version offers several.
	Runtime string
	// Format is the wire format sent to functions; JSON unless set (fn.YAML is 0, so the zero value
	// is replaced by JSON unless YAMLWire is set).
	YAMLWire bool
	// NoServerMode runs spec v2 functions one process per call like v1 ones.
	NoServerMode bool
	// ServerModeAlways starts a spec v2 function as a server even when the runner has it run only
	// once (by default a server is started for a function that runs more than once: for a single
	// call, starting a server costs more than the process it replaces).
	ServerModeAlways bool
	// LookupEnv reads the environment (KRM_FN_RUNTIME); nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)
}

// DefaultTimeout bounds one function call.
const DefaultTimeout = 5 * time.Minute

// Runner prepares and runs functions. Close stops the function servers it started.
type Runner struct {
	o     Options
	store *execfn.Store
	pool  *servermode.Pool

	mu      sync.Mutex
	engine  string
	schemas map[string]*schemas.FunctionConfigSchema
	uses    map[string]int // checked configs by function version, to decide on server mode
}

// New returns a Runner.
func New(o Options) *Runner {
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.LookupEnv == nil {
		o.LookupEnv = os.LookupEnv
	}
	if o.CacheDir == "" {
		if d, err := os.UserCacheDir(); err == nil {
			o.CacheDir = filepath.Join(d, "krm-catalog")
		} else {
			o.CacheDir = filepath.Join(os.TempDir(), "krm-catalog-cache")
		}
	}
	r := &Runner{
		o:       o,
		store:   &execfn.Store{Dir: filepath.Join(o.CacheDir, "exec"), HTTPClient: o.HTTPClient, OCI: o.OCI},
		pool:    &servermode.Pool{Format: wire(o)},
		schemas: map[string]*schemas.FunctionConfigSchema{},
		uses:    map[string]int{},
	}
	return r
}

func wire(o Options) fn.Format {
	if o.YAMLWire {
		return fn.YAML
	}
	return fn.JSON
}

// Resolver returns the resolver the runner resolves configs with.
func (r *Runner) Resolver() *resolver.Resolver { return r.o.Resolver }

// Close stops every function server the runner started.
func (r *Runner) Close() error { return r.pool.Close() }

// Running reports how many function servers are running.
func (r *Runner) Running() int { return r.pool.Running() }

// Run prepares the configs and runs them in order over items.
func (r *Runner) Run(ctx context.Context, configs []*yaml.RNode, items []*yaml.RNode) ([]*yaml.RNode, []fn.FunctionResults, error) {
	steps, results, err := r.Prepare(ctx, configs)
	if err != nil {
		return nil, results, err
	}
	return fn.Run(ctx, steps, items)
}

// Prepare resolves every config and validates it against its schema, then readies what will run
// (executables are fetched and verified here, before any function runs). When a config violates
// its schema, nothing is fetched: the violations come back as error results with ErrInvalidConfig.
func (r *Runner) Prepare(ctx context.Context, configs []*yaml.RNode) ([]fn.Step, []fn.FunctionResults, error) {
	checked := make([]*Checked, len(configs))
	return fn.Prepare(len(configs), func(i int) (string, []fn.Result, error) {
		c, results, err := r.Check(ctx, configs[i])
		if err != nil && len(results) == 0 {
			return "", nil, fmt.Errorf("function config %d: %w", i+1, err)
		}
		checked[i] = c
		return c.Name, results, err
	}, func(i int) (fn.Step, error) {
		return r.Build(ctx, checked[i], r.o.BaseDir)
	})
}

// Checked is a function config resolved to its runtime and validated against its schema.
type Checked struct {
	// Name says what it is: apiVersion and kind.
	Name string
	cfg  *yaml.RNode
	res  *resolver.Resolution
}

// Check resolves a config and validates it against the function's schema. When it violates the
// schema the results say how and the error wraps ErrInvalidConfig; the Checked is returned either
// way once resolution succeeded.
func (r *Runner) Check(ctx context.Context, cfg *yaml.RNode) (*Checked, []fn.Result, error) {
	res, err := r.o.Resolver.Resolve(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	return r.CheckResolved(res, cfg)
}

// CheckResolved is Check for a config whose resolution the caller found itself (kpt's Kptfile
// steps name an image or an executable rather than relying on the config's kind).
func (r *Runner) CheckResolved(res *resolver.Resolution, cfg *yaml.RNode) (*Checked, []fn.Result, error) {
	c := &Checked{Name: describe(res), cfg: cfg, res: res}
	if res.Explicit == nil {
		r.mu.Lock()
		r.uses[useKey(res)]++
		r.mu.Unlock()
	}
	// a config of another kind (a ConfigMap given to a function found by its image) is not what the
	// schema describes
	if res.Explicit == nil && res.Version.Schema != nil && cfg != nil && cfg.GetApiVersion() == res.Function.APIVersion(res.Version) && cfg.GetKind() == res.Function.Kind {
		results, err := r.validate(res, cfg)
		if err != nil {
			return c, nil, fmt.Errorf("%s: %w", c.Name, err)
		}
		if len(results) > 0 {
			msgs := make([]string, len(results))
			for i, x := range results {
				msgs[i] = x.String()
			}
			return c, results, fmt.Errorf("%s: %w; nothing ran:\n  %s", c.Name, ErrInvalidConfig, strings.Join(msgs, "\n  "))
		}
	}
	return c, nil, nil
}

// Build readies the step of a checked config: permissions are applied and what will run is fetched
// and verified. baseDir resolves relative paths of an explicit runtime.
func (r *Runner) Build(ctx context.Context, c *Checked, baseDir string) (fn.Step, error) {
	f, kind, err := r.function(ctx, c.res, baseDir)
	if err != nil {
		return fn.Step{}, fmt.Errorf("%s: %w", c.Name, err)
	}
	return fn.Step{Name: c.Name + " (" + kind + ")", Function: f, Config: withoutRuntimeField(c.cfg)}, nil
}

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

// validate checks the config against the version's openAPIV3Schema. As the Kubernetes API server
// does for custom resources, apiVersion, kind and metadata are checked only when the schema
// describes them.
func (r *Runner) validate(res *resolver.Resolution, cfg *yaml.RNode) ([]fn.Result, error) {
	key := res.Catalog + "\x00" + res.Function.ID() + "\x00" + res.Version.Name
	r.mu.Lock()
	s, ok := r.schemas[key]
	r.mu.Unlock()
	if !ok {
		compiled, problems := schemas.CompileOpenAPIV3(res.Version.Schema)
		if len(problems) > 0 {
			return nil, fmt.Errorf("the catalog's openAPIV3Schema does not compile: %s", problems[0].Message)
		}
		s = compiled
		r.mu.Lock()
		r.schemas[key] = s
		r.mu.Unlock()
	}
	instance, err := jsonValue(withoutRuntimeField(cfg))
	if err != nil {
		return nil, err
	}
	m, _ := instance.(map[string]any)
	props, _ := res.Version.Schema["properties"].(map[string]any)
	for _, k := range []string{"apiVersion", "kind", "metadata"} {
		if _, described := props[k]; !described {
			delete(m, k)
		}
	}
	var out []fn.Result
	for _, v := range s.Validate(instance) {
		field := pointerToPath(v.Pointer)
		msg := v.Message
		if field != "" {
			msg = "field " + field + ": " + msg
		}
		out = append(out, fn.Result{
			Message:  "functionConfig " + msg,
			Severity: fn.SeverityError,
			ResourceRef: &fn.ResourceRef{
				APIVersion: cfg.GetApiVersion(), Kind: cfg.GetKind(), Name: cfg.GetName(), Namespace: cfg.GetNamespace(),
			},
			Field: &fn.Field{Path: field},
		})
	}
	return out, nil
}

func jsonValue(n *yaml.RNode) (any, error) {
	b, err := fn.AppendJSON(nil, n.YNode())
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// pointerToPath turns a JSON pointer into the dotted path results use: /spec/ports/0 -> spec.ports[0].
func pointerToPath(p string) string {
	if p == "" || p == "/" {
		return ""
	}
	var b strings.Builder
	for _, tok := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
		tok = schemas.UnescapeToken(tok)
		if isIndex(tok) && b.Len() > 0 {
			b.WriteString("[" + tok + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(tok)
	}
	return b.String()
}

func isIndex(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
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

// order is the runtime preference: the forced one, else starlark (in-process and sandboxed), then
// container (sandboxed), then exec (native, unconfined, though verified).
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
	var out []string
	for _, k := range []string{"starlark", "container", "exec"} {
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

func (r *Runner) catalogContainer(_ context.Context, res *resolver.Resolution) (fn.Function, error) {
	c := res.Version.Runtime.Container
	image := c.PinnedImage()
	if !strings.Contains(image, "@sha256:") {
		return nil, fmt.Errorf("%w: the catalog does not pin image %s by digest; krm-catalog runs catalog images by digest only", fn.ErrNotAllowed, c.Image)
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
	return r.containerFunction(cfg, r.serverMode(res)), nil
}

func (r *Runner) containerFunction(cfg container.Config, server bool) fn.Function {
	if server {
		key := fmt.Sprintf("container\x00%s\x00%t\x00%q", cfg.Image, cfg.Network, cfg.Mounts)
		return r.pool.Function(key, &container.Launcher{Config: cfg, Stderr: r.o.Stderr}, r.o.Timeout)
	}
	return &container.Function{Config: cfg, Stderr: r.o.Stderr, Timeout: r.o.Timeout, Format: wire(r.o)}
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
	return r.execFunction(path, nil, nil, r.serverMode(res)), nil
}

func (r *Runner) execFunction(path string, args, env []string, server bool) fn.Function {
	if server && len(args) == 0 {
		return r.pool.Function("exec\x00"+path, &execfn.Launcher{Path: path, Env: env, Stderr: r.o.Stderr}, r.o.Timeout)
	}
	return &execfn.Function{Path: path, Args: args, Env: env, Stderr: r.o.Stderr, Timeout: r.o.Timeout, Format: wire(r.o)}
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
	case strings.HasPrefix(src, "https://"):
		rc, err = fetch.HTTPS(ctx, r.o.HTTPClient, src, time.Minute)
	default:
		return nil, fmt.Errorf("starlark script %q: fetched over https:// or oci:// only", src)
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
	return &starlarkfn.Function{Name: filepath.Base(src), Script: string(data), Timeout: r.o.Timeout, Stderr: r.o.Stderr}, nil
}

// explicit builds the function for a runtime the config names itself. The user wrote it, so images
// need not be pinned; exec needs --allow-exec, and network and mounts need the user's grant.
func (r *Runner) explicit(_ context.Context, e *resolver.Explicit, baseDir string) (fn.Function, error) {
	switch {
	case e.Starlark != nil && e.Starlark.Script != "":
		return &starlarkfn.Function{Name: e.Source, Script: e.Starlark.Script, Timeout: r.o.Timeout, Stderr: r.o.Stderr}, nil
	case e.Starlark != nil:
		p := local(baseDir, e.Starlark.Path)
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("starlark script: %w", err)
		}
		return &starlarkfn.Function{Name: filepath.Base(p), Script: string(data), Timeout: r.o.Timeout, Stderr: r.o.Stderr}, nil
	case e.Exec != nil:
		if !r.o.AllowExec {
			return nil, fmt.Errorf("%w: the function config names the executable %s (%s); running it needs --allow-exec", fn.ErrNotAllowed, e.Exec.Path, e.Source)
		}
		return r.execFunction(local(baseDir, e.Exec.Path), e.Exec.Args, e.Exec.Env, false), nil
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
			if !contains(r.o.Mounts, mount) {
				return nil, fmt.Errorf("%w: the function config asks for the mount %s (%s); grant it with --mount %s", fn.ErrNotAllowed, mount, e.Source, mount)
			}
			cfg.Mounts = append(cfg.Mounts, mount)
		}
		return r.containerFunction(cfg, false), nil
	}
	return nil, errors.New("empty runtime")
}

func local(baseDir, p string) string {
	if filepath.IsAbs(p) || baseDir == "" {
		return p
	}
	return filepath.Join(baseDir, p)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
