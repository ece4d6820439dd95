package evaluator_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/catalog"
	"github.com/krm-catalog/krm-catalog/fn"
	"github.com/krm-catalog/krm-catalog/fn/evaluator"
	"github.com/krm-catalog/krm-catalog/fn/evaluator/evaluatorpb"
	"github.com/krm-catalog/krm-catalog/fn/runner"
	"github.com/krm-catalog/krm-catalog/resolver"
)

const image = "registry.example.com/fns/set-namespace:v1.0.0"

// runFunc is a function run in the test's process.
type runFunc func(ctx context.Context, in *fn.ResourceList) (*fn.ResourceList, error)

func (f runFunc) Run(ctx context.Context, in *fn.ResourceList) (*fn.ResourceList, error) {
	return f(ctx, in)
}

// catalogs lists one image.
type catalogs struct{}

func (catalogs) ResolveImage(_ context.Context, img, _ string) (*resolver.Resolution, error) {
	if img != image {
		return nil, fmt.Errorf("resolve image %s: %w", img, resolver.ErrNotFound)
	}
	return &resolver.Resolution{
		APIVersion: "fn.example.com/v1", Kind: "SetNamespace",
		Function: catalog.Function{Group: "fn.example.com", Kind: "SetNamespace"},
		Version:  catalog.Version{Name: "v1"},
	}, nil
}

// funcRunner runs f for every resolution, and counts the calls running at once.
type funcRunner struct {
	f fn.Function

	mu           sync.Mutex
	running, max int
}

func (r *funcRunner) CheckResolved(res *resolver.Resolution, _ *yaml.RNode) (*runner.Checked, []fn.Result, error) {
	return &runner.Checked{Name: res.APIVersion + " " + res.Kind}, nil, nil
}

func (r *funcRunner) Build(context.Context, *runner.Checked, string) (fn.Step, error) {
	return fn.Step{Name: "test", Function: runFunc(func(ctx context.Context, in *fn.ResourceList) (*fn.ResourceList, error) {
		r.mu.Lock()
		r.running++
		r.max = max(r.max, r.running)
		r.mu.Unlock()
		defer func() {
			r.mu.Lock()
			r.running--
			r.mu.Unlock()
		}()
		return r.f.Run(ctx, in)
	})}, nil
}

func (r *funcRunner) Running() int { return 0 }

// setNamespace sets metadata.namespace to "shop" on every item.
var setNamespace = runFunc(func(_ context.Context, in *fn.ResourceList) (*fn.ResourceList, error) {
	for _, it := range in.Items {
		if err := it.SetNamespace("shop"); err != nil {
			return nil, err
		}
	}
	return &fn.ResourceList{Items: in.Items, Stderr: "set 1 namespace\n"}, nil
})

// start serves an evaluator on 127.0.0.1 and returns a client of the generated API.
func start(t *testing.T, o evaluator.Options) evaluatorpb.FunctionEvaluatorClient {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.MaxRecvMsgSize(8 << 20))
	evaluatorpb.RegisterFunctionEvaluatorServer(srv, evaluator.New(o))
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return evaluatorpb.NewFunctionEvaluatorClient(conn)
}

const yamlList = `apiVersion: config.kubernetes.io/v1
kind: ResourceList
items:
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: cm # the config
functionConfig:
  apiVersion: fn.example.com/v1
  kind: SetNamespace
  metadata:
    name: ns
  namespace: shop
`

// denseList is a ResourceList of 64 KiB whose one item holds 32,768 values: past the node budget
// of its size (one node for every 8 bytes, at least 10,000).
var denseList = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: cm}\n  data: {k: [" +
	strings.Repeat("0,", 1<<15) + "]}\n"

func TestEvaluateFunction(t *testing.T) {
	t.Parallel()
	failing := runFunc(func(context.Context, *fn.ResourceList) (*fn.ResourceList, error) {
		return &fn.ResourceList{Results: []fn.Result{{Message: "no namespace given", Severity: fn.SeverityError}}},
			&fn.FunctionError{ExitCode: 3, Stderr: "bad config\n", Err: errors.New("exit status 3")}
	})
	tests := []struct {
		name     string
		f        fn.Function
		req      *evaluatorpb.EvaluateFunctionRequest
		code     codes.Code
		msg      string // in the status message
		wantList string // the response's resource_list (OK) or the details' (failure)
		wantLog  string
	}{
		{
			name: "listed image runs, YAML in and out, comments kept", f: setNamespace,
			req:  &evaluatorpb.EvaluateFunctionRequest{Image: image, ResourceList: []byte(yamlList)},
			code: codes.OK,
			wantList: `apiVersion: config.kubernetes.io/v1
kind: ResourceList
items:
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: cm # the config
    namespace: shop
functionConfig:
  apiVersion: fn.example.com/v1
  kind: SetNamespace
  metadata:
    name: ns
  namespace: shop
`,
			wantLog: "set 1 namespace\n",
		},
		{
			name: "JSON in, JSON out", f: setNamespace,
			req:  &evaluatorpb.EvaluateFunctionRequest{Image: image, ResourceList: []byte(`{"apiVersion":"config.kubernetes.io/v1","kind":"ResourceList","items":[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"}}]}`)},
			code: codes.OK,
			wantList: `{"apiVersion":"config.kubernetes.io/v1","kind":"ResourceList","items":[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"shop"}}]}
`,
			wantLog: "set 1 namespace\n",
		},
		{
			name: "image no catalog lists", f: setNamespace,
			req:  &evaluatorpb.EvaluateFunctionRequest{Image: "registry.example.com/fns/other:v1", ResourceList: []byte(yamlList)},
			code: codes.NotFound, msg: "function not found",
		},
		{
			name: "same repository, other tag", f: setNamespace,
			req:  &evaluatorpb.EvaluateFunctionRequest{Image: "registry.example.com/fns/set-namespace:v2.0.0", ResourceList: []byte(yamlList)},
			code: codes.NotFound,
		},
		{
			name: "no image", f: setNamespace,
			req:  &evaluatorpb.EvaluateFunctionRequest{ResourceList: []byte(yamlList)},
			code: codes.InvalidArgument, msg: "image: empty",
		},
		{
			name: "not a ResourceList", f: setNamespace,
			req:  &evaluatorpb.EvaluateFunctionRequest{Image: image, ResourceList: []byte("kind: ConfigMap\nmetadata: {name: x}\n")},
			code: codes.InvalidArgument, msg: "resource_list:",
		},
		{
			name: "a list dense in nodes past what its size may cost", f: setNamespace,
			req:  &evaluatorpb.EvaluateFunctionRequest{Image: image, ResourceList: []byte(denseList)},
			code: codes.ResourceExhausted, msg: "resource_list:",
		},
		{
			name: "failing function: Internal, the list and its results in the details", f: failing,
			req:  &evaluatorpb.EvaluateFunctionRequest{Image: image, ResourceList: []byte(yamlList)},
			code: codes.Internal, msg: "failed to evaluate function \"" + image + "\" (exit code 3) with structured results (1 error result):\n[error]: no namespace given\nand stderr:\nbad config",
			wantList: `apiVersion: config.kubernetes.io/v1
kind: ResourceList
items:
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: cm # the config
functionConfig:
  apiVersion: fn.example.com/v1
  kind: SetNamespace
  metadata:
    name: ns
  namespace: shop
results:
- message: no namespace given
  severity: error
`,
			wantLog: "bad config\n",
		},
		{
			name: "starlark image without a StarlarkRun", f: setNamespace,
			req:  &evaluatorpb.EvaluateFunctionRequest{Image: "registry.example.com/fns/starlark:v0.5", ResourceList: []byte(yamlList)},
			code: codes.NotFound,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			client := start(t, evaluator.Options{Resolver: catalogs{}, Runner: &funcRunner{f: tc.f}})
			resp, err := client.EvaluateFunction(context.Background(), tc.req)
			st := status.Convert(err)
			if st.Code() != tc.code || !strings.Contains(st.Message(), tc.msg) {
				t.Fatalf("status %v %q, want %v containing %q", st.Code(), st.Message(), tc.code, tc.msg)
			}
			if err != nil {
				resp = nil
				for _, d := range st.Details() {
					if r, ok := d.(*evaluatorpb.EvaluateFunctionResponse); ok {
						resp = r
					}
				}
				if resp == nil {
					if tc.wantList != "" {
						t.Fatalf("no EvaluateFunctionResponse in the details of %v", st)
					}
					return
				}
			}
			if diff := cmp.Diff(tc.wantList, string(resp.GetResourceList())); diff != "" {
				t.Errorf("resource_list (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantLog, string(resp.GetLog())); diff != "" {
				t.Errorf("log (-want +got):\n%s", diff)
			}
		})
	}
}

// A function that never returns ends at the call's deadline, and the client's shorter deadline
// wins over the server's.
func TestDeadlines(t *testing.T) {
	t.Parallel()
	hang := runFunc(func(ctx context.Context, _ *fn.ResourceList) (*fn.ResourceList, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	tests := []struct {
		name           string
		server, client time.Duration
	}{
		{"server deadline", 200 * time.Millisecond, time.Minute},
		{"client deadline", time.Minute, 200 * time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			client := start(t, evaluator.Options{Resolver: catalogs{}, Runner: &funcRunner{f: hang}, CallTimeout: tc.server})
			ctx, cancel := context.WithTimeout(context.Background(), tc.client)
			defer cancel()
			_, err := client.EvaluateFunction(ctx, &evaluatorpb.EvaluateFunctionRequest{Image: image, ResourceList: []byte(yamlList)})
			if code := status.Code(err); code != codes.DeadlineExceeded {
				t.Fatalf("%v, want DeadlineExceeded", err)
			}
		})
	}
}

// Calls of one function beyond MaxConcurrent wait, up to their deadline, while the requests
// waiting fit in MaxQueuedBytes; past it a call is refused at once, and counted.
func TestConcurrencyLimit(t *testing.T) {
	t.Parallel()
	size := int64(len(yamlList))
	tests := []struct {
		name                 string
		concurrent           int
		queuedBytes          int64
		calls                int
		wantMax, wantRefused int
	}{
		{"full: the third call is refused", 2, size - 1, 3, 2, 1},
		{"queued: the second call waits for the first", 1, size, 2, 1, 0},
		{"a burst waits: 100 calls, 4 at a time", 4, evaluator.DefaultMaxQueuedBytes, 100, 4, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			release := make(chan struct{})
			entered := make(chan struct{}, tc.calls)
			blocked := runFunc(func(ctx context.Context, in *fn.ResourceList) (*fn.ResourceList, error) {
				entered <- struct{}{}
				select {
				case <-release:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
				return &fn.ResourceList{Items: in.Items}, nil
			})
			r := &funcRunner{f: blocked}
			reg := prometheus.NewRegistry()
			client := start(t, evaluator.Options{Resolver: catalogs{}, Runner: r, MaxConcurrent: tc.concurrent, MaxQueuedBytes: tc.queuedBytes, Metrics: evaluator.NewMetrics(reg)})
			req := &evaluatorpb.EvaluateFunctionRequest{Image: image, ResourceList: []byte(yamlList)}
			errs := make(chan error, tc.calls)
			for range tc.concurrent {
				go func() { _, err := client.EvaluateFunction(context.Background(), req); errs <- err }()
			}
			for range tc.concurrent {
				<-entered
			}
			// every slot is taken: the rest wait while the queue has room, and are refused after
			for range tc.calls - tc.concurrent {
				go func() { _, err := client.EvaluateFunction(context.Background(), req); errs <- err }()
			}
			refused := 0
			for range tc.wantRefused {
				if err := <-errs; status.Code(err) == codes.ResourceExhausted {
					refused++
				} else {
					t.Errorf("a call past the queue: %v, want ResourceExhausted", err)
				}
			}
			// every other call is waiting before the first ones finish
			waiting := float64(int64(tc.calls-tc.concurrent-tc.wantRefused) * size)
			waitFor(t, func() bool { return gauge(t, reg, "krm_catalog_evaluator_queued_bytes") == waiting })
			close(release)
			for range tc.calls - tc.wantRefused {
				if err := <-errs; err != nil {
					t.Errorf("a call within the limits: %v", err)
				}
			}
			if r.max != tc.wantMax {
				t.Errorf("%d calls ran at once, want %d", r.max, tc.wantMax)
			}
			if got := counter(t, reg, "krm_catalog_evaluator_calls_total", "SetNamespace", "ResourceExhausted"); got != float64(refused) {
				t.Errorf("ResourceExhausted calls counted: %v, want %d", got, refused)
			}
			if got := counter(t, reg, "krm_catalog_evaluator_calls_total", "SetNamespace", "OK", "catalog"); got != float64(tc.calls-refused) {
				t.Errorf("OK calls by the catalog route: %v, want %d", got, tc.calls-refused)
			}
		})
	}
}

// The memory budget bounds the calls in flight by the size of their requests, whatever their
// function's slots: with room for one call's estimate, one runs and the others wait for memory.
func TestMemoryBudget(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	entered := make(chan struct{}, 8)
	blocked := runFunc(func(ctx context.Context, in *fn.ResourceList) (*fn.ResourceList, error) {
		entered <- struct{}{}
		<-release
		return &fn.ResourceList{Items: in.Items}, nil
	})
	r := &funcRunner{f: blocked}
	reg := prometheus.NewRegistry()
	big := yamlList + "# " + strings.Repeat("x", 64<<10) + "\n"
	client := start(t, evaluator.Options{Resolver: catalogs{}, Runner: r, MaxConcurrent: 4, MemoryBudget: 32*int64(len(big)) + (256 << 10), Metrics: evaluator.NewMetrics(reg)})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if _, err := client.EvaluateFunction(context.Background(), &evaluatorpb.EvaluateFunctionRequest{Image: image, ResourceList: []byte(big)}); err != nil {
				t.Error(err)
			}
		})
	}
	<-entered
	waitFor(t, func() bool { return gauge(t, reg, "krm_catalog_evaluator_queued_bytes") == float64(7*len(big)) })
	close(release)
	wg.Wait()
	if r.max != 1 {
		t.Errorf("%d calls ran at once within a budget for one", r.max)
	}
}

// The image is resolved, and a slot taken, before the list is decoded: an image nothing runs is
// NotFound whatever its list holds, and a call waiting for a slot has not read its list yet.
func TestResolveBeforeDecode(t *testing.T) {
	t.Parallel()
	garbage := []byte("{{{ not a list")
	client := start(t, evaluator.Options{Resolver: catalogs{}, Runner: &funcRunner{f: setNamespace}})
	_, err := client.EvaluateFunction(context.Background(), &evaluatorpb.EvaluateFunctionRequest{Image: "registry.example.com/fns/other:v1", ResourceList: garbage})
	if code := status.Code(err); code != codes.NotFound {
		t.Errorf("an unknown image with an unreadable list: %v, want NotFound (nothing decoded)", err)
	}

	release := make(chan struct{})
	entered := make(chan struct{})
	blocked := runFunc(func(ctx context.Context, in *fn.ResourceList) (*fn.ResourceList, error) {
		close(entered)
		<-release
		return &fn.ResourceList{Items: in.Items}, nil
	})
	client = start(t, evaluator.Options{Resolver: catalogs{}, Runner: &funcRunner{f: blocked}, MaxConcurrent: 1})
	first := make(chan error, 1)
	go func() {
		_, err := client.EvaluateFunction(context.Background(), &evaluatorpb.EvaluateFunctionRequest{Image: image, ResourceList: []byte(yamlList)})
		first <- err
	}()
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = client.EvaluateFunction(ctx, &evaluatorpb.EvaluateFunctionRequest{Image: image, ResourceList: garbage})
	if code := status.Code(err); code != codes.DeadlineExceeded {
		t.Errorf("a call waiting for the slot, with an unreadable list: %v, want DeadlineExceeded (still waiting, nothing decoded)", err)
	}
	close(release)
	if err := <-first; err != nil {
		t.Error(err)
	}
}

// waitFor polls cond until it holds, for at most a minute.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in a minute")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// gauge is the value of a gauge without labels.
func gauge(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return 0
}

// counter is the value of the series of a counter whose label values contain each of labels (0
// when there is none).
func counter(t *testing.T, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, m := range mf.GetMetric() {
			var values []string
			for _, l := range m.GetLabel() {
				values = append(values, l.GetValue())
			}
			all := strings.Join(values, "\x00")
			for _, l := range labels {
				if !strings.Contains(all, l) {
					continue series
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

// A failed call's status message is what Porch shows its user, and all it shows: it says why in
// full, as Porch's own runners do (every error result, with its resource, file and field, and the
// end of the function's standard error), bounded in size; the metrics count the call as failed.
func TestFailureMessage(t *testing.T) {
	t.Parallel()
	result := func(i int) fn.Result {
		return fn.Result{
			Severity:    fn.SeverityError,
			Message:     fmt.Sprintf("container %q has no cpu limit", fmt.Sprint("c", i)),
			ResourceRef: &fn.ResourceRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Namespace: "shop"},
			Field:       &fn.Field{Path: fmt.Sprintf("spec.template.spec.containers[%d].resources.limits.cpu", i)},
			File:        &fn.File{Path: "deployment.yaml"},
		}
	}
	validator := func(n int, stderr string) fn.Function {
		return runFunc(func(_ context.Context, in *fn.ResourceList) (*fn.ResourceList, error) {
			out := &fn.ResourceList{Items: in.Items, Stderr: stderr, Results: []fn.Result{{Message: "checked 1 Deployment", Severity: fn.SeverityInfo}}}
			for i := range n {
				out.Results = append(out.Results, result(i))
			}
			return out, nil // no exit status, as a spec v2 server answers: its error results fail it
		})
	}
	crash := runFunc(func(context.Context, *fn.ResourceList) (*fn.ResourceList, error) {
		return nil, &fn.FunctionError{ExitCode: 2, Stderr: "panic: nil map\n\ngoroutine 1 [running]:\nmain.main()\n", Err: errors.New("exit status 2")}
	})
	tests := []struct {
		name     string
		f        fn.Function
		want     string // the whole message, when set
		contains []string
		maxLen   int
	}{
		{
			name: "two error results from a server", f: validator(2, "serving KRM function (spec v2) on 127.0.0.1:4000\n"),
			want: "failed to evaluate function \"" + image + "\" (exit code 1) with structured results (2 error results):\n" +
				"[error] Deployment/web (namespace shop) in deployment.yaml at spec.template.spec.containers[0].resources.limits.cpu: container \"c0\" has no cpu limit\n" +
				"[error] Deployment/web (namespace shop) in deployment.yaml at spec.template.spec.containers[1].resources.limits.cpu: container \"c1\" has no cpu limit\n" +
				"and stderr:\nserving KRM function (spec v2) on 127.0.0.1:4000",
		},
		{
			name: "a crash: what ended it, and its standard error", f: crash,
			want: "failed to evaluate function \"" + image + "\" (exit code 2): test: exit status 2\nand stderr:\npanic: nil map\n\ngoroutine 1 [running]:\nmain.main()",
		},
		{
			name: "thousands of results and a long standard error: bounded, saying what was cut", f: validator(5000, strings.Repeat("x", 100)+"\n"+strings.Repeat("log line\n", 5000)+"the last line\n"),
			contains: []string{"(5000 error results):\n[error] Deployment/web", "more error results (the status details hold them all)", "and stderr:\n(the last ", "log line\nthe last line"},
			maxLen:   20 << 10,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			reg := prometheus.NewRegistry()
			client := start(t, evaluator.Options{Resolver: catalogs{}, Runner: &funcRunner{f: tc.f}, Metrics: evaluator.NewMetrics(reg)})
			for call := range 2 { // the first call and a warm one say the same
				_, err := client.EvaluateFunction(context.Background(), &evaluatorpb.EvaluateFunctionRequest{Image: image, ResourceList: []byte(yamlList)})
				st := status.Convert(err)
				if st.Code() != codes.Internal {
					t.Fatalf("call %d: %v, want Internal", call, err)
				}
				msg := st.Message()
				if tc.want != "" {
					if diff := cmp.Diff(tc.want, msg); diff != "" {
						t.Errorf("call %d: message (-want +got):\n%s", call, diff)
					}
				}
				for _, c := range tc.contains {
					if !strings.Contains(msg, c) {
						t.Errorf("call %d: message lacks %q:\n%.2000s", call, c, msg)
					}
				}
				if tc.maxLen > 0 && len(msg) > tc.maxLen {
					t.Errorf("call %d: message of %d bytes, want at most %d", call, len(msg), tc.maxLen)
				}
			}
			if got := counter(t, reg, "krm_catalog_evaluator_calls_total", "SetNamespace", "Internal"); got != 2 {
				t.Errorf("calls counted as Internal: %v, want 2", got)
			}
			if got := counter(t, reg, "krm_catalog_evaluator_calls_total", "SetNamespace", "OK"); got != 0 {
				t.Errorf("calls counted as OK: %v, want 0", got)
			}
		})
	}
}
