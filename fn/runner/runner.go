// Package runner turns function configs into runnable pipeline steps: it resolves each config to a
// runtime (explicit, or from the catalogs), validates the config against the function's
// openAPIV3Schema, applies the permission rules (exec, network, mounts), fetches and verifies what
// will run, and chooses between one process per call and a reused spec v2 server.
package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/fn"
	"github.com/krm-catalog/krm-catalog/fn/runtime/exec"
	"github.com/krm-catalog/krm-catalog/fn/runtime/server"
	"github.com/krm-catalog/krm-catalog/fn/runtime/starlark"
	"github.com/krm-catalog/krm-catalog/internal/cachedir"
	"github.com/krm-catalog/krm-catalog/resolver"
	"github.com/krm-catalog/krm-catalog/schemas"
)

// ErrInvalidConfig: a functionConfig does not match its function's schema; nothing ran.
var ErrInvalidConfig = errors.New("functionConfig does not match the function's schema")

// ArtifactFetcher reads OCI runtime artifacts: exec (per platform) and starlark scripts.
type ArtifactFetcher interface {
	exec.ArtifactFetcher
	FetchStarlark(ctx context.Context, ref string) (io.ReadCloser, error)
}

// Options configure a Runner.
type Options struct {
	Resolver *resolver.Resolver
	// AllowExec permits explicit exec paths on function configs (--allow-exec).
	AllowExec bool
	// AllowNetwork grants network to container functions whose definition requires it, and to
	// starlark scripts' http.star and xlsx.star.
	AllowNetwork bool
	// Mounts are granted to container functions whose definition requires a storage mount.
	Mounts []string
	// Env (NAME=VALUE, from ParseEnv) is passed to exec and container functions (--env); they get
	// nothing else of the caller's environment.
	Env []string
	// ContainerMemory and ContainerPidsLimit bound each container; 0 means the container package's
	// defaults.
	ContainerMemory    int64
	ContainerPidsLimit int
	// StarlarkSandbox runs starlark scripts in child processes bounded in memory; nil runs them in
	// this process, bounded in steps and time only.
	StarlarkSandbox *starlark.Sandbox
	// Timeout bounds each function call; 0 means DefaultTimeout.
	Timeout time.Duration
	// Stderr receives the functions' standard error.
	Stderr io.Writer
	// QuietCalls keeps what a function writes on standard error during a call out of Stderr: the
	// call's results hold it (FunctionResults.Stderr), for a caller that prints it with them. A
	// function server's own log, which belongs to no one call, still goes to Stderr.
	QuietCalls bool
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
	// Prefer is the order in which the runtimes a version offers are tried when Runtime is not
	// set; nil means starlark, container, exec (the sandboxed ones first).
	Prefer []string
	// YAMLWire sends YAML to every function. Without it, a function whose catalog definition
	// declares spec v2 (whose server mode reads application/json) is sent JSON, which costs less at
	// both ends; every other function is sent YAML, as kpt and kustomize send it, comments included
	// (kpt-set setter comments), and some read nothing else.
	YAMLWire bool
	// NoServerMode runs spec v2 functions one process per call like v1 ones.
	NoServerMode bool
	// NoSkip runs idempotent functions even when their input is their remembered output (skip.go).
	NoSkip bool
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
	store *exec.Store
	pool  *server.Pool

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
	cache := cachedir.At(o.CacheDir)
	o.CacheDir = cache.Root
	r := &Runner{
		o:       o,
		store:   &exec.Store{Dir: cache.Exec(), HTTPClient: o.HTTPClient, OCI: o.OCI},
		pool:    &server.Pool{Format: poolWire(o)},
		schemas: map[string]*schemas.FunctionConfigSchema{},
		uses:    map[string]int{},
	}
	return r
}

// poolWire is the format of server-mode calls: only spec v2 functions run as servers.
func poolWire(o Options) fn.Format {
	if o.YAMLWire {
		return fn.YAML
	}
	return fn.JSON
}

// wire is the format a catalog's function is sent: JSON only where the definition says the
// function reads it (spec v2), unless YAML is asked for.
func (r *Runner) wire(res *resolver.Resolution) fn.Format {
	if !r.o.YAMLWire && res.Version.SpecV2() {
		return fn.JSON
	}
	return fn.YAML
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
	pin  string // set by Build: see Pin
}

// Pin names what a built step runs when its output can depend on nothing but its input and
// config, and its definition says it is idempotent: the function, its catalog definition, the
// runtime and its digest, the wire and the environment it is given (renderPin in skip.go). It is
// "" before Build, and for a step that is not such a function: an explicit runtime, a runtime
// without a digest, a container granted the network or a mount.
func (c *Checked) Pin() string { return c.pin }

// Check resolves a config and validates it against the function's schema. When it violates the
// schema the results say how and the error wraps ErrInvalidConfig; the Checked is returned either
// way once resolution succeeded.
func (r *Runner) Check(ctx context.Context, cfg *yaml.RNode) (*Checked, []fn.Result, error) {
	res, err := r.o.Resolver.Resolve(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	if e := res.Explicit; e != nil && e.Container != nil {
		// an image the config names, listed by a trusted catalog with the runtime the user prefers
		found, err := r.ImageResolution(ctx, e.Container.Image)
		if err != nil {
			return nil, nil, err
		}
		if found != nil {
			res = found
		}
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
			// the violations are the results, which every command prints and records: the error
			// counts them rather than saying each a second time
			return c, results, fmt.Errorf("%s: %w (%s); nothing ran", c.Name, ErrInvalidConfig, violations(len(results)))
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
	if !r.o.NoSkip && c.res.Explicit == nil {
		runtimeKind, _, _ := strings.Cut(kind, ",")
		f = openSkipStore(cachedir.At(r.o.CacheDir).Skip()).hook(f, c.res.Version, runtimeKind, withoutRuntimeField(c.cfg))
	}
	if c.res.Explicit == nil {
		runtimeKind, _, _ := strings.Cut(kind, ",")
		c.pin = r.renderPin(c.res, runtimeKind)
	}
	return fn.Step{Name: c.Name + " (" + kind + ")", Function: f, Config: withoutRuntimeField(c.cfg)}, nil
}

// violations says how many schema violations there are.
func violations(n int) string {
	if n == 1 {
		return "1 violation"
	}
	return strconv.Itoa(n) + " violations"
}
