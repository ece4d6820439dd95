package exec

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

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
	return decodeList(t, "kind: ResourceList\nitems: []\n")
}

func decodeList(t *testing.T, doc string) *fn.ResourceList {
	t.Helper()
	rl, _, err := fn.DecodeResourceList([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return rl
}

// oneConfigMap is a list with an item, so that passing it through shows something was passed.
const oneConfigMap = `apiVersion: config.kubernetes.io/v1
kind: ResourceList
items:
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: app
  data:
    greeting: hello
`

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
		// The timeout case asserts no stderr: on a loaded machine the shell may not have written
		// anything before the deadline, and stderr pass-through is the next case's business.
		{"timeout", "exec sleep 30\n", 300 * time.Millisecond, "timed out after 300ms", "", -1},
		{"exit code and stderr", "cat >/dev/null\necho 'bad config' >&2\nexit 3\n", time.Minute, "exit status 3", "bad config\n", 3},
		{"not a ResourceList", "cat >/dev/null\necho nonsense\n", time.Minute, "its output", "", 0},
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

func TestFunctionPassesItemsThrough(t *testing.T) {
	t.Parallel()
	var stderr bytes.Buffer
	f := &Function{Path: script(t, "cat\n"), Stderr: &stderr, Timeout: time.Minute, Format: fn.JSON}
	in := decodeList(t, oneConfigMap)
	want, err := in.Encode(fn.YAML)
	if err != nil {
		t.Fatal(err)
	}
	out, err := f.Run(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	got, err := out.Encode(fn.YAML)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("a function that copies stdin to stdout changed the list (-want +got):\n%s", diff)
	}
	if stderr.Len() != 0 {
		t.Errorf("stderr = %q, want nothing", stderr.String())
	}
}

// An exec function gets PATH, the locale, an empty HOME and TMPDIR of its own, and what was passed
// explicitly; the caller's credentials and the server-mode address do not reach it, and its home is
// removed after the call.
func TestFunctionEnvironment(t *testing.T) {
	// not parallel: it sets variables of the test process
	t.Setenv("AWS_SECRET_ACCESS_KEY", "leaked-secret")
	t.Setenv("KRM_CATALOG_TOKEN", "leaked-token")
	t.Setenv("KRM_FUNCTION_HTTP_ADDRESS", "127.0.0.1:1")
	t.Setenv("LANG", "C.UTF-8")
	t.Setenv("LC_ALL", "C")
	var stderr bytes.Buffer
	body := `env | sort >&2
echo "home-entries=$(ls -A "$HOME" | wc -l)" >&2
touch "$TMPDIR/x" && echo tmpdir-writable >&2
cat
`
	f := &Function{Path: script(t, body), Env: []string{"PASSED=by-flag"}, Stderr: &stderr, Timeout: time.Minute, Format: fn.YAML}
	if _, err := f.Run(context.Background(), emptyList(t)); err != nil {
		t.Fatal(err, stderr.String())
	}
	env := map[string]string{}
	for _, line := range strings.Split(stderr.String(), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			env[k] = v
		}
	}
	for _, name := range []string{"AWS_SECRET_ACCESS_KEY", "KRM_CATALOG_TOKEN", "KRM_FUNCTION_HTTP_ADDRESS"} {
		if v, ok := env[name]; ok {
			t.Errorf("the function saw %s=%s", name, v)
		}
	}
	for name, want := range map[string]string{"PASSED": "by-flag", "LANG": "C.UTF-8", "LC_ALL": "C", "PATH": os.Getenv("PATH"), "home-entries": "0"} {
		if env[name] != want {
			t.Errorf("%s=%q, want %q", name, env[name], want)
		}
	}
	if !strings.Contains(stderr.String(), "tmpdir-writable") {
		t.Errorf("TMPDIR is not writable:\n%s", stderr.String())
	}
	home := env["HOME"]
	if home == "" || filepath.Dir(filepath.Dir(home)) != filepath.Dir(filepath.Dir(env["TMPDIR"])) {
		t.Fatalf("HOME=%q TMPDIR=%q: want both in the call's own directory", home, env["TMPDIR"])
	}
	if _, err := os.Stat(filepath.Dir(home)); !os.IsNotExist(err) {
		t.Errorf("the function's home %s is left after the call: %v", home, err)
	}
}

// RunEncoded hands the executable the bytes as they came and answers what it wrote, unread: the
// odd spacing and quotes of both survive; a non-zero exit comes with its output; output past the
// bound fails the call.
func TestFunctionRunEncoded(t *testing.T) {
	t.Parallel()
	in := "apiVersion:   config.kubernetes.io/v1\nkind: ResourceList\nitems: [{apiVersion: v1, kind: ConfigMap, metadata: {name: 'app'}}]\n"
	echo := &Function{Path: script(t, "cat; echo '# written by the function'\necho 'to stderr' >&2\n"), Timeout: time.Minute}
	out, stderr, exited, err := echo.RunEncoded(context.Background(), []byte(in), fn.YAML, 1<<20)
	if err != nil || !exited {
		t.Fatal(err, exited)
	}
	if diff := cmp.Diff(in+"# written by the function\n", string(out)); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
	if stderr != "to stderr\n" {
		t.Errorf("stderr %q", stderr)
	}

	failing := &Function{Path: script(t, "cat; exit 3\n"), Timeout: time.Minute}
	out, _, exited, err = failing.RunEncoded(context.Background(), []byte(in), fn.YAML, 1<<20)
	var fe *fn.FunctionError
	if !errors.As(err, &fe) || fe.ExitCode != 3 || string(out) != in || exited {
		t.Errorf("a failing function: %v, output %q; want exit 3 with its output", err, out)
	}

	if _, _, _, err := echo.RunEncoded(context.Background(), []byte(in), fn.YAML, 16); err == nil || !strings.Contains(err.Error(), "exceeds 16 bytes") {
		t.Errorf("output past the bound: %v", err)
	}
}
