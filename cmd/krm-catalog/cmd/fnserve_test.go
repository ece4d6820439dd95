package cmd

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// With --log-format json every line fn serve writes is a JSON object, a failure to start included,
// and the exit status is the one the error calls for.
func TestFnServeJSONLogOnStartFailure(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "missing.yaml")
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"an unreadable catalog", []string{"--catalog", missing, "--trusted-catalog", missing}, ExitUsage, "missing.yaml"},
		{"an address taken by a bad value", []string{"--addr", "256.0.0.1:bad"}, ExitUsage, "--addr"},
		{"TLS half given", []string{"--tls-cert", "x.pem"}, ExitUsage, "--tls-cert and --tls-key go together"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"fn", "serve", "--log-format", "json", "--cache-dir", t.TempDir()}, tc.args...)
			code, _, stderr := run(t, "", args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d\n%s", code, tc.code, stderr)
			}
			if !strings.Contains(stderr, tc.want) {
				t.Errorf("stderr lacks %q:\n%s", tc.want, stderr)
			}
			for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
				var rec map[string]any
				if err := json.Unmarshal([]byte(l), &rec); err != nil {
					t.Errorf("a line that is not JSON: %q", l)
				}
			}
		})
	}
}

// The order --help gives for the runtimes is the order fn serve gives the runner.
func TestFnServeHelpRuntimeOrder(t *testing.T) {
	t.Parallel()
	_, stdout, _ := run(t, "", "fn", "serve", "--help")
	order := strings.Join(servePrefer[:len(servePrefer)-1], ", ") + ", then " + servePrefer[len(servePrefer)-1]
	if order != "exec, starlark, then container" {
		t.Errorf("fn serve prefers %v", servePrefer)
	}
	if n := strings.Count(stdout, order); n != 2 {
		t.Errorf("--help names the order %q %d times, want 2 (the description and --runtime):\n%s", order, n, stdout)
	}
}
