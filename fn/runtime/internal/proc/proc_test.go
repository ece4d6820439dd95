package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
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
