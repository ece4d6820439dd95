package cmd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"

	"github.com/krm-catalog/krm-catalog/fn/evaluator"
	"github.com/krm-catalog/krm-catalog/fn/evaluator/evaluatorpb"
)

// fnServeOptions are fn serve's own flags.
type fnServeOptions struct {
	addr, metricsAddr          string
	tlsCert, tlsKey            string
	maxMessage                 int
	callTimeout, shutdownGrace time.Duration
	maxConcurrent              int
	logFormat, logLevel        string

	// Porch: the fallback, image names, the queue, the transport's bounds, discovery
	fallback                    string
	imagePrefix                 string
	maxMemory, maxQueuedBytes   int64
	receiveTimeout, idleTimeout time.Duration
	maxStreams                  uint32
	maxConnections              int
	resolutionCache             int
	reflection                  bool
}

// defaultMaxMessage is Porch's default for the function runner's messages, both ways.
const defaultMaxMessage = evaluator.DefaultMaxMessageSize

// servePrefer is the order in which fn serve picks among the runtimes a function offers: an exec
// binary verified by its sha256 starts in milliseconds, and a server has no user at a terminal to
// grant a container network or mounts.
var servePrefer = []string{"exec", "starlark", "container"}

func newFnServeCmd() *cobra.Command {
	var (
		o fnOptions
		s fnServeOptions
	)
	order := strings.Join(servePrefer[:len(servePrefer)-1], ", ") + ", then " + servePrefer[len(servePrefer)-1]
	cmd := &cobra.Command{
		Use:   "serve --addr HOST:PORT --catalog REF --trusted-catalog REF... [--fallback HOST:PORT]",
		Short: "Serve Porch's function evaluator API (gRPC), running functions found by image in catalogs",
		Long: `Serve is a function runner for Porch: it serves evaluator.FunctionEvaluator/EvaluateFunction
over gRPC (plaintext HTTP/2 unless --tls-cert and --tls-key are given), with gRPC health.

The image of a request is looked up in the trusted catalogs (the built-in one, then --catalog
in order; each must be named by --trusted-catalog): by repository and tag, or by digest, and
what runs is what the catalog pins. Names are completed as Porch completes them before it
sends them (--default-image-prefix before a name without a slash, :latest when there is no tag),
on both sides: "set-labels:v0.2" in a catalog is Porch's PREFIX/set-labels:v0.2. Runtimes are
chosen in the order ` + order + ` (--runtime forces one); spec v2 functions stay up as
servers between calls. A function is handed the request's list as it came and its output is the
answer, unread, as with Porch's own runner (--yaml-wire=false instead reads the list and sends spec
v2 functions JSON). kpt's starlark image with a StarlarkRun runs in-process.

An image no trusted catalog lists goes, unchanged, to --fallback (Porch's own function runner)
when it is set, and its answer comes back as it was; without it the call is NotFound. A malformed
ResourceList or image is InvalidArgument; a failing function is Internal, on every call, whose
message names every error result and ends with the function's standard error (bounded, as Porch's
runners put it), with the ResourceList (all its results) and the function's standard error in the
status details.

Calls wait for a slot (--max-concurrent per function) and for memory (--max-memory across calls,
estimated from each request's size) until their deadline; the requests waiting hold at most
--max-queued-bytes, past which a call is ResourceExhausted at once.

SIGINT or SIGTERM reports NOT_SERVING, lets calls in flight finish (--shutdown-grace), and stops.`,
		Example: `  krm-catalog fn serve --addr 127.0.0.1:9445 --catalog catalog.yaml --trusted-catalog catalog.yaml
  krm-catalog fn serve --addr 0.0.0.0:9445 --catalog catalog.yaml --trusted-catalog catalog.yaml --fallback porch-fn-runner:9445
  krm-catalog fn health --addr 127.0.0.1:9445

  # grpcurl, from a clone of krm-catalog (the proto file is fn/evaluator/evaluatorpb/evaluator.proto;
  # or start fn serve with --reflection and leave out -import-path and -proto); bytes are base64:
  grpcurl -plaintext -import-path fn/evaluator/evaluatorpb -proto evaluator.proto \
    -d "{\"image\": \"registry.example.com/krm-fn/set-namespace:v1\", \"resource_list\": \"$(base64 -w0 list.yaml)\"}" \
    127.0.0.1:9445 evaluator.FunctionEvaluator/EvaluateFunction
  grpcurl -plaintext 127.0.0.1:9445 grpc.health.v1.Health/Check   # needs --reflection`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !cmd.Flags().Changed("server-mode") {
				o.serverMode = "always"
			}
			return runExit(fnServe(cmd.Context(), cmd, &o, &s))
		},
	}
	o.addRunFlags(cmd.Flags())
	// a server's inputs differ call by call: remembering outputs on disk would only grow the cache
	_ = cmd.Flags().MarkHidden("no-skip")
	f := cmd.Flags()
	o.yamlWire = true
	f.Lookup("yaml-wire").DefValue = "true"
	f.Lookup("yaml-wire").Usage = "hand functions the request's list as it came (YAML from Porch) and answer what they write, as Porch's runner does; false reads the list and sends JSON to the functions whose definition declares spec v2"
	f.Lookup("runtime").Usage = "runtime to use when a function offers several: container, exec or starlark (default: " + order + ")"
	f.StringVar(&s.addr, "addr", "127.0.0.1:9445", "address to serve gRPC on")
	f.StringVar(&s.tlsCert, "tls-cert", "", "serve TLS with this certificate (PEM; with --tls-key)")
	f.StringVar(&s.tlsKey, "tls-key", "", "the private key of --tls-cert (PEM)")
	f.StringVar(&s.metricsAddr, "metrics-addr", "", "serve Prometheus metrics at http://ADDR/metrics (off when empty)")
	f.IntVar(&s.maxMessage, "max-message-size", defaultMaxMessage, "largest request or response, in bytes (Porch's default), also to and from --fallback")
	f.DurationVar(&s.callTimeout, "call-timeout", evaluator.DefaultCallTimeout, "deadline of one call, its wait for a slot included, also forwarded; a shorter client deadline wins")
	f.IntVar(&s.maxConcurrent, "max-concurrent", evaluator.DefaultMaxConcurrent, "calls of one function that run at once; more wait")
	f.DurationVar(&s.shutdownGrace, "shutdown-grace", 30*time.Second, "on SIGTERM, how long calls in flight may take to finish")
	f.StringVar(&s.logFormat, "log-format", "text", "log format: text or json (every line a JSON object)")
	f.StringVar(&s.logLevel, "log-level", envOr("KRM_CATALOG_LOG_LEVEL", "info"), "log level: debug, info (a line per call), warn or error")
	// Porch: the fallback, image names, the queue, the transport's bounds, discovery
	f.StringVar(&s.fallback, "fallback", "", "forward calls for images no trusted catalog lists to this FunctionEvaluator (HOST:PORT, plaintext: Porch's function runner)")
	f.StringVar(&s.imagePrefix, "default-image-prefix", porchImagePrefix, "what Porch puts before an image name without a slash (its --default-image-prefix); catalogs' short names get it too")
	addSizeFlag(f, &s.maxMemory, "max-memory", evaluator.DefaultMemoryBudget, "memory the calls in flight may hold, estimated from their requests' sizes; a call that does not fit waits")
	addSizeFlag(f, &s.maxQueuedBytes, "max-queued-bytes", evaluator.DefaultMaxQueuedBytes, "size of the requests that may wait for a slot or memory; past it a call is ResourceExhausted")
	f.DurationVar(&s.receiveTimeout, "receive-timeout", evaluator.DefaultReceiveTimeout, "time a request may take to arrive whole; a stalled one is cancelled")
	f.Uint32Var(&s.maxStreams, "max-streams", evaluator.DefaultMaxStreams, "calls one connection may have open at once (a gRPC client waits past it)")
	f.IntVar(&s.maxConnections, "max-connections", evaluator.DefaultMaxConnections, "connections served at once; more wait to be accepted")
	f.DurationVar(&s.idleTimeout, "idle-timeout", evaluator.DefaultIdleTimeout, "close a connection that had no call for this long")
	f.IntVar(&s.resolutionCache, "resolution-cache", evaluator.DefaultResolutionCache, "images whose resolution is remembered (least recently used go first)")
	f.BoolVar(&s.reflection, "reflection", false, "serve gRPC server reflection (for grpcurl and other generic clients)")
	return cmd
}

// porchImagePrefix is the prefix Porch (kpt's runneroptions.GHCRImagePrefix) completes image names
// without a slash with, unless its --default-image-prefix says otherwise: data about Porch.
const porchImagePrefix = "ghcr.io/kptdev/krm-functions-catalog"

func fnServe(ctx context.Context, cmd *cobra.Command, o *fnOptions, s *fnServeOptions) error {
	logger, err := newLeveledLogger(IO{Err: cmd.ErrOrStderr()}, s.logFormat, s.logLevel)
	if err != nil {
		return usageErr(err)
	}
	// from here on, what goes wrong is a log record too, so that every line of a JSON log is JSON
	if err := serveEvaluator(ctx, logger, o, s); err != nil {
		logger.Error("fn serve: " + err.Error())
		var ee *exitError
		if errors.As(runExit(err), &ee) {
			return &exitError{code: ee.code}
		}
		return failure(nil)
	}
	return nil
}

// serverGC paces the collector for a server rather than a pipeline (the runner's krmfn.TuneGC lets
// the heap grow to five times what is live, which makes a fast run; a server's heap is what its
// clients send it): the default pace, and a soft limit 256 MiB above what the calls in flight may
// hold. GOGC and GOMEMLIMIT, when set, win.
func serverGC(maxMemory int64) {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(100)
	}
	if _, set := os.LookupEnv("GOMEMLIMIT"); !set {
		debug.SetMemoryLimit(maxMemory + 256<<20)
	}
}

func serveEvaluator(ctx context.Context, logger *slog.Logger, o *fnOptions, s *fnServeOptions) error {
	var creds credentials.TransportCredentials
	var err error
	switch {
	case s.tlsCert != "" && s.tlsKey != "":
		if creds, err = credentials.NewServerTLSFromFile(s.tlsCert, s.tlsKey); err != nil {
			return usageErr(fmt.Errorf("--tls-cert/--tls-key: %w", err))
		}
	case s.tlsCert != "" || s.tlsKey != "":
		return usageErr(errors.New("--tls-cert and --tls-key go together"))
	}
	o.noSkip = true
	o.prefer = servePrefer
	o.shortImagePrefix = s.imagePrefix
	// a call's standard error travels in its answer; the rest (function servers' own messages)
	// becomes log records, escaped and bounded
	o.quietCalls = true
	r, err := o.runner(evaluator.NewStderrLog(logger), "")
	if err != nil {
		return err
	}
	defer r.Close()
	serverGC(s.maxMemory)
	// every catalog is read now, so that an untrusted, unreachable or invalid one stops the start
	// rather than failing calls later
	for _, ref := range r.Resolver().Refs() {
		if _, err := r.Resolver().Load(ctx, ref.Raw); err != nil {
			return fmt.Errorf("catalog %s: %w", ref.Raw, err)
		}
	}

	reg := newMetricsRegistry()
	metrics := evaluator.NewMetrics(reg)
	var fallback evaluatorpb.FunctionEvaluatorClient
	if s.fallback != "" {
		// Porch's runner serves plaintext HTTP/2, as Porch dials it
		conn, err := grpc.NewClient(s.fallback, grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(s.maxMessage), grpc.MaxCallSendMsgSize(s.maxMessage)))
		if err != nil {
			return usageErr(fmt.Errorf("--fallback: %w", err))
		}
		defer conn.Close()
		fallback = evaluatorpb.NewFunctionEvaluatorClient(conn)
	}
	ev := evaluator.New(evaluator.Options{
		Resolver: r.Resolver(), Runner: r, Fallback: fallback, ImagePrefix: s.imagePrefix,
		CallTimeout: s.callTimeout, MaxConcurrent: s.maxConcurrent,
		MemoryBudget: s.maxMemory, MaxQueuedBytes: s.maxQueuedBytes, ResolutionCache: s.resolutionCache,
		PassThrough: o.yamlWire, MaxMessageSize: s.maxMessage,
		Logger: logger, Metrics: metrics,
	})
	transport := evaluator.Transport{
		MaxMessageSize: s.maxMessage, ReceiveTimeout: s.receiveTimeout, MaxStreams: s.maxStreams,
		MaxConnections: s.maxConnections, IdleTimeout: s.idleTimeout, Logger: logger, Metrics: metrics,
	}
	opts := transport.ServerOptions()
	if creds != nil {
		opts = append(opts, grpc.Creds(creds))
	}
	srv := grpc.NewServer(opts...)
	evaluatorpb.RegisterFunctionEvaluatorServer(srv, ev)
	hs := health.NewServer()
	healthpb.RegisterHealthServer(srv, hs)
	if s.reflection {
		reflection.Register(srv)
	}

	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return usageErr(fmt.Errorf("--addr: %w", err))
	}
	if s.metricsAddr != "" {
		mln, err := net.Listen("tcp", s.metricsAddr)
		if err != nil {
			ln.Close()
			return usageErr(fmt.Errorf("--metrics-addr: %w", err))
		}
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		ms := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
		go func() { _ = ms.Serve(mln) }()
		defer ms.Close()
		logger.Info("metrics", slog.String("url", "http://"+mln.Addr().String()+"/metrics"))
	}

	served := make(chan error, 1)
	go func() { served <- srv.Serve(transport.Listener(ln)) }()
	wire := "h2c"
	if creds != nil {
		wire = "tls"
	}
	attrs := []any{slog.String("addr", ln.Addr().String()), slog.String("transport", wire), slog.Int("catalogs", len(r.Resolver().Refs()))}
	if s.fallback != "" {
		attrs = append(attrs, slog.String("fallback", s.fallback))
	}
	logger.Info("serving evaluator.FunctionEvaluator", attrs...)
	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	logger.Info("shutting down: finishing calls in flight")
	hs.Shutdown()
	stopped := make(chan struct{})
	go func() { srv.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(s.shutdownGrace):
		logger.Warn("calls still running after --shutdown-grace: stopping them")
		srv.Stop()
		<-stopped
	}
	logger.Info("stopped")
	return nil
}
