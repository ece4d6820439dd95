package starlark

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/fn"
)

// TestMain makes the test binary a sandbox process when started as one.
func TestMain(m *testing.M) {
	if len(os.Args) == 2 && os.Args[1] == SandboxArg {
		os.Exit(ServeSandbox(os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

func testSandbox(maxMemory int64) *Sandbox {
	return &Sandbox{Command: []string{os.Args[0], SandboxArg}, MaxMemory: maxMemory}
}

// A script that allocates without bound, in one step or in many, is stopped at the sandbox's memory
// bound with an error naming the bound and its flag; this process's memory does not grow, and the
// sandbox's peak stays near the bound.
func TestSandboxBoundsMemory(t *testing.T) {
	// not parallel: it reads this process's memory and its children's peak
	if runtime.GOOS != "linux" {
		t.Skip("the kernel bounds the sandbox's memory on Linux only")
	}
	const bound = 256 << 20
	tests := []struct{ name, script string }{
		{"a string doubled 40 times", "s = \"a\"\nfor i in range(40):\n  s = s + s\n"},
		{"one list repetition of 4 GiB", "x = [0] * (1 << 28)\n"},
		{"one builtin call", "x = list(range(1 << 28))\n"},
		{"one string method", "s = \"a\" * (1 << 26)\nt = s.replace(\"a\", \"aaaaaaaaaaaaaaaa\")\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			start := time.Now()
			_, err := (&Function{Script: tc.script, Sandbox: testSandbox(bound)}).Run(context.Background(), list(t))
			elapsed := time.Since(start)
			runtime.ReadMemStats(&after)
			if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "memory bound of 256 MiB (raise it with --starlark-max-memory)") {
				t.Fatalf("error = %v, want ErrLimit naming the memory bound", err)
			}
			if grew := int64(after.TotalAlloc - before.TotalAlloc); grew > 32<<20 {
				t.Errorf("this process allocated %d MiB for a script run in the sandbox", grew>>20)
			}
			var ru syscall.Rusage
			if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
				t.Fatal(err)
			}
			// Maxrss is in KiB; the largest of the children so far
			if peak := ru.Maxrss << 10; peak > bound+64<<20 {
				t.Errorf("a sandbox peaked at %d MiB, above its bound of %d MiB", peak>>20, bound>>20)
			}
			t.Logf("stopped after %s; sandboxes' peak so far %d MiB", elapsed.Round(time.Millisecond), ru.Maxrss>>10)
		})
	}
}

// A script's output is bounded before this process reads it, by what its input lets it write:
// ten megabytes of lists of one 0 (two million values) from a list of one resource are refused
// by their shape, and this process allocates about their bytes, not the gigabyte reading them
// would take.
func TestSandboxBoundsOutput(t *testing.T) {
	// not parallel: it reads this process's memory
	script := "ctx.resource_list[\"items\"].append({\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\", \"metadata\": {\"name\": \"big\"}, \"data\": {\"l\": [[0]] * 1000000}})\n"
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := (&Function{Script: script, Sandbox: testSandbox(0)}).Run(context.Background(), list(t))
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "the script's output is past what its input lets it write") {
		t.Fatalf("error = %v, want ErrLimit about the output", err)
	}
	if grew := int64(after.TotalAlloc - before.TotalAlloc); grew > 96<<20 {
		t.Errorf("this process allocated %d MiB to refuse the output", grew>>20)
	}
}

// In the sandbox a script does what it does in this process: the same output, error results,
// prints, and step bound.
func TestSandboxRunsScripts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, script string
		kpt          bool
		wantErr      string
	}{
		{name: "set namespace", script: setNamespace},
		{name: "strings that look like other types", script: "for r in ctx.resource_list[\"items\"]:\n  r[\"metadata\"][\"annotations\"] = {\"n\": \"0\", \"b\": \"yes\", \"t\": \"12:30\", \"i\": 1}\n"},
		{name: "new resource and results", script: "ctx.resource_list[\"items\"].append({\"apiVersion\": \"v1\", \"kind\": \"ConfigMap\", \"metadata\": {\"name\": \"new\"}, \"data\": {\"n\": 2}})\nctx.resource_list[\"results\"] = [{\"message\": \"done\", \"severity\": \"info\"}]\nprint(\"made\", 1)\n"},
		{name: "as kpt's function: results dropped, items sorted", kpt: true, script: "ctx.resource_list[\"items\"].append({\"apiVersion\": \"apps/v1\", \"kind\": \"Deployment\", \"metadata\": {\"name\": \"a\"}, \"spec\": {\"replicas\": 2.0}})\nctx.resource_list[\"results\"] = [{\"message\": \"dropped\", \"severity\": \"error\"}]\n"},
		{name: "fail", script: "fail(\"no way\")\n"},
		{name: "script error", script: "x = {}[\"missing\"]\n"},
		{name: "steps", script: "def f():\n  for i in range(1000000000):\n    pass\nf()\n", wantErr: "too many steps"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var inStderr, sbStderr bytes.Buffer
			want, wantErr := (&Function{Script: tc.script, MaxSteps: 10000, Stderr: &inStderr, Kpt: tc.kpt}).Run(context.Background(), list(t))
			got, gotErr := (&Function{Script: tc.script, MaxSteps: 10000, Stderr: &sbStderr, Sandbox: testSandbox(0), Kpt: tc.kpt}).Run(context.Background(), list(t))
			if tc.wantErr != "" {
				if !errors.Is(gotErr, ErrLimit) || !strings.Contains(gotErr.Error(), tc.wantErr) || wantErr == nil || gotErr.Error() != wantErr.Error() {
					t.Fatalf("sandbox error %v, in-process error %v; want the same ErrLimit about %q", gotErr, wantErr, tc.wantErr)
				}
				return
			}
			if wantErr != nil || gotErr != nil {
				t.Fatalf("in-process error %v, sandbox error %v", wantErr, gotErr)
			}
			if diff := cmp.Diff(encode(t, want), encode(t, got)); diff != "" {
				t.Errorf("sandbox output differs (-in-process +sandbox):\n%s", diff)
			}
			// the writers choose quoting by the nodes' styles and tags: the same as in-process
			if diff := cmp.Diff(styles(want), styles(got)); diff != "" {
				t.Errorf("sandbox output's styles and tags differ (-in-process +sandbox):\n%s", diff)
			}
			if diff := cmp.Diff(want.Results, got.Results, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("sandbox results differ (-in-process +sandbox):\n%s", diff)
			}
			if got.Stderr != want.Stderr {
				t.Errorf("kept prints %q, want %q", got.Stderr, want.Stderr)
			}
			if !strings.HasPrefix(sbStderr.String(), strings.SplitAfter(inStderr.String(), "\n")[0]) {
				t.Errorf("stderr %q, want what the script printed: %q", sbStderr.String(), inStderr.String())
			}
		})
	}
}

// styles lists every node's value, tag and style.
func styles(rl *fn.ResourceList) []string {
	var out []string
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		out = append(out, fmt.Sprintf("%s %s %d", n.Value, n.Tag, n.Style))
		for _, c := range n.Content {
			walk(c)
		}
	}
	for _, it := range rl.Items {
		walk(it.YNode())
	}
	return out
}

func encode(t *testing.T, rl *fn.ResourceList) string {
	t.Helper()
	b, err := rl.Encode(fn.YAML)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A sandbox that cannot start is an error naming it, not a script run without bounds.
func TestSandboxMissing(t *testing.T) {
	t.Parallel()
	_, err := (&Function{Script: setNamespace, Sandbox: &Sandbox{Command: []string{"/nonexistent/krm-catalog", SandboxArg}}}).Run(context.Background(), list(t))
	if err == nil || !strings.Contains(err.Error(), "starlark sandbox") {
		t.Fatalf("error = %v, want the sandbox named", err)
	}
}

// FuzzDecodeOutcome: a sandbox's answer comes from a process that ran someone's script.
func FuzzDecodeOutcome(f *testing.F) {
	f.Add([]byte("{}\nkind: ResourceList\nitems: []\n"))
	f.Add([]byte(`{"limit":"too many steps"}` + "\n"))
	f.Add([]byte(`{"scriptError":"fail: x","printed":"p\n"}` + "\n"))
	f.Add([]byte("not json\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		o, err := decodeOutcome(b, outputBoundOf(nil).limits)
		if err != nil {
			return
		}
		if o.List == nil && o.ScriptError == "" && o.Limit == "" && o.Failure == "" {
			t.Fatalf("decodeOutcome(%q) gave an outcome with nothing in it", b)
		}
	})
}
