// Command krm-catalog validates, publishes, serves and runs KRM function catalogs.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/krm-catalog/krm-catalog/cmd/krm-catalog/cmd"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cmd.Main(ctx, os.Args[1:], cmd.IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
	stop()
	os.Exit(code)
}
