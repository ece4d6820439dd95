package cmd

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"
	"oras.land/oras-go/v2/registry/remote/credentials"

	"github.com/krm-catalog/krm-catalog/catalog"
	// as ident: identity names a signer's identity in this package
	ident "github.com/krm-catalog/krm-catalog/identity"
	"github.com/krm-catalog/krm-catalog/oci"
	"github.com/krm-catalog/krm-catalog/oci/sign"
	"github.com/krm-catalog/krm-catalog/server"
	"github.com/krm-catalog/krm-catalog/store"
	"github.com/krm-catalog/krm-catalog/web"
)

func newServeCmd(streams IO) *cobra.Command {
	var (
		db        = databaseFlags{create: true}
		addr      string
		maxBody   int64
		decodeMem int64
		cacheSize int64
		logFormat string
		logLevel  string
		registry  string
		plainHTTP bool
		deadlines server.Deadlines
		tlsFiles  serveTLS
		drain     time.Duration
		rootFile  string
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the catalog API, catalog.yaml endpoints and website",
		Long: `Serve runs the krm-catalog service. With neither --database-url nor DATABASE_URL it
starts a private PostgreSQL cluster in --data-dir from the machine's PostgreSQL
binaries (created on first start, reused after), applies migrations, and serves.
SIGINT or SIGTERM first makes /readyz answer 503 for --shutdown-delay while
requests are still served (so a load balancer takes the replica out before its port
closes), then stops accepting requests, lets in-flight ones finish, and stops the
cluster. On the embedded database, which no other replica shares, the delay is 0
unless set.

With --tls-cert and --tls-key it serves https:// instead of http://, and the
website's snippets name the https:// address.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			logger, err := newLeveledLogger(streams, logFormat, logLevel)
			if err != nil {
				return usageErr(err)
			}
			reg, err := registryClient(registry, plainHTTP)
			if err != nil {
				return usageErr(err)
			}
			keyless, err := keylessVerifier(rootFile)
			if err != nil {
				return usageErr(err)
			}
			if (tlsFiles.cert == "") != (tlsFiles.key == "") {
				return usageErr(errors.New("--tls-cert and --tls-key go together"))
			}
			drain = shutdownDelay(db.url, cmd.Flags().Changed("shutdown-delay"), drain)
			limits := server.DefaultLimits(runtime.GOMAXPROCS(0))
			limits.DecodeMemory = decodeMem
			if os.Getenv("GOMEMLIMIT") == "" {
				// the collector works harder as the heap nears what the service's bounded
				// consumers take (the documents being decoded and the response cache), instead of
				// letting garbage double it
				debug.SetMemoryLimit(decodeMem + cacheSize)
			}
			return serve(cmd.Context(), logger, db, addr, tlsFiles, maxBody, cacheSize, reg, registry, keyless, deadlines, drain, limits)
		},
	}
	db.register(cmd)
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8080", "address to listen on")
	cmd.Flags().StringVar(&tlsFiles.cert, "tls-cert", "", "serve https:// with this certificate (PEM, the chain after it); needs --tls-key")
	cmd.Flags().StringVar(&tlsFiles.key, "tls-key", "", "the private key (PEM) of --tls-cert")
	cmd.Flags().DurationVar(&drain, "shutdown-delay", defaultShutdownDelay, "after SIGTERM, how long /readyz answers 503 while requests are still served, before the listener closes (0: at once; on the embedded database 0 unless set)")
	cmd.Flags().Int64Var(&maxBody, "max-body", server.DefaultMaxBodyBytes, "largest request body accepted, in bytes")
	cmd.Flags().Int64Var(&cacheSize, "cache-size", 64<<20, "bytes of catalog.yaml and definition.yaml responses kept in memory")
	addSizeFlag(cmd.Flags(), &decodeMem, "decode-memory", server.DefaultDecodeMemory, "memory the documents being validated and published may take at once, estimated from what each is before it is read; past it a request waits, then gets 429")
	cmd.Flags().StringVar(&logFormat, "log-format", "text", "log format: text or json")
	cmd.Flags().StringVar(&logLevel, "log-level", envOr("KRM_CATALOG_LOG_LEVEL", "info"), "log level: debug (a line per request), info, warn or error; KRM_CATALOG_LOG_LEVEL sets the default")
	cmd.Flags().StringVar(&registry, "registry", "", "push every published catalog version to PREFIX/catalogs/NAME:VERSION and report signatures (e.g. registry.example.com/krm)")
	def := server.DefaultDeadlines()
	cmd.Flags().DurationVar(&deadlines.Read, "read-timeout", def.Read, "deadline of a GET: past it, a request waiting on the database answers 503")
	cmd.Flags().DurationVar(&deadlines.Write, "publish-timeout", def.Write, "deadline of a publish, its registry push included")
	cmd.Flags().DurationVar(&deadlines.Validate, "validate-timeout", def.Validate, "deadline of POST /api/v1/validate")
	cmd.Flags().DurationVar(&deadlines.Body, "body-timeout", def.Body, "deadline of reading a request body (408 past it); no slot of a limited class is held meanwhile")
	cmd.Flags().StringVar(&rootFile, "trusted-root", "", "verify keyless signatures and identity proofs against this Sigstore trusted_root.json (default: the public-good root built in, a dated snapshot)")
	cmd.Flags().BoolVar(&plainHTTP, "registry-plain-http", false, "talk plain HTTP to the registry (automatic for localhost and 127.0.0.1)")
	return cmd
}

// registryClient is the service's OCI client: credentials from the docker config, no cache (the
// service reads signatures, which must be fresh).
func registryClient(prefix string, plainHTTP bool) (server.Registry, error) {
	if prefix == "" {
		return nil, nil
	}
	if _, err := oci.ParseReference(strings.TrimPrefix(prefix, "oci://") + "/catalogs/x:v"); err != nil {
		return nil, fmt.Errorf("--registry %q is not a registry/repository prefix: %w", prefix, err)
	}
	creds, err := credentials.NewStoreFromDocker(credentials.StoreOptions{})
	if err != nil {
		return nil, fmt.Errorf("docker config: %w", err)
	}
	return oci.NewClient(oci.Options{Credentials: creds, PlainHTTP: plainHTTP, UserAgent: "krm-catalog/" + currentVersion().Version,
		HTTPClient: oci.NewBoundedHTTPClient(registryTimeout)}), nil
}

// keylessVerifier verifies keyless signatures against the trusted root in path, or the embedded
// public-good one.
func keylessVerifier(path string) (*ident.Verifier, error) {
	tr, err := sign.LoadTrustedRoot(path)
	if err != nil {
		return nil, err
	}
	return ident.NewVerifier(tr)
}

// registryTimeout bounds one request to the registry; a publish's push is a few of them, within
// the publish's own deadline.
const registryTimeout = 30 * time.Second

func newLeveledLogger(streams IO, format, level string) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level must be debug, info, warn or error, not %q", level)
	}
	opts := &slog.HandlerOptions{Level: lvl}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(streams.Err, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(streams.Err, opts)), nil
	}
	return nil, fmt.Errorf("--log-format must be text or json, not %q", format)
}

// envOr returns the environment variable name, or def when it is unset or empty.
// defaultShutdownDelay covers a load balancer's readiness period and the propagation of the
// replica's removal (a Kubernetes Service's endpoints take a few seconds to reach every node).
const defaultShutdownDelay = 5 * time.Second

// shutdownDelay is serve's drain: the flag's value, except on the embedded database (no URL),
// where it is 0 unless set: one replica has no load balancer to leave.
func shutdownDelay(databaseURL string, set bool, flag time.Duration) time.Duration {
	if databaseURL == "" && !set {
		return 0
	}
	return flag
}

// shutdownTimeout bounds the wait for in-flight requests once the listener is closed: the longest
// request deadline (a publish's) with room to spare.
const shutdownTimeout = 30 * time.Second

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// serveTLS names the certificate and key serve answers https:// with; empty: plain http://.
type serveTLS struct{ cert, key string }

// listen listens on addr, with TLS when t names a certificate, and returns the service's URL.
func (t serveTLS) listen(addr string) (net.Listener, string, error) {
	var cert tls.Certificate
	if t.cert != "" {
		// read first: a bad certificate should fail before a database is started for nothing
		var err error
		if cert, err = tls.LoadX509KeyPair(t.cert, t.key); err != nil {
			return nil, "", fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", fmt.Errorf("listen on %s: %w", addr, err)
	}
	if t.cert == "" {
		return ln, "http://" + ln.Addr().String(), nil
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"h2", "http/1.1"}}
	return tls.NewListener(ln, cfg), "https://" + ln.Addr().String(), nil
}

func serve(ctx context.Context, logger *slog.Logger, dbFlags databaseFlags, addr string, tlsFiles serveTLS, maxBody, cacheSize int64, registry server.Registry, registryPrefix string, keyless *ident.Verifier, deadlines server.Deadlines, drain time.Duration, limits server.Limits) error {
	// Listen first: a taken port should fail before a database is started for nothing.
	ln, url, err := tlsFiles.listen(addr)
	if err != nil {
		return usageErr(err)
	}
	defer ln.Close()
	db, err := dbFlags.open(ctx, logger)
	if err != nil {
		return usageErr(err)
	}
	defer func() {
		if err := db.Close(context.WithoutCancel(ctx)); err != nil {
			logger.Error("stop database", slog.Any("error", err))
		}
	}()
	st, err := store.OpenWith(ctx, db.URL, dbFlags.storeOptions())
	if err != nil {
		return usageErr(err)
	}
	defer st.Close()
	// migration 0006 reports, rather than guesses, groups whose owner it could not tell
	if conflicts, err := st.GroupConflicts(ctx); err == nil && len(conflicts) > 0 {
		logger.Warn("groups without a sure owner since the move to group ownership; krm-catalog publisher list shows them, publisher grant resolves them",
			slog.Int("groups", len(conflicts)))
	}
	validator, err := catalog.NewValidator()
	if err != nil {
		return err
	}
	reg := newMetricsRegistry(server.NewPoolCollector(st))
	cache := server.NewContentCache(cacheSize)
	var signatures *server.Signatures
	if registry != nil {
		signatures = server.NewSignatures(registry, st, keyless, logger)
	}
	// one set of limiters for the API and the website: a client has one budget either way
	limiters := server.NewLimiters(limits)
	site, err := web.New(web.Config{Store: st, Logger: logger, Signatures: signatures, Search: limiters.Search, Pages: limiters.Pages})
	if err != nil {
		return err
	}
	srv, err := server.New(server.Config{Store: st, Validator: validator, Logger: logger, Registry: reg, MaxBodyBytes: maxBody, Cache: cache, Mount: site.Mount,
		OCI: registry, OCIPrefix: registryPrefix, Signatures: signatures, Keyless: keyless, Deadlines: deadlines, Limiters: limiters})
	if err != nil {
		return err
	}
	listenCtx, stopListening := context.WithCancel(context.WithoutCancel(ctx))
	listenDone := make(chan struct{})
	go func() {
		defer close(listenDone)
		cache.Listen(listenCtx, st, logger)
	}()
	defer func() {
		stopListening()
		<-listenDone
	}()

	hs := &http.Server{
		Handler:           srv,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		WriteTimeout:      60 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	logger.Info("serving", slog.String("url", url), slog.String("database", db.Description),
		slog.String("next", "open "+url+"/ in a browser; Ctrl-C stops the service"))

	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	if drain > 0 {
		srv.Drain()
		logger.Info("draining: not ready, still serving", slog.Duration("for", drain))
		select {
		case <-time.After(drain):
		case err := <-served:
			return fmt.Errorf("serve: %w", err)
		}
	}
	logger.Info("shutting down: finishing in-flight requests")
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	if err := hs.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shut down: %w", err)
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	logger.Info("stopped")
	return nil
}

// newMetricsRegistry is the registry serve and fn serve expose on /metrics: the Go runtime's and
// the process's collectors, then the command's own.
func newMetricsRegistry(cs ...prometheus.Collector) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(cs...)
	return reg
}
