package cmd

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/spf13/cobra"
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

// TestTopCommandNames holds topCommands' names, which newRoot matches the first argument against,
// to the commands they build.
func TestTopCommandNames(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, c := range topCommands() {
		if got := c.build(IO{}).Name(); got != c.name {
			t.Errorf("topCommands names %q a command named %q", c.name, got)
		}
		if seen[c.name] {
			t.Errorf("topCommands names %q twice", c.name)
		}
		seen[c.name] = true
	}
}

// TestOneCommandRoot: a run that builds the root with its own command alone says what a run with
// every command says, and builds that command alone.
func TestOneCommandRoot(t *testing.T) {
	t.Parallel()
	for _, c := range topCommands() {
		for _, args := range [][]string{{c.name, "--help"}, {c.name, "--no-such-flag"}} {
			var out, errOut [2]bytes.Buffer
			var code [2]int
			for i, root := range []func(IO) *cobra.Command{
				func(s IO) *cobra.Command { return newRoot(s, nil) },
				func(s IO) *cobra.Command { return newRoot(s, args) },
			} {
				s := IO{In: strings.NewReader(""), Out: &out[i], Err: &errOut[i]}
				code[i] = execute(context.Background(), root(s), args, s)
			}
			if code[0] != code[1] || out[0].String() != out[1].String() || errOut[0].String() != errOut[1].String() {
				t.Errorf("%v: every command: exit %d\n%s%s\nthe command alone: exit %d\n%s%s",
					args, code[0], out[0].String(), errOut[0].String(), code[1], out[1].String(), errOut[1].String())
			}
		}
		if n := len(newRoot(IO{}, []string{c.name}).Commands()); n != 1 {
			t.Errorf("%s: the root has %d commands, want it alone", c.name, n)
		}
	}
	if n, all := len(newRoot(IO{}, []string{"versoin"}).Commands()), len(topCommands()); n != all {
		t.Errorf("a misspelt command: the root has %d commands, want all %d (for cobra's suggestion)", n, all)
	}
}
