package cmd

import (
	"context"
	"crypto/tls"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// newFnHealthCmd is a gRPC health probe: what a manifest runs as an exec probe where it cannot use
// Kubernetes' grpc probe, with no other binary in the image.
func newFnHealthCmd() *cobra.Command {
	var (
		addr, service string
		timeout       time.Duration
		useTLS        bool
	)
	cmd := &cobra.Command{
		Use:   "health --addr HOST:PORT",
		Short: "Check a gRPC server's health (grpc.health.v1): exit 0 when it is SERVING",
		Long: `Health asks a gRPC server (fn serve, Porch's function runner) for its health over
grpc.health.v1.Health/Check and exits 0 when the answer is SERVING, 1 otherwise (NOT_SERVING,
no answer within --timeout, a refused connection). It is a probe for a manifest's exec probe:

  readinessProbe:
    exec: {command: [/krm-catalog, fn, health, --addr, "127.0.0.1:9445"]}`,
		Example: `  krm-catalog fn health --addr 127.0.0.1:9445`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return fnHealth(cmd.Context(), cmd, addr, service, timeout, useTLS)
		},
	}
	f := cmd.Flags()
	f.StringVar(&addr, "addr", "127.0.0.1:9445", "the server's address")
	f.StringVar(&service, "service", "", "the service to ask about (empty: the server as a whole)")
	f.DurationVar(&timeout, "timeout", 5*time.Second, "how long to wait for the answer, the connection included")
	f.BoolVar(&useTLS, "tls", false, "connect with TLS (the server's certificate is not verified: the probe asks a local server)")
	return cmd
}

func fnHealth(ctx context.Context, cmd *cobra.Command, addr, service string, timeout time.Duration, useTLS bool) error {
	creds := insecure.NewCredentials()
	if useTLS {
		creds = credentials.NewTLS(&tls.Config{InsecureSkipVerify: true}) // #nosec G402 -- a liveness probe of a local server
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	if err != nil {
		return usageErr(fmt.Errorf("--addr: %w", err))
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service}, grpc.WaitForReady(true))
	if err != nil {
		return failure(fmt.Errorf("health of %s: %w", addr, err))
	}
	if s := resp.GetStatus(); s != healthpb.HealthCheckResponse_SERVING {
		return failure(fmt.Errorf("health of %s: %s", addr, s))
	}
	fmt.Fprintln(cmd.OutOrStdout(), healthpb.HealthCheckResponse_SERVING)
	return nil
}
