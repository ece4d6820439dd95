package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/spf13/pflag"
	"oras.land/oras-go/v2/registry/remote/credentials"

	"github.com/krm-catalog/krm-catalog/catalog"
	"github.com/krm-catalog/krm-catalog/cmd/krm-catalog/internal/fnoci"
	"github.com/krm-catalog/krm-catalog/fn"
	"github.com/krm-catalog/krm-catalog/fn/runner"
	"github.com/krm-catalog/krm-catalog/fn/runtime/container"
	"github.com/krm-catalog/krm-catalog/fn/runtime/starlark"
	"github.com/krm-catalog/krm-catalog/internal/cachedir"
	"github.com/krm-catalog/krm-catalog/oci"
	"github.com/krm-catalog/krm-catalog/pkg/krmfn"
	"github.com/krm-catalog/krm-catalog/resolver"
)

// fnOptions are the flags shared by the commands that resolve and run functions.
type fnOptions struct {
	catalogs, trusted []string
	// declared: how the kustomizations of a build spelled their local catalogs (resolver.Options)
	declared        map[string][]string
	trust           trustFlags
	cacheDir        string
	registryTimeout time.Duration

	allowExec, allowNetwork bool
	mounts                  []string
	env                     []string
	containerMemory         int64
	containerPids           int
	starlarkMemory          int64
	timeout                 time.Duration
	runtime                 string
	yamlWire                bool
	prefer                  []string // not a flag: fn serve sets it
	// not a flag: fn serve sets it (resolver.Options.ShortImagePrefix)
	shortImagePrefix string
	// not a flag: the commands that print a fn.Report set it, which prints a call's standard error
	// with its results, once (runner.Options.QuietCalls)
	quietCalls bool
	serverMode string
	noSkip     bool
}

func (o *fnOptions) addResolveFlags(fs *pflag.FlagSet) {
	fs.StringArrayVar(&o.catalogs, "catalog", nil, "catalog to resolve functions from: a path, https:// URL, git::URL//PATH?ref=REF or oci://REF (repeatable; searched in order)")
	fs.StringArrayVar(&o.trusted, "trusted-catalog", nil, "trust this catalog: a reference as given to --catalog, or any path to the same file (repeatable)")
	o.trust.register(fs, "public key (PEM): an oci:// catalog must be signed by one of these keys, or by the --certificate-identity (repeatable)")
	fs.StringVar(&o.cacheDir, "cache-dir", "", "cache for catalogs, executables and OCI content (default: the user cache directory)")
	addRegistryTimeoutFlag(fs, &o.registryTimeout)
}

func (o *fnOptions) addRunFlags(fs *pflag.FlagSet) {
	o.addResolveFlags(fs)
	fs.BoolVar(&o.allowExec, "allow-exec", false, "allow function configs that name a local executable (exec.path)")
	fs.BoolVar(&o.allowNetwork, "allow-network", false, "give network access to container functions whose definition requires it, and to the http and xlsx modules of starlark scripts")
	fs.StringArrayVar(&o.mounts, "mount", nil, "storage mount for container functions whose definition requires one: type=bind,source=DIR,target=PATH[,readonly] (repeatable)")
	fs.StringArrayVarP(&o.env, "env", "e", nil, "environment variable for exec and container functions: NAME=VALUE, or NAME to pass this one's value (repeatable); they get no other variable of this environment but PATH and the locale")
	addSizeFlag(fs, &o.containerMemory, "container-memory", container.DefaultMemory, "memory limit of each container function, swap included (docker run --memory)")
	fs.IntVar(&o.containerPids, "container-pids-limit", container.DefaultPidsLimit, "limit of processes and threads in each container function (docker run --pids-limit)")
	addSizeFlag(fs, &o.starlarkMemory, "starlark-max-memory", starlark.DefaultMaxMemory, "memory limit of the process each starlark function runs in")
	fs.DurationVar(&o.timeout, "timeout", runner.DefaultTimeout, "time limit for each function call")
	fs.StringVar(&o.runtime, "runtime", "", "runtime to use when a function offers several: container, exec or starlark (default: starlark, then container, then exec)")
	fs.BoolVar(&o.yamlWire, "yaml-wire", false, "send ResourceLists as YAML also to the functions whose definition declares spec v2 (sent JSON otherwise; every other function is sent YAML, as kpt sends it)")
	fs.BoolVar(&o.noSkip, "no-skip", false, "run idempotent functions even when their input is the output of an earlier run (docs/skip.md)")
	fs.StringVar(&o.serverMode, "server-mode", "auto", "run spec v2 functions as reused servers: auto (when a function runs more than once), always, or never")
}

func (o *fnOptions) cache() cachedir.Layout { return cachedir.At(o.cacheDir) }

// ociAdapter creates the OCI client on first use: most runs never touch a registry, and opening the
// cache and reading the docker configuration are not free.
type ociAdapter struct {
	opts *fnOptions
	once sync.Once
	a    *fnoci.Adapter
	err  error
}

func (l *ociAdapter) get(ctx context.Context) (*fnoci.Adapter, error) {
	l.once.Do(func() {
		trust, err := l.opts.trust.load()
		if err != nil {
			l.err = err
			return
		}
		opts := oci.Options{UserAgent: "krm-catalog", HTTPClient: oci.NewIdleBoundedHTTPClient(l.opts.registryTimeout)}
		if store, err := credentials.NewStoreFromDocker(credentials.StoreOptions{}); err == nil {
			opts.Credentials = store
		}
		if c, err := oci.OpenCache(ctx, l.opts.cache().OCI()); err == nil {
			opts.Cache = c
		}
		l.a = &fnoci.Adapter{Client: oci.NewClient(opts), Trust: trust}
	})
	return l.a, l.err
}

func (l *ociAdapter) PullCatalog(ctx context.Context, ref string) ([]byte, error) {
	a, err := l.get(ctx)
	if err != nil {
		return nil, err
	}
	return a.PullCatalog(ctx, ref)
}

func (l *ociAdapter) FetchStarlark(ctx context.Context, ref string) (io.ReadCloser, error) {
	a, err := l.get(ctx)
	if err != nil {
		return nil, err
	}
	return a.FetchStarlark(ctx, ref)
}

func (l *ociAdapter) FetchExec(ctx context.Context, ref string, p catalog.ExecPlatform) (io.ReadCloser, error) {
	a, err := l.get(ctx)
	if err != nil {
		return nil, err
	}
	return a.FetchExec(ctx, ref, p)
}

// resolver builds the resolver; extraTrusted are trusted in addition to --trusted-catalog.
func (o *fnOptions) resolver(oa *ociAdapter, extraTrusted ...string) (*resolver.Resolver, error) {
	r, err := resolver.New(resolver.Options{
		Catalogs: o.catalogs,
		Trusted:  append(append([]string(nil), o.trusted...), extraTrusted...),
		Declared: o.declared,
		Builtin:  resolver.Builtin(os.LookupEnv),
		CacheDir: o.cache().Catalogs(),
		OCI:      oa,

		ShortImagePrefix: o.shortImagePrefix,
	})
	if err != nil {
		return nil, usageErr(err)
	}
	return r, nil
}

// runner builds the function runner over a resolver; baseDir resolves relative explicit paths.
func (o *fnOptions) runner(stderr io.Writer, baseDir string, extraTrusted ...string) (*runner.Runner, error) {
	switch o.runtime {
	case "", "container", "exec", "starlark":
	default:
		return nil, usageErr(fmt.Errorf("--runtime must be container, exec or starlark, not %q", o.runtime))
	}
	if o.containerPids <= 0 {
		return nil, usageErr(fmt.Errorf("--container-pids-limit must be above 0, not %d", o.containerPids))
	}
	switch o.serverMode {
	case "", "auto", "always", "never":
	default:
		return nil, usageErr(fmt.Errorf("--server-mode must be auto, always or never, not %q", o.serverMode))
	}
	env, err := runner.ParseEnv(o.env, os.LookupEnv)
	if err != nil {
		return nil, usageErr(err)
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find this program, to run starlark functions in a process of their own: %w", err)
	}
	// running functions allocates every list afresh at each step, as the functions themselves do
	krmfn.TuneGC()
	oa := &ociAdapter{opts: o}
	res, err := o.resolver(oa, extraTrusted...)
	if err != nil {
		return nil, err
	}
	return runner.New(runner.Options{
		Resolver:           res,
		AllowExec:          o.allowExec,
		AllowNetwork:       o.allowNetwork,
		Mounts:             o.mounts,
		Env:                env,
		ContainerMemory:    o.containerMemory,
		ContainerPidsLimit: o.containerPids,
		StarlarkSandbox:    &starlark.Sandbox{Command: []string{exe, starlark.SandboxArg}, MaxMemory: o.starlarkMemory},
		Timeout:            o.timeout,
		Stderr:             stderr,
		QuietCalls:         o.quietCalls,
		CacheDir:           o.cache().Root,
		BaseDir:            baseDir,
		OCI:                oa,
		Runtime:            o.runtime,
		Prefer:             o.prefer,
		YAMLWire:           o.yamlWire,
		NoServerMode:       o.serverMode == "never",
		NoSkip:             o.noSkip,
		// fn proxy runs one function per process; "always" is for pipelines and benchmarks
		ServerModeAlways: o.serverMode == "always",
	}), nil
}

// runExit maps a run error to an exit code: usage problems (an untrusted or malformed catalog
// reference, a missing permission) and input that cannot be read (a catalog that cannot be fetched
// or does not validate, as catalog diff has it) are 2; failing functions, error results and
// everything else 1.
func runExit(err error) error {
	if err == nil {
		return nil
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return err
	}
	if errors.Is(err, resolver.ErrUntrustedCatalog) || errors.Is(err, resolver.ErrInvalidReference) || errors.Is(err, fn.ErrNotAllowed) ||
		errors.Is(err, resolver.ErrFetch) || errors.Is(err, resolver.ErrInvalidCatalog) {
		return usageErr(err)
	}
	return failure(err)
}

// Tags lists an image repository's tags in its registry (kpt.TagLister), for a Kptfile step whose
// tag constraint names an image no trusted catalog lists.
func (l *ociAdapter) Tags(ctx context.Context, repo string) ([]string, error) {
	a, err := l.get(ctx)
	if err != nil {
		return nil, err
	}
	ref, err := oci.ParseReference(repo)
	if err != nil {
		return nil, err
	}
	return a.Client.Tags(ctx, ref)
}
