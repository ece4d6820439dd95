package runner

import (
	"context"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/catalog"
	"github.com/krm-catalog/krm-catalog/fn"
	"github.com/krm-catalog/krm-catalog/fn/fntest"
	"github.com/krm-catalog/krm-catalog/fn/runtime/starlark"
)

func parse(t testing.TB, s string) *yaml.RNode {
	t.Helper()
	n, err := yaml.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// skipped reports whether a step's results say it was skipped.
func skipped(r fn.FunctionResults) bool {
	return slices.ContainsFunc(r.Results, func(res fn.Result) bool { return res.Message == SkippedMessage })
}

func TestItemsDigest(t *testing.T) {
	t.Parallel()
	const base = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a # comment\n  annotations:\n    config.kubernetes.io/path: a.yaml\ndata: {x: '1', y: '2'}\n"
	tests := []struct {
		name, other string
		same        bool
	}{
		{"identical", base, true},
		{"comments, field order and quoting", "kind: ConfigMap\napiVersion: v1\ndata:\n  y: \"2\"\n  x: '1'\nmetadata:\n  annotations:\n    config.kubernetes.io/path: a.yaml\n  name: a\n", true},
		{"tracking annotations", strings.Replace(base, "    config.kubernetes.io/path: a.yaml\n", "    config.kubernetes.io/path: a.yaml\n    config.kubernetes.io/index: '3'\n    internal.config.kubernetes.io/id: '7'\n", 1), true},
		{"the path in its internal spelling", strings.Replace(base, "config.kubernetes.io/path", "internal.config.kubernetes.io/path", 1), true},
		{"a value", strings.Replace(base, "y: '2'", "y: '3'", 1), false},
		{"another file", strings.Replace(base, "a.yaml", "b.yaml", 1), false},
		{"a user's annotation", strings.Replace(base, "    config.kubernetes.io/path: a.yaml\n", "    config.kubernetes.io/path: a.yaml\n    example.com/x: y\n", 1), false},
	}
	d0, err := itemsDigest([]*yaml.RNode{parse(t, base)})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		d, err := itemsDigest([]*yaml.RNode{parse(t, tt.other)})
		if err != nil {
			t.Fatal(err)
		}
		if (d == d0) != tt.same {
			t.Errorf("%s: same digest %v, want %v", tt.name, d == d0, tt.same)
		}
	}
	// what has the same digest has the same identities, so that the identities may rule a list out
	ids0 := identitiesDigest([]*yaml.RNode{parse(t, base)})
	for _, tt := range tests {
		if ids := identitiesDigest([]*yaml.RNode{parse(t, tt.other)}); tt.same && ids != ids0 {
			t.Errorf("%s: the same digest, other identities", tt.name)
		}
	}
	for _, other := range []string{strings.Replace(base, "name: a", "name: b", 1), strings.Replace(base, "  name: a", "  namespace: x\n  name: a", 1),
		strings.Replace(base, "kind: ConfigMap", "kind: Secret", 1), strings.Replace(base, "v1", "v2", 1)} {
		if identitiesDigest([]*yaml.RNode{parse(t, other)}) == ids0 {
			t.Errorf("another resource has the same identities:\n%s", other)
		}
	}
	two, _ := itemsDigest([]*yaml.RNode{parse(t, base), parse(t, tests[4].other)})
	swapped, _ := itemsDigest([]*yaml.RNode{parse(t, tests[4].other), parse(t, base)})
	if two != swapped {
		t.Error("the digest of a list depends on its order")
	}
}

// counting sets a label and counts its runs: an idempotent function.
type counting struct{ runs atomic.Int32 }

func (c *counting) Run(_ context.Context, in *fn.ResourceList) (*fn.ResourceList, error) {
	c.runs.Add(1)
	for _, it := range in.Items {
		if err := it.PipeE(yaml.SetLabel("team", "platform")); err != nil {
			return nil, err
		}
	}
	return &fn.ResourceList{Items: in.Items}, nil
}

// items reads resources as a run reads a package: freshly parsed, with their path annotations.
func items(t testing.TB, text string) []*yaml.RNode {
	t.Helper()
	rl, _, err := fn.DecodeInput([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return rl.Items
}

func encode(t testing.TB, its []*yaml.RNode) string {
	t.Helper()
	var b strings.Builder
	for _, it := range its {
		b.WriteString("---\n" + it.MustString())
	}
	return b.String()
}

// TestRerunsThroughThePipeline runs steps through fn.Run, as fn run does, and re-runs them on what
// they wrote.
func TestRerunsThroughThePipeline(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := openSkipStore(t.TempDir())
	cfg := parse(t, "apiVersion: fn.example.com/v1\nkind: SetLabels\nlabels: {team: platform}\n")
	key, err := skipKey("sha256:abc", cfg)
	if err != nil {
		t.Fatal(err)
	}
	f := &counting{}
	step := fn.Step{Name: "set-labels", Function: store.wrap(f, key), Config: cfg}
	const pkg = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a # keep me\n  annotations: {config.kubernetes.io/path: a.yaml}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n  annotations: {config.kubernetes.io/path: b.yaml}\n"

	run := func(text string) (string, []fn.FunctionResults) {
		out, res, err := fn.Run(ctx, []fn.Step{step}, items(t, text))
		if err != nil {
			t.Fatal(err)
		}
		return encode(t, out), res
	}
	first, res := run(pkg)
	if f.runs.Load() != 1 || skipped(res[0]) {
		t.Fatalf("first run: %d runs, results %+v", f.runs.Load(), res)
	}
	second, res := run(first)
	if f.runs.Load() != 1 || !skipped(res[0]) || second != first {
		t.Errorf("re-run on its own output: %d runs, skipped %v, output changed %v", f.runs.Load(), skipped(res[0]), second != first)
	}
	// a record without the identities (as written before they were kept) still skips
	digest, ids := store.output(key)
	if digest == "" || ids == "" {
		t.Fatalf("the record holds digest %q, identities %q", digest, ids)
	}
	if err := os.WriteFile(store.path(key), []byte(digest+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, res = run(first); f.runs.Load() != 1 || !skipped(res[0]) {
		t.Errorf("re-run with a digest-only record: %d runs, skipped %v", f.runs.Load(), skipped(res[0]))
	}
	// a changed input runs again: its identities differ, or (a value) its digest
	if _, res = run(strings.Replace(first, "name: b", "name: c", 1)); f.runs.Load() != 2 || skipped(res[0]) {
		t.Errorf("changed input: %d runs, skipped %v", f.runs.Load(), skipped(res[0]))
	}
	if _, res = run(strings.Replace(first, "# keep me", "# keep me\n  labels: {x: y}", 1)); f.runs.Load() != 3 || skipped(res[0]) {
		t.Errorf("changed value: %d runs, skipped %v", f.runs.Load(), skipped(res[0]))
	}
	// another config is another key
	other, _ := skipKey("sha256:abc", parse(t, "apiVersion: fn.example.com/v1\nkind: SetLabels\nlabels: {team: other}\n"))
	moved, _ := skipKey("sha256:def", cfg)
	same, _ := skipKey("sha256:abc", parse(t, "kind: SetLabels # same\napiVersion: fn.example.com/v1\nlabels:\n  team: platform\n"))
	if other == key || moved == key || same != key {
		t.Errorf("keys: other config %v, other runtime %v, same config rewritten %v", other == key, moved == key, same == key)
	}
	if _, err := skipKey("", cfg); err == nil {
		t.Error("a runtime without a digest has a key")
	}
}

// BenchmarkRerunUnchanged1000 re-runs a starlark function over an unchanged 1,000-resource package:
// the baseline runs it, skip finds the input to be its earlier output. It reports the ratio.
func BenchmarkRerunUnchanged1000(b *testing.B) {
	script, err := os.ReadFile("../../examples/functions/set-annotations.star")
	if err != nil {
		b.Fatal(err)
	}
	rl, _, err := fn.DecodeInput(fntest.Deployments(1000, "ns"))
	if err != nil {
		b.Fatal(err)
	}
	cfg := parse(b, "apiVersion: fn.example.com/v1\nkind: SetAnnotations\nannotations: {owner: platform}\n")
	star := &starlark.Function{Name: "set-annotations.star", Script: string(script)}
	store := openSkipStore(b.TempDir())
	key, _ := skipKey("sha256:script", cfg)
	ctx := context.Background()
	// prime: the package as the first run wrote it
	out, _, err := fn.Run(ctx, []fn.Step{{Name: "s", Function: store.wrap(star, key), Config: cfg}}, rl.Items)
	if err != nil {
		b.Fatal(err)
	}
	written := encode(b, out)
	// each run reads the package afresh, as fn run does; only the pipeline is timed
	timeRun := func(f fn.Function) time.Duration {
		its := items(b, written)
		start := time.Now()
		_, res, err := fn.Run(ctx, []fn.Step{{Name: "s", Function: f, Config: cfg}}, its)
		d := time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		if _, ok := f.(*starlark.Function); !ok && !skipped(res[0]) {
			b.Fatal("the unchanged re-run was not skipped")
		}
		return d
	}
	var base, skipping time.Duration
	for i := 0; i < b.N; i++ {
		base += timeRun(star)
		skipping += timeRun(store.wrap(star, key))
	}
	b.ReportMetric(float64(base.Microseconds())/1000/float64(b.N), "run-ms")
	b.ReportMetric(float64(skipping.Microseconds())/1000/float64(b.N), "skip-ms")
	b.ReportMetric(float64(base)/float64(skipping), "speedup")
}

func TestRuntimeDigest(t *testing.T) {
	t.Parallel()
	v := catalog.Version{Runtime: catalog.Runtime{
		Container: &catalog.ContainerRuntime{Image: "registry.example.com/f:v1", SHA256: "aa"},
		Exec:      &catalog.ExecRuntime{Platforms: []catalog.ExecPlatform{{OS: "linux", Arch: "amd64", SHA256: "bb"}}},
		Starlark:  &catalog.StarlarkRuntime{Ref: "registry.example.com/s@sha256:cc"},
	}}
	for _, tc := range []struct{ kind, goos, want string }{
		{"container", "linux", "sha256:aa"},
		{"exec", "linux", "sha256:bb"},
		{"exec", "darwin", ""},
		{"starlark", "linux", "sha256:cc"},
		{"wasm", "linux", ""},
	} {
		if got := runtimeDigest(v, tc.kind, tc.goos, "amd64"); got != tc.want {
			t.Errorf("%s on %s: %q, want %q", tc.kind, tc.goos, got, tc.want)
		}
	}
	f := &counting{}
	store := openSkipStore(t.TempDir())
	if store.hook(f, v, "container", nil) != fn.Function(f) {
		t.Error("a version that does not say idempotent: true was wrapped")
	}
	yes := true
	v.Idempotent = &yes
	if store.hook(f, v, "container", nil) == fn.Function(f) {
		t.Error("an idempotent, pinned version was not wrapped")
	}
	v.Runtime.Container.SHA256 = ""
	if store.hook(f, v, "container", nil) != fn.Function(f) {
		t.Error("an unpinned runtime was wrapped")
	}
}
