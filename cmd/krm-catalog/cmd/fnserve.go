package cmd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/krm-catalog/krm-catalog/fn/evaluator"
	"github.com/krm-catalog/krm-catalog/fn/evaluator/evaluatorpb"
)

// fnServeOptions are fn serve's own flags.
type fnServeOptions struct {
	addr, metricsAddr          string
	tlsCert, tlsKey            string
	maxMessage                 int
	callTimeout, shutdownGrace time.Duration
	maxConcurrent, maxQueued   int
	logFormat, logLevel        string
}

// defaultMaxMessage is Porch's default for the function runner's messages, both ways.
const defaultMaxMessage = 6 << 20

func newFnServeCmd() *cobra.Command {
	var (
		o fnOptions
		s fnServeOptions
	)
	cmd := &cobra.Command{
		Use:   "serve --addr HOST:PORT --catalog REF --trusted-catalog REF...",
		Short: "Serve Porch's function evaluator API (gRPC), running functions found by image in catalogs",
		Long: `Serve is a function runner for Porch: it serves evaluator.FunctionEvaluator/EvaluateFunction
over gRPC (plaintext HTTP/2 unless --tls-cert and --tls-key are given), with gRPC health.

The image of a request is looked up in the trusted catalogs (the built-in one, then --catalog
in order; each must be named by --trusted-catalog): by repository and tag, or by digest, and
what runs is what the catalog pins. Exec and starlark runtimes are preferred, then a container
(--runtime forces one); spec v2 functions stay up as servers between calls. kpt's starlark image
with a StarlarkRun runs in-process. An image no trusted catalog lists is NotFound, so that a
client with several evaluators moves on to the next; a malformed ResourceList is
InvalidArgument; a failing function is Internal, on every call, whose message names every error
result and ends with the function's standard error (bounded, as Porch's runners put it), with the
ResourceList (all its results) and the function's standard error in the status details.

SIGINT or SIGTERM reports NOT_SERVING, lets calls in flight finish (--shutdown-grace), and stops.`,
		Example: `  krm-catalog fn serve --addr 127.0.0.1:9445 --catalog catalog.yaml --trusted-catalog catalog.yaml
  grpcurl -plaintext 127.0.0.1:9445 grpc.health.v1.Health/Check`,
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
	f.StringVar(&s.addr, "addr", "127.0.0.1:9445", "address to serve gRPC on")
	f.StringVar(&s.tlsCert, "tls-cert", "", "serve TLS with this certificate (PEM; with --tls-key)")
	f.StringVar(&s.tlsKey, "tls-key", "", "the private key of --tls-cert (PEM)")
	f.StringVar(&s.metricsAddr, "metrics-addr", "", "serve Prometheus metrics at http://ADDR/metrics (off when empty)")
	f.IntVar(&s.maxMessage, "max-message-size", defaultMaxMessage, "largest request or response, in bytes (Porch's default)")
	f.DurationVar(&s.callTimeout, "call-timeout", evaluator.DefaultCallTimeout, "deadline of one call, its wait for a slot included; a shorter client deadline wins")
	f.IntVar(&s.maxConcurrent, "max-concurrent", evaluator.DefaultMaxConcurrent, "calls of one function that run at once")
	f.IntVar(&s.maxQueued, "max-queued", evaluator.DefaultMaxQueued, "calls of one function that wait for a slot; past them a call is ResourceExhausted")
	f.DurationVar(&s.shutdownGrace, "shutdown-grace", 30*time.Second, "on SIGTERM, how long calls in flight may take to finish")
	f.StringVar(&s.logFormat, "log-format", "text", "log format: text or json")
	f.StringVar(&s.logLevel, "log-level", envOr("KRM_CATALOG_LOG_LEVEL", "info"), "log level: debug, info (a line per call), warn or error")
	return cmd
}

func fnServe(ctx context.Context, cmd *cobra.Command, o *fnOptions, s *fnServeOptions) error {
	logger, err := newLeveledLogger(IO{Err: cmd.ErrOrStderr()}, s.logFormat, s.logLevel)
	if err != nil {
		return usageErr(err)
	}
	var creds credentials.TransportCredentials
	switch {
	case s.tlsCert != "" && s.tlsKey != "":
		if creds, err = credentials.NewServerTLSFromFile(s.tlsCert, s.tlsKey); err != nil {
			return usageErr(fmt.Errorf("--tls-cert/--tls-key: %w", err))
		}
	case s.tlsCert != "" || s.tlsKey != "":
		return usageErr(errors.New("--tls-cert and --tls-key go together"))
	}
	o.noSkip = true
	o.prefer = []string{"exec", "starlark", "container"}
	r, err := o.runner(cmd.ErrOrStderr(), "")
	if err != nil {
		return err
	}
	defer r.Close()
	// every catalog is read now, so that an untrusted, unreachable or invalid one stops the start
	// rather than failing calls later
	for _, ref := range r.Resolver().Refs() {
		if _, err := r.Resolver().Load(ctx, ref.Raw); err != nil {
			return runExit(fmt.Errorf("catalog %s: %w", ref.Raw, err))
		}
	}

	reg := newMetricsRegistry()
	ev := evaluator.New(evaluator.Options{
		Resolver: r.Resolver(), Runner: r,
		CallTimeout: s.callTimeout, MaxConcurrent: s.maxConcurrent, MaxQueued: s.maxQueued,
		Logger: logger, Metrics: evaluator.NewMetrics(reg),
	})
	opts := []grpc.ServerOption{grpc.MaxRecvMsgSize(s.maxMessage), grpc.MaxSendMsgSize(s.maxMessage)}
	if creds != nil {
		opts = append(opts, grpc.Creds(creds))
	}
	srv := grpc.NewServer(opts...)
	evaluatorpb.RegisterFunctionEvaluatorServer(srv, ev)
	hs := health.NewServer()
	healthpb.RegisterHealthServer(srv, hs)

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
		ms := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = ms.Serve(mln) }()
		defer ms.Close()
		logger.Info("metrics", slog.String("url", "http://"+mln.Addr().String()+"/metrics"))
	}

	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	transport := "h2c"
	if creds != nil {
		transport = "tls"
	}
	logger.Info("serving evaluator.FunctionEvaluator", slog.String("addr", ln.Addr().String()), slog.String("transport", transport),
		slog.Int("catalogs", len(r.Resolver().Refs())))
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
