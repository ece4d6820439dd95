package kpt_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/krm-catalog/krm-catalog/cmd/krm-catalog/cmd"
)

// A StarlarkRun's http.star reaches the network only when the run is allowed it: fn run without
// --allow-network fails the call saying so, and sends nothing; with it, the response comes back.
// The script runs in the sandbox process, as every starlark call of the command does.
func TestStarlarkHTTPNeedsAllowNetwork(t *testing.T) {
	t.Parallel()
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		requests.Add(1)
		w.Write([]byte("pong"))
	}))
	t.Cleanup(srv.Close)
	config := filepath.Join(t.TempDir(), "probe.yaml")
	err := os.WriteFile(config, []byte("apiVersion: fn.kpt.dev/v1alpha1\nkind: StarlarkRun\nmetadata:\n  name: probe\nsource: |\n"+
		"  load(\"http.star\", \"http\")\n"+
		"  for r in ctx.resource_list[\"items\"]:\n"+
		"    r[\"data\"][\"answer\"] = http.get(\""+srv.URL+"\").body()\n"), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	for _, allow := range []bool{false, true} {
		pkg := t.TempDir()
		if err := os.WriteFile(filepath.Join(pkg, "cm.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: v\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		args := []string{"fn", "run", pkg, "--fn-config", config, "--cache-dir", filepath.Join(t.TempDir(), "cache")}
		if allow {
			args = append(args, "--allow-network")
		}
		before := requests.Load()
		var stdout, stderr bytes.Buffer
		code := cmd.Main(context.Background(), args, cmd.IO{In: strings.NewReader(""), Out: &stdout, Err: &stderr})
		got, err := os.ReadFile(filepath.Join(pkg, "cm.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if !allow {
			if code != 1 || !strings.Contains(stderr.String(), "http.get: the network is not allowed") || !strings.Contains(stderr.String(), "--allow-network") {
				t.Errorf("without --allow-network: exit %d, want 1 and the call refused naming --allow-network:\n%s", code, stderr.String())
			}
			if requests.Load() != before || strings.Contains(string(got), "answer") {
				t.Errorf("without --allow-network the request was made (%d) or written:\n%s", requests.Load()-before, got)
			}
			continue
		}
		if code != 0 || !strings.Contains(string(got), "answer: pong") || requests.Load() != before+1 {
			t.Errorf("with --allow-network: exit %d, %d requests, cm.yaml:\n%s\n%s", code, requests.Load()-before, got, stderr.String())
		}
	}
}
