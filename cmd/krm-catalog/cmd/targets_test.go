package cmd

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/spf13/cobra"

	"github.com/krm-catalog/krm-catalog/oci/sign"
)

var cmpSorted = cmpopts.SortSlices(func(a, b string) bool { return a < b })

// commandPaths lists every command of the tree whose flags include flag, as "parent child".
func commandPaths(t *testing.T, flag string) []string {
	t.Helper()
	var paths []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Flags().Lookup(flag) != nil && c.Runnable() {
			paths = append(paths, strings.TrimPrefix(c.CommandPath(), c.Root().Name()+" "))
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRoot(IO{}, nil))
	return paths
}

// hits is a stand-in service that counts the requests it gets and answers each with a 400, which no client retries.
func hits(t *testing.T) (url string, n *atomic.Int32) {
	t.Helper()
	n = new(atomic.Int32)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n.Add(1)
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"title":"stand-in","status":400}`))
	}))
	t.Cleanup(srv.Close)
	return srv.URL, n
}

// Every command that talks to the service reads KRM_CATALOG_SERVER, and --server wins over it.
// Not parallel: it sets the environment.
func TestClientCommandsReadTheServer(t *testing.T) {
	dir := t.TempDir()
	priv, _, err := sign.GenerateKeyPair([]byte("pw"))
	if err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(dir, "cosign.key")
	if err := os.WriteFile(key, priv, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(sign.PasswordEnv, "pw")
	t.Setenv("KRM_CATALOG_TOKEN", "krmc_test")
	const cat = "../../../catalog/testdata/reference/catalog.yaml"
	commands := map[string][]string{
		"search":            {"search", "set"},
		"publish":           {"publish", "--version", "1.0.0", cat},
		"publisher add-key": {"publisher", "add-key", "--publisher", "example.com", "--key", key},
		"catalog propose":   {"catalog", "propose", "platform", "../../../catalog/testdata/valid/01-definition-container.yaml"},
		"catalog proposals": {"catalog", "proposals", "platform"},
		"catalog approve":   {"catalog", "approve", "--version", "1.0.1", "platform", "1"},
		"catalog reject":    {"catalog", "reject", "--reason", "no", "platform", "1"},
		"catalog diff":      {"catalog", "diff", "--cache-dir", dir, cat, cat},
	}
	var listed []string
	for name := range commands {
		listed = append(listed, name)
	}
	if diff := cmp.Diff(commandPaths(t, "server"), listed, cmpSorted); diff != "" {
		t.Errorf("commands with --server (-have +tested):\n%s", diff)
	}
	for name, args := range commands {
		t.Run(name, func(t *testing.T) {
			envURL, envHits := hits(t)
			flagURL, flagHits := hits(t)
			t.Setenv(envServer, envURL)
			run(t, "", args...)
			if envHits.Load() == 0 {
				t.Errorf("%s did not ask the service of %s", name, envServer)
			}
			before := envHits.Load()
			run(t, "", append(slices.Clip(args), "--server", flagURL)...)
			if flagHits.Load() == 0 || envHits.Load() != before {
				t.Errorf("%s --server: %d requests to --server, %d more to %s; want --server to win", name, flagHits.Load(), envHits.Load()-before, envServer)
			}
		})
	}
}

// Commands that open the database never create one: only serve, migrate and restore do. A data
// directory without a cluster is an error naming it and where serve keeps its own, and is left
// as it was.
func TestDatabaseCommandsNeverCreateOne(t *testing.T) {
	t.Parallel()
	commands := map[string][]string{
		"token create":     {"token", "create", "--publisher", "example.com"},
		"token list":       {"token", "list", "--publisher", "example.com"},
		"token revoke":     {"token", "revoke", "--publisher", "example.com", "1"},
		"publisher grant":  {"publisher", "grant", "--publisher", "example.com", "fn.other.io"},
		"publisher revoke": {"publisher", "revoke", "--publisher", "example.com", "fn.other.io"},
		"publisher list":   {"publisher", "list"},
		"publisher retire": {"publisher", "retire", "fn.other.io", "Kind"},
		"backup":           {"backup", "out.dump"},
	}
	creators := []string{"migrate", "restore", "serve"}
	var listed []string
	for name := range commands {
		listed = append(listed, name)
	}
	listed = append(listed, creators...)
	if diff := cmp.Diff(commandPaths(t, "data-dir"), listed, cmpSorted); diff != "" {
		t.Errorf("commands with --data-dir (-have +tested):\n%s", diff)
	}
	for name, args := range commands {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dataDir := filepath.Join(t.TempDir(), "elsewhere")
			code, _, errOut := run(t, "", append(args, "--data-dir", dataDir, "--database-url", "")...)
			if code != ExitUsage || !strings.Contains(errOut, "no krm-catalog database in "+dataDir) || !strings.Contains(errOut, "krm-catalog serve") {
				t.Errorf("exit %d, stderr %q; want %d naming %s and serve", code, errOut, ExitUsage, dataDir)
			}
			if _, err := os.Stat(dataDir); !os.IsNotExist(err) {
				t.Errorf("%s was created (%v)", dataDir, err)
			}
		})
	}
}
