// Package evaluator serves Porch's function evaluator API (evaluator.FunctionEvaluator): a
// function named by its image is resolved through the trusted catalogs, verified, and run over the
// ResourceList of the request; an image no catalog lists goes, unchanged, to a fallback evaluator
// (Porch's own function runner) when there is one. It is what `krm-catalog fn serve` runs, so that
// Porch's server-side rendering can use catalogs instead of a pod per image.
package evaluator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"strings"
	"time"
	"unicode/utf8"

	lru "github.com/hashicorp/golang-lru/v2"
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
	DefaultCallTimeout = 5 * time.Minute
	// DefaultResolutionCache is how many images' resolutions are remembered: far more than the
	// images of real catalogs, each spelling counted once per what it runs (cacheKey).
	DefaultResolutionCache = 4096
)

// Options configure a Server.
type Options struct {
	Resolver Resolver
	Runner   Runner
	// Fallback, when set, answers the calls for images no trusted catalog lists: the request is
	// forwarded unchanged, within the call's deadline, and its answer returned as it came.
	Fallback evaluatorpb.FunctionEvaluatorClient
	// ImagePrefix completes image names without a slash, as Porch completes them before it sends
	// them (its default prefix); "" leaves them as they are. The resolver must complete the
	// catalogs' images alike (resolver.Options.ShortImagePrefix).
	ImagePrefix string
	// CallTimeout bounds one call, its wait for a slot included; a shorter client deadline wins.
	CallTimeout time.Duration
	// MaxConcurrent bounds the calls of one function that run at once.
	MaxConcurrent int
	// MemoryBudget bounds the memory the calls in flight are estimated to hold (callCost); a call
	// that does not fit waits. MaxQueuedBytes bounds the size of the requests waiting; past it a call
	// is ResourceExhausted at once.
	MemoryBudget, MaxQueuedBytes int64
	// ResolutionCache is how many resolutions are remembered (least recently used go first).
	ResolutionCache int
	// PassThrough hands a process or server function the request's list as it came and answers
	// with what the function wrote, unread, as Porch's runner does. Without it the list is read,
	// sent in the runner's wire, and written back with its input's styles restored.
	PassThrough bool
	// MaxMessageSize bounds what a function may answer (the response's limit); 0 means
	// DefaultMaxMessageSize.
	MaxMessageSize int
	Logger         *slog.Logger
	Metrics        *Metrics
}

// Server implements evaluatorpb.FunctionEvaluatorServer.
type Server struct {
	evaluatorpb.UnimplementedFunctionEvaluatorServer
	o Options

	resolved *lru.Cache[string, *resolver.Resolution] // by cacheKey; only what a trusted catalog lists
	admit    *admission
}

// New returns a Server.
func New(o Options) *Server {
	if o.CallTimeout <= 0 {
		o.CallTimeout = DefaultCallTimeout
	}
	if o.MaxConcurrent <= 0 {
		o.MaxConcurrent = DefaultMaxConcurrent
	}
	if o.MemoryBudget <= 0 {
		o.MemoryBudget = DefaultMemoryBudget
	}
	if o.MaxQueuedBytes <= 0 {
		o.MaxQueuedBytes = DefaultMaxQueuedBytes
	}
	if o.ResolutionCache <= 0 {
		o.ResolutionCache = DefaultResolutionCache
	}
	if o.MaxMessageSize <= 0 {
		o.MaxMessageSize = DefaultMaxMessageSize
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	cache, err := lru.New[string, *resolver.Resolution](o.ResolutionCache)
	if err != nil {
		panic(err) // only for a size <= 0, excluded above
	}
	return &Server{o: o, resolved: cache, admit: newAdmission(o)}
}

// Routes a call takes (the route label of the metrics, the route of the log line).
const (
	routeCatalog  = "catalog"  // a function a trusted catalog lists
	routeStarlark = "starlark" // kpt's starlark image, run in-process
	routeFallback = "fallback" // forwarded to the fallback evaluator
	routeNone     = "none"     // refused before it ran anywhere
)

// call is what one EvaluateFunction learned, for its log line and metrics.
type call struct {
	route    string
	function string // group/kind@version, or "starlark", or "" when nothing was resolved
	cold     bool
	cached   bool
}

// EvaluateFunction runs the function the request's image names over its ResourceList.
func (s *Server) EvaluateFunction(ctx context.Context, req *evaluatorpb.EvaluateFunctionRequest) (*evaluatorpb.EvaluateFunctionResponse, error) {
	start := time.Now()
	c := call{route: routeNone}
	resp, err := s.route(ctx, req, &c)
	code := status.Code(err)
	elapsed := time.Since(start)
	s.o.Metrics.observe(c, code, elapsed)
	level, attrs := slog.LevelInfo, []slog.Attr{
		slog.String("image", logImage(req.GetImage())), slog.String("route", c.route), slog.String("function", c.function),
		slog.String("code", code.String()), slog.Duration("duration", elapsed), slog.Bool("cold", c.cold),
	}
	if err != nil {
		level, attrs = slog.LevelWarn, append(attrs, slog.String("error", status.Convert(err).Message()))
	}
	s.o.Logger.LogAttrs(ctx, level, "evaluate", attrs...)
	return resp, err
}

// maxLoggedImage is how much of an image name a log line or a message holds: a real reference is
// far shorter, and a client's 3 MB "image" should not be written out whole.
const maxLoggedImage = 512

// logImage is an image name as logs and messages show it: cut at maxLoggedImage bytes.
func logImage(image string) string {
	if len(image) <= maxLoggedImage {
		return image
	}
	cut := maxLoggedImage
	for cut > 0 && !utf8.RuneStart(image[cut]) {
		cut--
	}
	return fmt.Sprintf("%s... (%d bytes)", image[:cut], len(image))
}

// route decides where a call goes: the catalogs' function, kpt's starlark image with a StarlarkRun,
// the fallback evaluator, or nowhere (NotFound). The image is resolved, and the call admitted,
// before its list is decoded: a request for an image nothing here runs costs no more than its bytes.
func (s *Server) route(ctx context.Context, req *evaluatorpb.EvaluateFunctionRequest, c *call) (*evaluatorpb.EvaluateFunctionResponse, error) {
	ref, err := requestImage(req.GetImage(), s.o.ImagePrefix)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	ctx, cancel := context.WithTimeout(ctx, s.o.CallTimeout)
	defer cancel()

	res, err := s.resolve(ctx, req.GetImage(), ref, c)
	switch {
	case err == nil:
		c.route = routeCatalog
		return s.evaluate(ctx, req, res, c)
	case !errors.Is(err, resolver.ErrNotFound):
		return nil, callError(ctx, codes.Unavailable, err)
	}
	if isStarlarkImage(ref) {
		resp, ran, serr := s.starlark(ctx, req, c)
		if ran {
			return resp, serr
		}
	}
	if s.o.Fallback != nil {
		c.route, c.function = routeFallback, ""
		return s.forward(ctx, req)
	}
	return nil, status.Error(codes.NotFound, err.Error())
}

// starlark runs kpt's starlark image when the request's functionConfig is a StarlarkRun with a
// script; ran is false when it is not one (the call then goes on as for any image no catalog lists).
func (s *Server) starlark(ctx context.Context, req *evaluatorpb.EvaluateFunctionRequest, c *call) (resp *evaluatorpb.EvaluateFunctionResponse, ran bool, err error) {
	size := len(req.GetResourceList())
	release, err := s.admit.admit(ctx, routeStarlark, size, callCost(size, s.o.MemoryBudget))
	if err != nil {
		c.route = routeStarlark
		return nil, true, listStatus(err)
	}
	defer release()
	rl, format, err := decodeList(ctx, req.GetResourceList())
	if err != nil {
		c.route = routeStarlark
		return nil, true, listStatus(err)
	}
	e, err := resolver.ExplicitRuntime(rl.FunctionConfig)
	if err != nil {
		c.route = routeStarlark
		return nil, true, status.Errorf(codes.InvalidArgument, "functionConfig: %v", err)
	}
	if e == nil || e.Starlark == nil || e.Starlark.Script == "" {
		return nil, false, nil
	}
	c.route, c.function = routeStarlark, "starlark"
	res := &resolver.Resolution{APIVersion: rl.FunctionConfig.GetApiVersion(), Kind: rl.FunctionConfig.GetKind(), Explicit: e}
	resp, err = s.run(ctx, req, res, rl, format, false, c)
	return resp, true, err
}

// decodeList reads a request's ResourceList. What it may cost was reserved by the call's size
// (callCost); the reader's node budget, from the same size, makes that bound hold for lists dense
// in nodes too.
func decodeList(ctx context.Context, data []byte) (*fn.ResourceList, fn.Format, error) {
	return fn.DecodeResourceListContext(ctx, data, fn.ReadLimitsFor(int64(len(data))))
}

// listStatus is the status of a request whose list could not be read: a list past its budget is
// ResourceExhausted, as the same bytes will never fit.
func listStatus(err error) error {
	code := codes.InvalidArgument
	if errors.Is(err, fn.ErrReadLimit) {
		code = codes.ResourceExhausted
	}
	return status.Errorf(code, "resource_list: %v", err)
}

func (s *Server) evaluate(ctx context.Context, req *evaluatorpb.EvaluateFunctionRequest, res *resolver.Resolution, c *call) (*evaluatorpb.EvaluateFunctionResponse, error) {
	size := len(req.GetResourceList())
	release, err := s.admit.admit(ctx, c.function, size, callCost(size, s.o.MemoryBudget))
	if err != nil {
		return nil, err
	}
	defer release()
	rl, format, skimmed, err := s.readList(ctx, req.GetResourceList())
	if err != nil {
		return nil, listStatus(err)
	}
	return s.run(ctx, req, res, rl, format, skimmed, c)
}

// readList reads a request's list: with PassThrough, where the items go to the function as they
// came, only what the call needs of it (skimList) when that can be cut out without parsing;
// skimmed says so, and the items are then not read.
func (s *Server) readList(ctx context.Context, data []byte) (rl *fn.ResourceList, format fn.Format, skimmed bool, err error) {
	if s.o.PassThrough {
		rl, format, ok, err := skimList(ctx, data)
		if err != nil || ok {
			return rl, format, ok, err
		}
	}
	rl, format, err = decodeList(ctx, data)
	return rl, format, false, err
}

// run checks the functionConfig against the function's schema and runs the function over the list.
// skimmed says the list's items were not read (readList); they are read here when needed.
func (s *Server) run(ctx context.Context, req *evaluatorpb.EvaluateFunctionRequest, res *resolver.Resolution, rl *fn.ResourceList, format fn.Format, skimmed bool, c *call) (*evaluatorpb.EvaluateFunctionResponse, error) {
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
	var (
		items  []*yaml.RNode
		runs   []fn.FunctionResults
		runErr error
		raw    []byte // what the function wrote, when it was handed the request as it came
	)
	if f, ok := step.Function.(encodedFunction); ok && s.o.PassThrough {
		raw, runs, runErr = s.passThrough(ctx, f, step.Name, req.GetResourceList(), format)
	} else {
		if skimmed {
			if rl, format, err = decodeList(ctx, req.GetResourceList()); err != nil {
				return nil, listStatus(err)
			}
			skimmed = false
		}
		items, runs, runErr = fn.Run(ctx, []fn.Step{step}, rl.Items)
	}
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
		st := status.New(callCode(ctx, codes.Internal, runErr), failureMessage(logImage(req.GetImage()), run, runErr))
		if skimmed {
			// the details carry the list with its items: read them now, on this rarer path
			if whole, _, err := decodeList(ctx, req.GetResourceList()); err == nil {
				rl = whole
			}
		}
		out := &fn.ResourceList{APIVersion: rl.APIVersion, Items: rl.Items, FunctionConfig: rl.FunctionConfig, Results: results}
		if data, err := out.Encode(format); err == nil {
			if withDetails, err := st.WithDetails(&evaluatorpb.EvaluateFunctionResponse{ResourceList: data, Log: log}); err == nil {
				st = withDetails
			}
		}
		return nil, st.Err()
	}
	if raw != nil {
		return &evaluatorpb.EvaluateFunctionResponse{ResourceList: raw, Log: log}, nil
	}
	out := &fn.ResourceList{APIVersion: rl.APIVersion, Items: items, FunctionConfig: rl.FunctionConfig, Results: results}
	data, err := out.Encode(format)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "encode the output: %v", err)
	}
	return &evaluatorpb.EvaluateFunctionResponse{ResourceList: data, Log: log}, nil
}

// encodedFunction is a runtime that can be handed a list as it came and answer with what the
// function wrote, unread: the exec and container runtimes, and spec v2 servers. exited is whether
// the answer comes with an exit status of 0 (a process), which is then its verdict.
type encodedFunction interface {
	RunEncoded(ctx context.Context, input []byte, format fn.Format, maxOutput int) (out []byte, stderr string, exited bool, err error)
}

// passThrough runs f over the request's list as it came and answers what the function wrote, as
// Porch's own runner does: what Porch renders from it is then what it renders from its runner,
// byte for byte, the function's own formatting included (krm-catalog's reading and writing of lists
// would restore the styles of the input, which kpt's render, in Porch, does not). The output is
// still read, for the verdict every mode shares (fn.Verdict: a server's error results fail the
// call, output that is no ResourceList fails it) and for the results of a failure.
func (s *Server) passThrough(ctx context.Context, f encodedFunction, name string, input []byte, format fn.Format) ([]byte, []fn.FunctionResults, error) {
	out, stderr, exited, err := f.RunEncoded(ctx, input, format, s.o.MaxMessageSize)
	var list *fn.ResourceList
	if len(out) > 0 || err == nil {
		// only the answer's results and kind are needed here: it goes back as it came
		l, _, _, derr := s.readList(ctx, out)
		switch {
		case derr == nil:
			l.Exited, l.Stderr = exited, stderr
			list = l
		case err == nil:
			err = &fn.FunctionError{Stderr: stderr, Err: fmt.Errorf("its output: %w", derr)}
		}
	}
	code, failed := fn.Verdict(list, err)
	fr := fn.FunctionResults{Function: name, Stderr: stderr, ExitCode: code}
	if list != nil {
		fr.Results = list.Results
	}
	if failed != nil {
		return nil, []fn.FunctionResults{fr}, fmt.Errorf("%s: %w", name, failed)
	}
	return out, []fn.FunctionResults{fr}, nil
}

// resolve finds the function a trusted catalog lists for an image. Resolutions are remembered by
// what runs (cacheKey), so that the spellings of one image cost one entry, and only for images that
// resolve; an image no catalog lists is looked up anew each time.
func (s *Server) resolve(ctx context.Context, image string, ref catalog.ImageRef, c *call) (*resolver.Resolution, error) {
	key := cacheKey(ref)
	if res, ok := s.resolved.Get(key); ok {
		c.function, c.cached = functionLabel(res), true
		return res, nil
	}
	res, err := s.o.Resolver.ResolveImage(ctx, image, "")
	if err != nil {
		return nil, err
	}
	s.resolved.Add(key, res)
	c.function = functionLabel(res)
	return res, nil
}

// maxImage is the longest image reference a request may name: a registry host, a repository path
// (at most 255 characters), a tag (128) and a digest, with room to spare.
const maxImage = 1024

// requestImage parses a request's image and completes it as Porch spells images: prefix before a
// name without a slash, ":latest" when there is neither tag nor digest.
func requestImage(image, prefix string) (catalog.ImageRef, error) {
	switch {
	case image == "":
		return catalog.ImageRef{}, errors.New("image: empty")
	case len(image) > maxImage:
		return catalog.ImageRef{}, fmt.Errorf("image: %s: %d bytes, longer than any image reference (at most %d)", logImage(image), len(image), maxImage)
	}
	ref, err := catalog.ParseImage(image)
	if err != nil {
		return catalog.ImageRef{}, fmt.Errorf("image: %w", err)
	}
	return ref.Completed(prefix), nil
}

// cacheKey names what an image runs: with a digest, the repository and the digest (a tag beside a
// digest changes nothing of what runs), else the repository and the tag.
func cacheKey(ref catalog.ImageRef) string {
	if ref.Digest != "" {
		return ref.Name + "@" + ref.Digest
	}
	return ref.Name + ":" + ref.Tag
}

// isStarlarkImage reports whether an image is kpt's starlark function: any registry, any tag.
func isStarlarkImage(ref catalog.ImageRef) bool {
	return path.Base(ref.Name) == "starlark"
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
