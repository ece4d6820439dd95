package cmd

import (
	"strings"
	"testing"
)

// The small conventions of a command line: --version, a suggestion for a misspelt flag, and the
// usage line after a usage error.
func TestCommandLineConventions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string // contained
		stderr string // contained
	}{
		{"--version", []string{"--version"}, ExitOK, "krm-catalog ", ""},
		{"a misspelt flag", []string{"fn", "run", "-", "--fn-confg", "x.yaml"}, ExitUsage, "", "unknown flag: --fn-confg; did you mean --fn-config?"},
		{"an unknown flag far from any", []string{"fn", "run", "-", "--zzzzzzzz"}, ExitUsage, "", "unknown flag: --zzzzzzzz\nusage: krm-catalog fn run"},
		{"too few arguments", []string{"resolve", "SetNamespace"}, ExitUsage, "", "accepts 2 arg(s), received 1\nusage: krm-catalog resolve"},
		{"a gate with nothing to verify says so", []string{"verify", t.TempDir()}, ExitOK, "", "warning: nothing to verify"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := run(t, "", tc.args...)
			if code != tc.code || !strings.Contains(stdout, tc.stdout) || !strings.Contains(stderr, tc.stderr) {
				t.Errorf("%v: exit %d\nstdout: %s\nstderr: %s\nwant exit %d, stdout with %q, stderr with %q", tc.args, code, stdout, stderr, tc.code, tc.stdout, tc.stderr)
			}
			if strings.Contains(stderr, "did you mean") && tc.name != "a misspelt flag" {
				t.Errorf("a suggestion where none is near: %s", stderr)
			}
		})
	}
}

func TestEditDistance(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		a, b string
		want int
	}{{"", "", 0}, {"fn-confg", "fn-config", 1}, {"catalog", "catalgo", 2}, {"abc", "", 3}, {"kitten", "sitting", 3}} {
		if got := editDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
