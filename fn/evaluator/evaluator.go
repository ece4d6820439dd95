// Package evaluator serves Porch's function evaluator API (evaluator.FunctionEvaluator): a
// function named by its image is resolved through the trusted catalogs, verified, and run over the
// ResourceList of the request. It is what `krm-catalog fn serve` runs, so that Porch's server-side
// rendering can use catalogs instead of a pod per image.
package evaluator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/catalog"
	"github.com/krm-catalog/krm-catalog/fn"
	"github.com/krm-catalog/krm-catalog/fn/evaluator/evaluatorpb"
	"github.com/krm-catalog/krm-catalog/fn/runner"
	"github.com/krm-catalog/krm-catalog/resolver"
)

// Resolver finds the function a trusted catalog lists for an image.
type Resolver interface {
	ResolveImage(ctx context.Context, image, kind string) (*resolver.Resolution, error)
}

// Runner turns a resolution into a runnable step; *runner.Runner is one.
type Runner interface {
	CheckResolved(res *resolver.Resolution, cfg *yaml.RNode) (*runner.Checked, []fn.Result, error)
	Build(ctx context.Context, c *runner.Checked, baseDir string) (fn.Step, error)
	// Running is how many function servers are up, which tells a cold start from a warm call.
	Running() int
}

// Defaults of Options.
const (
	DefaultCallTimeout   = 5 * time.Minute
	DefaultMaxConcurrent = 4
	DefaultMaxQueued     = 64
)

// Options configure a Server.
type Options struct {
	Resolver Resolver
	Runner   Runner
	// CallTimeout bounds one call, its wait for a slot included; a shorter client deadline wins.
	CallTimeout time.Duration
	// MaxConcurrent bounds the calls of one function that run at once; MaxQueued bounds those
	// waiting for a slot, past which a call is ResourceExhausted at once.
	MaxConcurrent, MaxQueued int
	Logger                   *slog.Logger
	Metrics                  *Metrics
}

// Server implements evaluatorpb.FunctionEvaluatorServer.
type Server struct {
	evaluatorpb.UnimplementedFunctionEvaluatorServer
	o Options

	mu       sync.Mutex
	resolved map[string]*resolver.Resolution // by image; only what a trusted catalog lists
	limits   map[string]*limiter             // by function version
}

// New returns a Server.
func New(o Options) *Server {
	if o.CallTimeout <= 0 {
		o.CallTimeout = DefaultCallTimeout
	}
	if o.MaxConcurrent <= 0 {
		o.MaxConcurrent = DefaultMaxConcurrent
	}
	if o.MaxQueued < 0 {
		o.MaxQueued = 0
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Server{o: o, resolved: map[string]*resolver.Resolution{}, limits: map[string]*limiter{}}
}

// call is what one EvaluateFunction learned, for its log line and metrics.
type call struct {
	function string // group/kind@version, or "starlark", or "" when nothing was resolved
	cold     bool
	cached   bool
}

// EvaluateFunction runs the function the request's image names over its ResourceList.
func (s *Server) EvaluateFunction(ctx context.Context, req *evaluatorpb.EvaluateFunctionRequest) (*evaluatorpb.EvaluateFunctionResponse, error) {
	start := time.Now()
	var c call
	resp, err := s.evaluate(ctx, req, &c)
	code := status.Code(err)
	elapsed := time.Since(start)
	s.o.Metrics.observe(c, code, elapsed)
	level, attrs := slog.LevelInfo, []slog.Attr{
		slog.String("image", req.GetImage()), slog.String("function", c.function), slog.String("code", code.String()),
		slog.Duration("duration", elapsed), slog.Bool("cold", c.cold),
	}
	if err != nil {
		level, attrs = slog.LevelWarn, append(attrs, slog.String("error", status.Convert(err).Message()))
	}
	s.o.Logger.LogAttrs(ctx, level, "evaluate", attrs...)
	return resp, err
}

func (s *Server) evaluate(ctx context.Context, req *evaluatorpb.EvaluateFunctionRequest, c *call) (*evaluatorpb.EvaluateFunctionResponse, error) {
	if req.GetImage() == "" {
		return nil, status.Error(codes.InvalidArgument, "image: empty")
	}
	rl, format, err := fn.DecodeResourceList(req.GetResourceList())
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "resource_list: %v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.o.CallTimeout)
	defer cancel()

	res, err := s.resolve(ctx, req.GetImage(), rl.FunctionConfig, c)
	if err != nil {
		return nil, err
	}
	release, err := s.acquire(ctx, c.function)
	if err != nil {
		return nil, err
	}
	defer release()

	checked, violations, err := s.o.Runner.CheckResolved(res, rl.FunctionConfig)
	if err != nil {
		if len(violations) > 0 {
			msgs := make([]string, len(violations))
			for i, v := range violations {
				msgs[i] = v.String()
			}
			return nil, status.Errorf(codes.InvalidArgument, "%v: %s", err, strings.Join(msgs, "; "))
		}
		return nil, status.Error(codes.FailedPrecondition, err.Error())
	}
	running := s.o.Runner.Running()
	step, err := s.o.Runner.Build(ctx, checked, "")
	if err != nil {
		return nil, callError(ctx, codes.FailedPrecondition, err)
	}
	items, runs, runErr := fn.Run(ctx, []fn.Step{step}, rl.Items)
	c.cold = s.o.Runner.Running() > running
	var results []fn.Result
	var log []byte
	if len(runs) > 0 {
		results, log = runs[0].Results, []byte(runs[0].Stderr)
	}
	if runErr != nil {
		// as Porch's runners do, a failed function fails the call with a message that says why in
		// full (Porch shows its users nothing else); the list, with the function's results, and its
		// standard error travel in the status details too, for a client that wants them
		var run fn.FunctionResults
		if len(runs) > 0 {
			run = runs[0]
		}
		st := status.New(callCode(ctx, codes.Internal, runErr), failureMessage(req.GetImage(), run, runErr))
		out := &fn.ResourceList{APIVersion: rl.APIVersion, Items: rl.Items, FunctionConfig: rl.FunctionConfig, Results: results}
		if data, err := out.Encode(format); err == nil {
			if withDetails, err := st.WithDetails(&evaluatorpb.EvaluateFunctionResponse{ResourceList: data, Log: log}); err == nil {
				st = withDetails
			}
		}
		return nil, st.Err()
	}
	out := &fn.ResourceList{APIVersion: rl.APIVersion, Items: items, FunctionConfig: rl.FunctionConfig, Results: results}
	data, err := out.Encode(format)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "encode the output: %v", err)
	}
	return &evaluatorpb.EvaluateFunctionResponse{ResourceList: data, Log: log}, nil
}

// resolve finds what runs for an image: the function a trusted catalog lists for it, else, for
// kpt's starlark image, the StarlarkRun of the request run in-process. Anything else is NotFound,
// so that a client with several evaluators (Porch's) moves on to its next one.
func (s *Server) resolve(ctx context.Context, image string, cfg *yaml.RNode, c *call) (*resolver.Resolution, error) {
	s.mu.Lock()
	res, ok := s.resolved[image]
	s.mu.Unlock()
	if ok {
		c.function, c.cached = functionLabel(res), true
		return res, nil
	}
	res, err := s.o.Resolver.ResolveImage(ctx, image, "")
	switch {
	case err == nil:
		s.mu.Lock()
		s.resolved[image] = res
		s.mu.Unlock()
		c.function = functionLabel(res)
		return res, nil
	case !errors.Is(err, resolver.ErrNotFound):
		return nil, callError(ctx, codes.Unavailable, err)
	}
	if isStarlarkImage(image) {
		e, eerr := resolver.ExplicitRuntime(cfg)
		if eerr != nil {
			return nil, status.Errorf(codes.InvalidArgument, "functionConfig: %v", eerr)
		}
		if e != nil && e.Starlark != nil && e.Starlark.Script != "" {
			c.function = "starlark"
			return &resolver.Resolution{APIVersion: cfg.GetApiVersion(), Kind: cfg.GetKind(), Explicit: e}, nil
		}
	}
	return nil, status.Error(codes.NotFound, err.Error())
}

// isStarlarkImage reports whether an image is kpt's starlark function: any registry, any tag.
func isStarlarkImage(image string) bool {
	ref, err := catalog.ParseImage(image)
	return err == nil && path.Base(ref.Name) == "starlark"
}

func functionLabel(res *resolver.Resolution) string {
	return res.Function.ID() + "@" + res.Version.Name
}

// callError maps an error to a status: the call's own deadline or cancellation when that is what
// ended it, else code.
func callError(ctx context.Context, code codes.Code, err error) error {
	return status.Error(callCode(ctx, code, err), err.Error())
}

func callCode(ctx context.Context, code codes.Code, err error) codes.Code {
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded):
		return codes.DeadlineExceeded
	case errors.Is(err, context.Canceled) || errors.Is(ctx.Err(), context.Canceled):
		return codes.Canceled
	}
	return code
}

// limiter bounds the calls of one function: slots run, a bounded queue waits.
type limiter struct {
	slots  chan struct{}
	mu     sync.Mutex
	queued int
}

// acquire takes a slot of the function's limiter, waiting in its queue while there is room.
func (s *Server) acquire(ctx context.Context, function string) (func(), error) {
	s.mu.Lock()
	l, ok := s.limits[function]
	if !ok {
		l = &limiter{slots: make(chan struct{}, s.o.MaxConcurrent)}
		s.limits[function] = l
	}
	s.mu.Unlock()
	release := func() { <-l.slots }
	select {
	case l.slots <- struct{}{}:
		return release, nil
	default:
	}
	l.mu.Lock()
	if l.queued >= s.o.MaxQueued {
		l.mu.Unlock()
		return nil, status.Errorf(codes.ResourceExhausted, "function %s: %d calls running and %d waiting", function, s.o.MaxConcurrent, s.o.MaxQueued)
	}
	l.queued++
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		l.queued--
		l.mu.Unlock()
	}()
	select {
	case l.slots <- struct{}{}:
		return release, nil
	case <-ctx.Done():
		return nil, callError(ctx, codes.DeadlineExceeded, fmt.Errorf("function %s: waiting for a slot: %w", function, ctx.Err()))
	}
}
