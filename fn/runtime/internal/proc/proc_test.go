package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"github.com/krm-catalog/krm-catalog/fn"
)

// The summary of a failed call keeps the cause, not docker's pointer at --help after it.
func TestLastLine(t *testing.T) {
	t.Parallel()
	tests := []struct{ stderr, want string }{
		{"one\ntwo\n", "two"},
		{"only", "only"},
		{"Unable to find image 'registry.example.com/fn:v1' locally\ndocker: Error response from daemon: Get \"https://registry.example.com/v2/\": dial tcp: lookup registry.example.com: no such host.\nSee 'docker run --help'.\n",
			"docker: Error response from daemon: Get \"https://registry.example.com/v2/\": dial tcp: lookup registry.example.com: no such host."},
		{"Error: short\nRun 'podman run --help' for more information\n", "Error: short"},
		{"See 'docker run --help'.\n", "See 'docker run --help'."},
	}
	for _, tc := range tests {
		if got := lastLine(tc.stderr); got != tc.want {
			t.Errorf("lastLine(%q) = %q, want %q", tc.stderr, got, tc.want)
		}
	}
}

// RunRaw hands back what the process wrote, and its call decodes to what Run returns.
func TestRunRaw(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	input := []byte("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: a\n")
	for _, tc := range []struct {
		name, script string
		max          int
		exit         int
	}{
		{name: "echo", script: "cat"},
		{name: "exit 3 after its output", script: "cat; echo oops >&2; exit 3", exit: 3},
		{name: "not a list", script: "echo nothing"},
		{name: "past the limit", script: "cat", max: 10, exit: -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o := Options{MaxOutput: tc.max}
			want, wantErr := Run(context.Background(), exec.Command("sh", "-c", tc.script), input, o)
			var out bytes.Buffer
			call, err := RunRaw(context.Background(), exec.Command("sh", "-c", tc.script), input, &out, o)
			if err != nil {
				t.Fatal(err)
			}
			var fe *fn.FunctionError
			if code := 0; errors.As(call.ExitErr, &fe) {
				if code = fe.ExitCode; code != tc.exit {
					t.Errorf("exit code %d, want %d", code, tc.exit)
				}
			} else if tc.exit != 0 {
				t.Errorf("ExitErr = %v, want exit code %d", call.ExitErr, tc.exit)
			}
			got, gotErr := call.Decode(out.Bytes())
			if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
				t.Errorf("error %v, Run's %v", gotErr, wantErr)
			}
			if (got == nil) != (want.List == nil) || got != nil && len(got.Items) != len(want.List.Items) {
				t.Errorf("list %+v, Run's %+v", got, want.List)
			}
		})
	}
}

// TestOutputLimit: a function's output is refused past the limit, and only past it, whether it
// goes to a memory file (read into a buffer, or copied to RunRaw's writer) or through a pipe,
// however the function writes it: in small writes, in one large write, or ignoring the failure of
// its writes.
func TestOutputLimit(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("dd"); err != nil {
		t.Skip("no dd")
	}
	const max = 10000 // not a multiple of a page
	if runtime.GOOS == "linux" {
		// else every way below would be the pipe, compared to itself
		m, err := newMemOutput(max)
		if err != nil {
			t.Fatal(err)
		}
		m.Close()
	}
	ways := []struct {
		name string
		run  func(script string) (stdout []byte, err error)
	}{
		{"memory file", func(script string) ([]byte, error) {
			out, _, err := RunEncoded(context.Background(), exec.Command("sh", "-c", script), nil, Options{MaxOutput: max})
			return out, err
		}},
		{"pipe", func(script string) ([]byte, error) {
			out, _, err := RunEncoded(context.Background(), exec.Command("sh", "-c", script), nil, Options{MaxOutput: max, pipe: true})
			return out, err
		}},
		{"memory file copied out", func(script string) ([]byte, error) {
			var out bytes.Buffer
			call, err := RunRaw(context.Background(), exec.Command("sh", "-c", script), nil, &out, Options{MaxOutput: max})
			if err != nil {
				return nil, err
			}
			return out.Bytes(), call.ExitErr
		}},
	}
	for _, tc := range []struct {
		name, script string
		wrote        int // what the output holds when it is not over the limit
		over         bool
	}{
		{name: "nothing", script: "exit 0"},
		{name: "the limit in small writes", script: "dd if=/dev/zero bs=100 count=100 2>/dev/null", wrote: max},
		{name: "one byte past it", script: "dd if=/dev/zero bs=100 count=100 2>/dev/null; printf x", over: true},
		{name: "a page past it in small writes", script: "dd if=/dev/zero bs=123 count=120 2>/dev/null", over: true},
		{name: "one large write", script: "dd if=/dev/zero bs=1048576 count=1 2>/dev/null", over: true},
		{name: "failed writes ignored", script: "dd if=/dev/zero bs=4000 count=10 2>/dev/null; exit 0", over: true},
		{name: "failed writes reported", script: "dd if=/dev/zero bs=4000 count=10 2>/dev/null || exit 4", over: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, w := range ways {
				out, err := w.run(tc.script)
				if over := err != nil && strings.Contains(err.Error(), "function output exceeds 10000 bytes"); over != tc.over {
					t.Errorf("%s: error %v; want over the limit: %v", w.name, err, tc.over)
				}
				if !tc.over && (err != nil || len(out) != tc.wrote || bytes.Count(out, []byte{0}) != len(out)) {
					t.Errorf("%s: %d bytes, error %v; want what was written", w.name, len(out), err)
				}
			}
		})
	}
}
