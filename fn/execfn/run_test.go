package execfn

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/krm-catalog/krm-catalog/fn"
)

func script(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fn.sh")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func emptyList(t *testing.T) *fn.ResourceList {
	t.Helper()
	rl, _, err := fn.DecodeResourceList([]byte("kind: ResourceList\nitems: []\n"))
	if err != nil {
		t.Fatal(err)
	}
	return rl
}

func TestFunctionTimeoutAndStderr(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		body       string
		timeout    time.Duration
		wantErr    string
		wantStderr string
		wantCode   int
	}{
		{"timeout", "echo started >&2\nexec sleep 30\n", 300 * time.Millisecond, "timed out after 300ms", "started\n", -1},
		{"exit code and stderr", "cat >/dev/null\necho 'bad config' >&2\nexit 3\n", time.Minute, "exit status 3", "bad config\n", 3},
		{"not a ResourceList", "cat >/dev/null\necho nonsense\n", time.Minute, "its output", "", 0},
		{"passes through", "cat\n", time.Minute, "", "", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var stderr bytes.Buffer
			f := &Function{Path: script(t, tc.body), Stderr: &stderr, Timeout: tc.timeout, Format: fn.JSON}
			start := time.Now()
			_, err := f.Run(context.Background(), emptyList(t))
			if time.Since(start) > 20*time.Second {
				t.Fatalf("the call was not bounded: %s", time.Since(start))
			}
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var fe *fn.FunctionError
			if !errors.As(err, &fe) || !errors.Is(err, fn.ErrFunctionFailed) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error = %v, want a FunctionError containing %q", err, tc.wantErr)
			}
			if fe.ExitCode != tc.wantCode {
				t.Errorf("exit code %d, want %d", fe.ExitCode, tc.wantCode)
			}
			if stderr.String() != tc.wantStderr || fe.Stderr != tc.wantStderr {
				t.Errorf("stderr passed through %q, kept %q; want %q", stderr.String(), fe.Stderr, tc.wantStderr)
			}
		})
	}
}

func TestEnvironWithoutServerAddress(t *testing.T) {
	t.Setenv("KRM_FUNCTION_HTTP_ADDRESS", "127.0.0.1:1")
	for _, kv := range Environ([]string{"A=1"}) {
		if strings.HasPrefix(kv, "KRM_FUNCTION_HTTP_ADDRESS=") {
			t.Fatal("a v1 call would start the function as a server")
		}
	}
}
