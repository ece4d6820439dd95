package server_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/fn"
	"github.com/krm-catalog/krm-catalog/fn/fntest"
	"github.com/krm-catalog/krm-catalog/fn/runtime/exec"
	"github.com/krm-catalog/krm-catalog/fn/runtime/server"
)

var bins fntest.Bins

func TestMain(m *testing.M) { os.Exit(fntest.Main(m, false, &bins)) }

// countingLauncher counts launches and keeps the instances, so that tests can kill them.
type countingLauncher struct {
	server.Launcher
	mu        sync.Mutex
	instances []server.Instance
}

func (c *countingLauncher) Launch(ctx context.Context) (server.Instance, error) {
	inst, err := c.Launcher.Launch(ctx)
	if err == nil {
		c.mu.Lock()
		c.instances = append(c.instances, inst)
		c.mu.Unlock()
	}
	return inst, err
}

func (c *countingLauncher) launches() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.instances)
}

func (c *countingLauncher) kill(t *testing.T) {
	t.Helper()
	c.mu.Lock()
	inst := c.instances[len(c.instances)-1].(*server.Process)
	c.mu.Unlock()
	if err := inst.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-inst.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the killed server did not exit")
	}
}

func list(t *testing.T, ns string) *fn.ResourceList {
	t.Helper()
	rl, _, err := fn.DecodeResourceList([]byte("kind: ResourceList\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: a\nfunctionConfig:\n  apiVersion: fn.example.com/v1\n  kind: SetNamespace\n  namespace: " + ns + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	return rl
}

func call(t *testing.T, f fn.Function, ns string) error {
	t.Helper()
	out, err := f.Run(context.Background(), list(t, ns))
	if err != nil {
		return err
	}
	if got := out.Items[0].GetNamespace(); got != ns {
		t.Fatalf("namespace = %q, want %q", got, ns)
	}
	return nil
}

func TestPoolReusesOneServer(t *testing.T) {
	t.Parallel()
	for _, format := range []fn.Format{fn.JSON, fn.YAML} {
		l := &countingLauncher{Launcher: &exec.Launcher{Path: bins.Fn["set-namespace"]}}
		pool := &server.Pool{Format: format}
		f := pool.Function("set-namespace", l, time.Minute)
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := call(t, f, "ns"+string(rune('a'+i))); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		// a second Function for the same key shares the server, as pipeline steps do
		if err := call(t, pool.Function("set-namespace", l, time.Minute), "again"); err != nil {
			t.Fatal(err)
		}
		if n := l.launches(); n != 1 {
			t.Errorf("%v: %d launches for 9 calls, want 1", format, n)
		}
		if n := pool.Running(); n != 1 {
			t.Errorf("running = %d, want 1", n)
		}
		inst := l.instances[0]
		if err := pool.Close(); err != nil {
			t.Fatal(err)
		}
		select {
		case <-inst.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("Close did not stop the server")
		}
		if err := call(t, f, "closed"); err == nil {
			t.Error("a closed pool still ran a function")
		}
	}
}

// RunEncoded posts the list as it came, in the format given, and answers the server's body unread.
func TestPoolRunEncoded(t *testing.T) {
	t.Parallel()
	pool := &server.Pool{Format: fn.JSON}
	defer pool.Close()
	f := pool.Function("set-namespace", &exec.Launcher{Path: bins.Fn["set-namespace"]}, time.Minute)
	raw, ok := f.(interface {
		RunEncoded(context.Context, []byte, fn.Format, int) ([]byte, string, bool, error)
	})
	if !ok {
		t.Fatal("a pool function does not run encoded lists")
	}
	in := "kind: ResourceList\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: a}\nfunctionConfig:\n  apiVersion: fn.example.com/v1\n  kind: SetNamespace\n  namespace: raw\n"
	out, _, exited, err := raw.RunEncoded(context.Background(), []byte(in), fn.YAML, 1<<20)
	if err != nil || exited {
		t.Fatalf("%v; exited %v, want no exit status for a server's answer", err, exited)
	}
	if s := string(out); strings.HasPrefix(s, "{") || !strings.Contains(s, "namespace: raw") {
		t.Errorf("a YAML request answered %q, want the server's YAML", s)
	}
	if _, _, _, err := raw.RunEncoded(context.Background(), []byte(in), fn.YAML, 8); err == nil {
		t.Error("an answer past the bound was accepted")
	}
}

func TestPoolRestartsOnce(t *testing.T) {
	t.Parallel()
	l := &countingLauncher{Launcher: &exec.Launcher{Path: bins.Fn["set-namespace"]}}
	pool := &server.Pool{Format: fn.JSON}
	t.Cleanup(func() { _ = pool.Close() })
	f := pool.Function("k", l, time.Minute)
	if err := call(t, f, "one"); err != nil {
		t.Fatal(err)
	}
	l.kill(t)
	if err := call(t, f, "two"); err != nil {
		t.Fatalf("after one death the server must be restarted: %v", err)
	}
	if n := l.launches(); n != 2 {
		t.Fatalf("%d launches, want 2", n)
	}
	l.kill(t)
	err := call(t, f, "three")
	if !errors.Is(err, server.ErrServerDied) || !errors.Is(err, fn.ErrFunctionFailed) {
		t.Fatalf("error after a second death = %v, want ErrServerDied", err)
	}
	if n := l.launches(); n != 2 {
		t.Errorf("%d launches, want no third", n)
	}
}

func TestPoolServerThatNeverListens(t *testing.T) {
	t.Parallel()
	// require-limits given a bad flag exits at once; here: a file that is not an executable server
	pool := &server.Pool{Format: fn.JSON, StartTimeout: 5 * time.Second}
	t.Cleanup(func() { _ = pool.Close() })
	f := pool.Function("true", &exec.Launcher{Path: "/bin/true"}, time.Minute)
	_, err := f.Run(context.Background(), list(t, "x"))
	if err == nil || !strings.Contains(err.Error(), "exited before accepting connections") {
		t.Fatalf("error = %v, want it to say the server exited", err)
	}
}

// A server's answer has no exit status, so its error results are its verdict: the example
// validator, served, fails the step on both wires, as it does as a process (exit 1) and as an
// in-process function would (fn.Verdict).
func TestServerErrorResultsFail(t *testing.T) {
	t.Parallel()
	for _, format := range []fn.Format{fn.JSON, fn.YAML} {
		t.Run(format.String(), func(t *testing.T) {
			t.Parallel()
			pool := &server.Pool{Format: format}
			t.Cleanup(func() { _ = pool.Close() })
			f := pool.Function("require-limits", &exec.Launcher{Path: bins.Fn["require-limits"]}, time.Minute)
			items, _, err := fn.DecodeResourceList([]byte("kind: ResourceList\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata:\n    name: p\n  spec:\n    containers:\n    - name: c\n      image: x\n"))
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := yaml.Parse("apiVersion: fn.example.com/v1\nkind: RequireResourceLimits\nrequire: [cpu]\n")
			if err != nil {
				t.Fatal(err)
			}
			for call := range 2 { // the call that starts the server, and a warm one
				out, runs, err := fn.Run(context.Background(), []fn.Step{{Name: "require-limits", Function: f, Config: cfg}}, items.Items)
				var re *fn.ResultsError
				if !errors.As(err, &re) || out != nil {
					t.Fatalf("call %d: error %v, output %v; want a *fn.ResultsError and no output", call, err, out)
				}
				if len(runs) != 1 || runs[0].ExitCode != 1 || len(runs[0].Results) != 1 || !strings.Contains(runs[0].Results[0].Message, `container "c" has no cpu limit`) {
					t.Fatalf("call %d: runs %+v, want exit code 1 and the error result", call, runs)
				}
			}
		})
	}
}

// flakyLauncher's first launch is a server that exits before it listens (as one whose port another
// process took between its choice and the bind); the later ones are l's.
type flakyLauncher struct {
	l        server.Launcher
	launches int
}

func (f *flakyLauncher) Launch(ctx context.Context) (server.Instance, error) {
	f.launches++
	if f.launches == 1 {
		return (&exec.Launcher{Path: "/bin/false"}).Launch(ctx)
	}
	return f.l.Launch(ctx)
}

// A server that exits before it accepts connections is launched again, and the call succeeds.
func TestPoolLaunchesAgainAServerThatExitedBeforeListening(t *testing.T) {
	t.Parallel()
	pool := &server.Pool{Format: fn.JSON}
	t.Cleanup(func() { _ = pool.Close() })
	l := &flakyLauncher{l: &exec.Launcher{Path: bins.Fn["set-namespace"]}}
	if err := call(t, pool.Function("k", l, time.Minute), "again"); err != nil {
		t.Fatal(err)
	}
	if l.launches != 2 {
		t.Errorf("%d launches, want 2", l.launches)
	}
}
