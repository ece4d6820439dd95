// Command krm-catalog validates, publishes, serves and runs KRM function catalogs.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/krm-catalog/krm-catalog/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], cli.IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
	stop()
	os.Exit(code)
}
