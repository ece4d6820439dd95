package cmd

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"
	"oras.land/oras-go/v2/registry/remote/credentials"

	"github.com/krm-catalog/krm-catalog/oci"
	"github.com/krm-catalog/krm-catalog/oci/sign"
)

// registryFlags are the flags every registry command shares.
type registryFlags struct {
	plainHTTP bool
	timeout   time.Duration
	format    *outputFormat
}

func (f *registryFlags) register(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&f.plainHTTP, "plain-http", false, "talk plain HTTP to the registry (automatic for localhost, 127.0.0.1 and ::1)")
	addRegistryTimeoutFlag(cmd.Flags(), &f.timeout)
	// No -o alias: pull's -o is its output directory.
	f.format = addFormatFlag(cmd, "text", "json")
}

// Whether a command reads through the cache: commands that only write to registries do not.
const (
	withCache    = true
	withoutCache = false
)

// client builds the registry client: credentials from the docker config, the cache under
// $XDG_CACHE_HOME/krm-catalog/oci when cached, and a progress display when stderr is a terminal.
func (f *registryFlags) client(cmd *cobra.Command, cached bool) (*oci.Client, error) {
	store, err := credentials.NewStoreFromDocker(credentials.StoreOptions{AllowPlaintextPut: true})
	if err != nil {
		return nil, usageErr(fmt.Errorf("docker config: %w", err))
	}
	opts := oci.Options{Credentials: store, PlainHTTP: f.plainHTTP, UserAgent: "krm-catalog/" + currentVersion().Version,
		HTTPClient: oci.NewIdleBoundedHTTPClient(f.timeout)}
	if cached {
		dir, err := oci.DefaultCacheDir()
		if err != nil {
			return nil, usageErr(err)
		}
		if opts.Cache, err = oci.OpenCache(cmd.Context(), dir); err != nil {
			return nil, usageErr(err)
		}
	}
	if isTerminal(cmd.ErrOrStderr()) {
		opts.Progress = oci.NewTerminalProgress(cmd.ErrOrStderr())
	}
	return oci.NewClient(opts), nil
}

// addRegistryTimeoutFlag adds --registry-timeout, the same on every command that reaches registries.
func addRegistryTimeoutFlag(fs *pflag.FlagSet, d *time.Duration) {
	fs.DurationVar(d, "registry-timeout", oci.DefaultIdleTimeout, "give up on a registry that sends or takes nothing for this long (a whole transfer may take longer)")
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// createdTime is SOURCE_DATE_EPOCH when set (reproducible builds), else zero, which means now.
func createdTime() (time.Time, error) {
	s := os.Getenv("SOURCE_DATE_EPOCH")
	if s == "" {
		return time.Time{}, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, usageErr(fmt.Errorf("SOURCE_DATE_EPOCH=%q is not a number of seconds", s))
	}
	return time.Unix(n, 0).UTC(), nil
}

// loadKeys reads trusted public keys (--key, repeatable).
func loadKeys(paths []string) ([]sign.PublicKey, error) {
	var keys []sign.PublicKey
	for _, p := range paths {
		k, err := sign.LoadPublicKeyFile(p)
		if err != nil {
			return nil, usageErr(err)
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// opErr turns a failed registry operation into an exit code: a bad reference is a usage error,
// anything else (network, not found, a digest or signature that does not check out) is a failure.
func opErr(err error) error {
	if errors.Is(err, oci.ErrInvalidReference) {
		return usageErr(err)
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return err
	}
	return failure(err)
}
