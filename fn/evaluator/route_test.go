package evaluator_test

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/fn"
	"github.com/krm-catalog/krm-catalog/fn/evaluator"
	"github.com/krm-catalog/krm-catalog/fn/evaluator/evaluatorpb"
	"github.com/krm-catalog/krm-catalog/fn/runner"
	"github.com/krm-catalog/krm-catalog/resolver"
)

// porchPrefix is what Porch (kpt's runneroptions.GHCRImagePrefix) puts before an image name without
// a slash: data about Porch's behaviour, never contacted.
const porchPrefix = "ghcr.io/kptdev/krm-functions-catalog"

var (
	digestA = "sha256:" + strings.Repeat("a", 64)
	digestB = strings.Repeat("b", 64)
	digestC = strings.Repeat("c", 64)
)

// namesCatalog lists images in the spellings a catalog may use: fully named, short, untagged, and
// pinned by digest.
var namesCatalog = `apiVersion: config.kubernetes.io/v1alpha1
kind: KRMFunctionCatalog
metadata: {name: names}
spec:
  krmFunctions:
    - group: fn.example.com
      names: {kind: SetLabels}
      description: Named in full, as Porch sends it.
      publisher: example.com
      versions:
        - name: v1
          runtime: {container: {image: "` + porchPrefix + `/set-labels:v0.2.0", sha256: ` + digestB + `}}
    - group: fn.example.com
      names: {kind: SetNamespace}
      description: Named short, as a Kptfile names it.
      publisher: example.com
      versions:
        - name: v1
          runtime: {container: {image: "set-namespace:v0.4", sha256: ` + digestC + `}}
    - group: fn.example.com
      names: {kind: Untagged}
      description: Without a tag, its latest.
      publisher: example.com
      versions:
        - name: v1
          runtime: {container: {image: "` + porchPrefix + `/untagged"}}
    - group: fn.example.com
      names: {kind: Pinned}
      description: Pinned by digest.
      publisher: example.com
      versions:
        - name: v1
          runtime: {container: {image: "registry.example.com/fns/pinned:v1", sha256: "` + digestA[len("sha256:"):] + `"}}
`

// countingResolver is a real resolver over namesCatalog that counts its lookups.
type countingResolver struct {
	r *resolver.Resolver

	mu    sync.Mutex
	calls int
}

func (c *countingResolver) ResolveImage(ctx context.Context, image, kind string) (*resolver.Resolution, error) {
	c.mu.Lock()
	c.calls++
	c.mu.Unlock()
	return c.r.ResolveImage(ctx, image, kind)
}

func (c *countingResolver) lookups() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls
}

func newNamesResolver(t *testing.T) *countingResolver {
	t.Helper()
	cat := filepath.Join(t.TempDir(), "catalog.yaml")
	if err := os.WriteFile(cat, []byte(namesCatalog), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := resolver.New(resolver.Options{Catalogs: []string{cat}, Trusted: []string{cat}, CacheDir: "-", ShortImagePrefix: porchPrefix})
	if err != nil {
		t.Fatal(err)
	}
	return &countingResolver{r: r}
}

// kindRunner answers with the kind of the function each call resolved to, in the log.
type kindRunner struct{}

func (kindRunner) CheckResolved(res *resolver.Resolution, _ *yaml.RNode) (*runner.Checked, []fn.Result, error) {
	return &runner.Checked{Name: res.Kind}, nil, nil
}

func (kindRunner) Build(_ context.Context, c *runner.Checked, _ string) (fn.Step, error) {
	kind := c.Name
	return fn.Step{Name: kind, Function: runFunc(func(_ context.Context, in *fn.ResourceList) (*fn.ResourceList, error) {
		return &fn.ResourceList{Items: in.Items, Stderr: kind}, nil
	})}, nil
}

func (kindRunner) Running() int { return 0 }

// Images as Porch spells them (its prefix before a short name, ":latest" for an untagged one, tag
// and digest forms) match the catalogs' images however the catalog spells them.
func TestImageNamesAsPorchSpellsThem(t *testing.T) {
	t.Parallel()
	client := start(t, evaluator.Options{Resolver: newNamesResolver(t), Runner: kindRunner{}, ImagePrefix: porchPrefix})
	tests := []struct {
		image string
		kind  string // "" for NotFound
	}{
		{porchPrefix + "/set-labels:v0.2.0", "SetLabels"},
		{"set-labels:v0.2.0", "SetLabels"}, // a client that sends the Kptfile's spelling
		{porchPrefix + "/set-labels:v0.2", ""},
		{porchPrefix + "/set-namespace:v0.4", "SetNamespace"},
		{"set-namespace:v0.4", "SetNamespace"},
		{porchPrefix + "/untagged:latest", "Untagged"},
		{porchPrefix + "/untagged", "Untagged"},
		{"untagged", "Untagged"},
		{"registry.example.com/fns/pinned:v1", "Pinned"},
		{"registry.example.com/fns/pinned@" + digestA, "Pinned"},
		{"registry.example.com/fns/pinned:v9@" + digestA, "Pinned"}, // the digest decides
		{"registry.example.com/fns/pinned:v2", ""},
		{"registry.example.com/fns/other@" + digestA, ""},
		{"registry.example.com/library/set-namespace:v0.4", ""}, // a name with a slash stays as it is
	}
	for _, tc := range tests {
		resp, err := client.EvaluateFunction(context.Background(), &evaluatorpb.EvaluateFunctionRequest{Image: tc.image, ResourceList: []byte(yamlList)})
		switch {
		case tc.kind == "" && status.Code(err) != codes.NotFound:
			t.Errorf("%s: %v, want NotFound", tc.image, err)
		case tc.kind != "" && err != nil:
			t.Errorf("%s: %v, want %s", tc.image, err, tc.kind)
		case tc.kind != "" && string(resp.GetLog()) != tc.kind:
			t.Errorf("%s ran %s, want %s", tc.image, resp.GetLog(), tc.kind)
		}
	}
}

// The resolution cache is keyed by what runs: every spelling of a pinned image, any tag beside its
// digest, is one entry, looked up once; and it holds at most ResolutionCache entries.
func TestResolutionCache(t *testing.T) {
	t.Parallel()
	res := newNamesResolver(t)
	reg := prometheus.NewRegistry()
	client := start(t, evaluator.Options{Resolver: res, Runner: kindRunner{}, ImagePrefix: porchPrefix, ResolutionCache: 2, Metrics: evaluator.NewMetrics(reg)})
	call := func(image string) {
		t.Helper()
		if _, err := client.EvaluateFunction(context.Background(), &evaluatorpb.EvaluateFunctionRequest{Image: image, ResourceList: []byte(yamlList)}); err != nil {
			t.Fatalf("%s: %v", image, err)
		}
	}
	for i := range 200 {
		call("registry.example.com/fns/pinned:tag" + strings.Repeat("x", i%100) + "@" + digestA)
	}
	if n := res.lookups(); n != 1 {
		t.Errorf("200 spellings of one digest looked up %d times, want once", n)
	}
	// Kptfile and Porch spellings of one tag are one entry too
	call("set-labels:v0.2.0")
	call(porchPrefix + "/set-labels:v0.2.0")
	if n := res.lookups(); n != 2 {
		t.Errorf("lookups after two spellings of set-labels: %d, want 2", n)
	}
	// a third image evicts the least recently used (the pinned one)
	call("untagged")
	call("registry.example.com/fns/pinned@" + digestA)
	if n := res.lookups(); n != 4 {
		t.Errorf("lookups after an eviction: %d, want 4", n)
	}
	if got := counter(t, reg, "krm_catalog_evaluator_resolution_cache_hits_total"); got != 200 {
		t.Errorf("cache hits %v, want 200", got)
	}
}

// An image that is no image reference is InvalidArgument (a client must not retry it), and a huge
// one is neither logged nor answered whole.
func TestInvalidImages(t *testing.T) {
	t.Parallel()
	var log bytes.Buffer
	var mu sync.Mutex
	logger := slog.New(slog.NewJSONHandler(lockedWriter{&mu, &log}, nil))
	client := start(t, evaluator.Options{Resolver: newNamesResolver(t), Runner: kindRunner{}, Logger: logger})
	huge := "registry.example.com/" + strings.Repeat("a", 3<<20)
	for _, image := range []string{"Registry.Example.com/UPPER:v1", "registry.example.com/fns/x:bad tag", "fns/x@sha256:short", huge} {
		_, err := client.EvaluateFunction(context.Background(), &evaluatorpb.EvaluateFunctionRequest{Image: image, ResourceList: []byte(yamlList)})
		if code := status.Code(err); code != codes.InvalidArgument {
			t.Errorf("%.40s: %v, want InvalidArgument", image, err)
		}
		if n := len(status.Convert(err).Message()); n > 2048 {
			t.Errorf("%.40s: a status message of %d bytes", image, n)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if n := log.Len(); n > 16<<10 {
		t.Errorf("4 refused calls logged %d bytes", n)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// fallbackServer is a FunctionEvaluator that answers every call, recording what it was sent.
type fallbackServer struct {
	evaluatorpb.UnimplementedFunctionEvaluatorServer
	answer func(req *evaluatorpb.EvaluateFunctionRequest) (*evaluatorpb.EvaluateFunctionResponse, error)

	mu       sync.Mutex
	got      []*evaluatorpb.EvaluateFunctionRequest
	md       []metadata.MD
	deadline []time.Duration
}

func (f *fallbackServer) EvaluateFunction(ctx context.Context, req *evaluatorpb.EvaluateFunctionRequest) (*evaluatorpb.EvaluateFunctionResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	dl, _ := ctx.Deadline()
	f.mu.Lock()
	f.got = append(f.got, req)
	f.md = append(f.md, md)
	f.deadline = append(f.deadline, time.Until(dl))
	f.mu.Unlock()
	return f.answer(req)
}

// startFallback serves f and returns a client of it.
func startFallback(t *testing.T, f *fallbackServer) evaluatorpb.FunctionEvaluatorClient {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	evaluatorpb.RegisterFunctionEvaluatorServer(srv, f)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return evaluatorpb.NewFunctionEvaluatorClient(conn)
}

// A call for an image no catalog lists goes to the fallback unchanged, with the caller's metadata
// and the call's deadline, and its answer, success or failure with details, comes back as it was;
// the metrics say which way each call went.
func TestFallback(t *testing.T) {
	t.Parallel()
	failure, err := status.New(codes.Internal, "Failed to execute function: exit status 1 (bad config)").
		WithDetails(&evaluatorpb.EvaluateFunctionResponse{Log: []byte("details")})
	if err != nil {
		t.Fatal(err)
	}
	fb := &fallbackServer{answer: func(req *evaluatorpb.EvaluateFunctionRequest) (*evaluatorpb.EvaluateFunctionResponse, error) {
		if strings.Contains(req.GetImage(), "failing") {
			return nil, failure.Err()
		}
		return &evaluatorpb.EvaluateFunctionResponse{ResourceList: append([]byte("# from the fallback\n"), req.GetResourceList()...), Log: []byte("fallback log")}, nil
	}}
	reg := prometheus.NewRegistry()
	client := start(t, evaluator.Options{Resolver: newNamesResolver(t), Runner: kindRunner{}, ImagePrefix: porchPrefix,
		Fallback: startFallback(t, fb), CallTimeout: time.Minute, Metrics: evaluator.NewMetrics(reg)})

	// not even a ResourceList: the fallback decides
	odd := []byte("odd bytes\x00 that only the fallback reads")
	ctx := metadata.AppendToOutgoingContext(context.Background(), "traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	for _, req := range []*evaluatorpb.EvaluateFunctionRequest{
		{Image: porchPrefix + "/only-porch-knows:v1", ResourceList: odd},
		{Image: porchPrefix + "/starlark:v0.5", ResourceList: []byte(yamlList)}, // no StarlarkRun: not ours to run
	} {
		resp, err := client.EvaluateFunction(ctx, req)
		if err != nil {
			t.Fatalf("%s: %v", req.Image, err)
		}
		if diff := cmp.Diff("# from the fallback\n"+string(req.ResourceList), string(resp.GetResourceList())); diff != "" {
			t.Errorf("%s: the fallback's answer (-want +got):\n%s", req.Image, diff)
		}
		if string(resp.GetLog()) != "fallback log" {
			t.Errorf("%s: log %q", req.Image, resp.GetLog())
		}
	}
	_, err = client.EvaluateFunction(ctx, &evaluatorpb.EvaluateFunctionRequest{Image: "registry.example.com/failing:v1", ResourceList: []byte(yamlList)})
	st := status.Convert(err)
	if st.Code() != codes.Internal || st.Message() != failure.Message() || len(st.Details()) != 1 {
		t.Errorf("a failure of the fallback came back as %v %q %v, want it unchanged", st.Code(), st.Message(), st.Details())
	}
	// a listed image does not go there
	if _, err := client.EvaluateFunction(ctx, &evaluatorpb.EvaluateFunctionRequest{Image: "set-labels:v0.2.0", ResourceList: []byte(yamlList)}); err != nil {
		t.Fatal(err)
	}

	fb.mu.Lock()
	defer fb.mu.Unlock()
	if len(fb.got) != 3 {
		t.Fatalf("the fallback got %d calls, want 3", len(fb.got))
	}
	if !proto.Equal(fb.got[0], &evaluatorpb.EvaluateFunctionRequest{Image: porchPrefix + "/only-porch-knows:v1", ResourceList: odd}) {
		t.Errorf("the fallback got %v, want the request unchanged", fb.got[0])
	}
	for i, md := range fb.md {
		if got := md.Get("traceparent"); len(got) != 1 {
			t.Errorf("call %d: the caller's traceparent did not reach the fallback: %v", i, md)
		}
		if d := fb.deadline[i]; d <= 0 || d > time.Minute {
			t.Errorf("call %d: the fallback's deadline is %v away, want the call's (a minute at most)", i, d)
		}
	}
	for _, want := range []struct {
		labels []string
		n      float64
	}{
		{[]string{"fallback", "none", "OK"}, 2},
		{[]string{"fallback", "none", "Internal"}, 1},
		{[]string{"catalog", "SetLabels", "OK"}, 1},
	} {
		if got := counter(t, reg, "krm_catalog_evaluator_calls_total", want.labels...); got != want.n {
			t.Errorf("calls %v: %v, want %v", want.labels, got, want.n)
		}
	}
}

// Without a fallback an image no catalog lists is NotFound, and an unreachable fallback is
// Unavailable (the caller may retry).
func TestFallbackAbsentOrDown(t *testing.T) {
	t.Parallel()
	client := start(t, evaluator.Options{Resolver: newNamesResolver(t), Runner: kindRunner{}})
	_, err := client.EvaluateFunction(context.Background(), &evaluatorpb.EvaluateFunctionRequest{Image: "registry.example.com/unknown:v1", ResourceList: []byte(yamlList)})
	if status.Code(err) != codes.NotFound {
		t.Errorf("no fallback: %v, want NotFound", err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client = start(t, evaluator.Options{Resolver: newNamesResolver(t), Runner: kindRunner{}, Fallback: evaluatorpb.NewFunctionEvaluatorClient(conn)})
	_, err = client.EvaluateFunction(context.Background(), &evaluatorpb.EvaluateFunctionRequest{Image: "registry.example.com/unknown:v1", ResourceList: []byte(yamlList)})
	if status.Code(err) != codes.Unavailable {
		t.Errorf("a fallback that is down: %v, want Unavailable", err)
	}
}
