package runner_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/fn"
	"github.com/krm-catalog/krm-catalog/fn/fntest"
	"github.com/krm-catalog/krm-catalog/fn/runner"
	"github.com/krm-catalog/krm-catalog/resolver"
)

var bins fntest.Bins

func TestMain(m *testing.M) { os.Exit(fntest.Main(m, false, &bins)) }

func fileSum(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// version is one catalog entry for the tests: a runtime block, indented for its place.
type version struct {
	kind, runtime string
	v2            bool
}

const setNamespaceSchema = `
          schema:
            openAPIV3Schema:
              type: object
              required: [namespace]
              properties:
                namespace:
                  type: string
                  pattern: "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
                replicas:
                  type: integer
                  minimum: 1`

func catalogFile(t *testing.T, entries ...version) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("apiVersion: config.kubernetes.io/v1alpha1\nkind: KRMFunctionCatalog\nmetadata:\n  name: test\nspec:\n  krmFunctions:\n")
	for _, e := range entries {
		fmt.Fprintf(&b, "    - group: fn.example.com\n      names:\n        kind: %s\n      description: test\n      publisher: example.com\n      versions:\n        - name: v1", e.kind)
		if e.kind == "SetNamespace" {
			b.WriteString(setNamespaceSchema)
		}
		fmt.Fprintf(&b, "\n          runtime:\n%s\n", e.runtime)
		if e.v2 {
			b.WriteString("          conformWithSpecVersions: [v1, v2]\n")
		}
	}
	p := filepath.Join(t.TempDir(), "catalog.yaml")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func execRuntime(uri, sum string) string {
	return fmt.Sprintf("            exec:\n              platforms:\n                - bin: fn\n                  os: %s\n                  arch: %s\n                  uri: %s\n                  sha256: %s", runtime.GOOS, runtime.GOARCH, uri, sum)
}

func newRunner(t *testing.T, cat string, mod func(*runner.Options)) *runner.Runner {
	t.Helper()
	res, err := resolver.New(resolver.Options{Catalogs: []string{cat}, Trusted: []string{cat}, CacheDir: "-"})
	if err != nil {
		t.Fatal(err)
	}
	o := runner.Options{Resolver: res, CacheDir: t.TempDir(), Stderr: os.Stderr}
	if mod != nil {
		mod(&o)
	}
	r := runner.New(o)
	t.Cleanup(func() { _ = r.Close() })
	return r
}

func parse(t *testing.T, s string) *yaml.RNode {
	t.Helper()
	n, err := yaml.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func items(t *testing.T) []*yaml.RNode {
	t.Helper()
	return []*yaml.RNode{parse(t, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n")}
}

func TestExecFromHTTPSInServerMode(t *testing.T) {
	t.Parallel()
	srv, hits := fntest.TLSFiles(t, map[string]string{"/set-namespace": bins.Fn["set-namespace"]})
	cat := catalogFile(t, version{"SetNamespace", execRuntime(srv.URL+"/set-namespace", fileSum(t, bins.Fn["set-namespace"])), true})
	r := newRunner(t, cat, func(o *runner.Options) { o.HTTPClient = srv.Client() })
	for _, ns := range []string{"one", "two", "three"} {
		out, _, err := r.Run(context.Background(), []*yaml.RNode{parse(t, "apiVersion: fn.example.com/v1\nkind: SetNamespace\nnamespace: "+ns+"\n")}, items(t))
		if err != nil {
			t.Fatal(err)
		}
		if got := out[0].GetNamespace(); got != ns {
			t.Errorf("namespace %q, want %q", got, ns)
		}
	}
	if n := hits.Get("/set-namespace"); n != 1 {
		t.Errorf("the executable was downloaded %d times, want once", n)
	}
	if n := r.Running(); n != 1 {
		t.Errorf("%d servers running, want the one v2 server reused", n)
	}
}

func TestSchemaViolationRunsNothing(t *testing.T) {
	t.Parallel()
	srv, hits := fntest.TLSFiles(t, map[string]string{"/set-namespace": bins.Fn["set-namespace"]})
	cat := catalogFile(t, version{"SetNamespace", execRuntime(srv.URL+"/set-namespace", fileSum(t, bins.Fn["set-namespace"])), false})
	r := newRunner(t, cat, func(o *runner.Options) { o.HTTPClient = srv.Client() })
	cfgs := []*yaml.RNode{
		parse(t, "apiVersion: fn.example.com/v1\nkind: SetNamespace\nmetadata:\n  name: good\nnamespace: fine\n"),
		parse(t, "apiVersion: fn.example.com/v1\nkind: SetNamespace\nmetadata:\n  name: bad\nnamespace: Not_OK\nreplicas: 0\n"),
	}
	_, results, err := r.Run(context.Background(), cfgs, items(t))
	if !errors.Is(err, runner.ErrInvalidConfig) {
		t.Fatalf("error = %v, want ErrInvalidConfig", err)
	}
	var fields []string
	for _, fr := range results {
		for _, res := range fr.Results {
			if res.Severity != fn.SeverityError || res.ResourceRef == nil || res.ResourceRef.Name != "bad" {
				t.Errorf("result %+v", res)
			}
			fields = append(fields, res.Field.Path)
			if !strings.Contains(res.Message, res.Field.Path) {
				t.Errorf("message %q does not name the field", res.Message)
			}
		}
	}
	if diff := cmp.Diff([]string{"namespace", "replicas"}, fields); diff != "" {
		t.Errorf("fields (-want +got):\n%s", diff)
	}
	if hits.Total() != 0 {
		t.Errorf("%d downloads although a config was invalid: nothing may run", hits.Total())
	}
}

func TestTamperedExecutableNeverRuns(t *testing.T) {
	t.Parallel()
	marker := filepath.Join(t.TempDir(), "it-ran")
	evil := filepath.Join(t.TempDir(), "evil")
	script := "#!/bin/sh\ntouch " + marker + "\ncat\n"
	if err := os.WriteFile(evil, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	srv, hits := fntest.TLSFiles(t, map[string]string{"/set-namespace": evil})
	// the catalog pins the real function; the server hands out something else
	cat := catalogFile(t, version{"SetNamespace", execRuntime(srv.URL+"/set-namespace", fileSum(t, bins.Fn["set-namespace"])), false})
	cacheDir := t.TempDir()
	r := newRunner(t, cat, func(o *runner.Options) { o.HTTPClient = srv.Client(); o.CacheDir = cacheDir })
	_, _, err := r.Run(context.Background(), []*yaml.RNode{parse(t, "apiVersion: fn.example.com/v1\nkind: SetNamespace\nnamespace: x\n")}, items(t))
	if !errors.Is(err, fn.ErrDigestMismatch) {
		t.Fatalf("error = %v, want ErrDigestMismatch", err)
	}
	if hits.Total() != 1 {
		t.Fatalf("%d downloads; the test did not reach the server", hits.Total())
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the tampered executable ran: %s exists", marker)
	}
	_ = filepath.WalkDir(cacheDir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, _ := d.Info(); info.Mode()&0o111 != 0 {
				t.Errorf("an executable was left in the cache: %s", p)
			}
		}
		return nil
	})
}

func TestPermissions(t *testing.T) {
	t.Parallel()
	img := "registry.example.com/fn@sha256:" + strings.Repeat("a", 64)
	cat := catalogFile(t,
		version{"Networked", "            container:\n              image: " + img + "\n              requireNetwork: true", false},
		version{"Mounting", "            container:\n              image: " + img + "\n              requireStorageMount: true", false},
		version{"Unpinned", "            container:\n              image: registry.example.com/fn:latest", false},
	)
	explicitExec := "apiVersion: fn.example.com/v1\nkind: Local\nmetadata:\n  annotations:\n    config.kubernetes.io/function: |\n      exec:\n        path: " + bins.Fn["set-labels"] + "\nlabels:\n  a: b\n"
	tests := []struct {
		name, cfg string
		mod       func(*runner.Options)
		want      string
	}{
		{"network needs --allow-network", "apiVersion: fn.example.com/v1\nkind: Networked\n", nil, "--allow-network"},
		{"mount needs --mount", "apiVersion: fn.example.com/v1\nkind: Mounting\n", nil, "--mount"},
		{"unpinned image refused", "apiVersion: fn.example.com/v1\nkind: Unpinned\n", nil, "by digest"},
		{"explicit exec needs --allow-exec", explicitExec, nil, "--allow-exec"},
		{"explicit network needs --allow-network", "apiVersion: x/v1\nkind: K\nmetadata:\n  annotations:\n    config.kubernetes.io/function: |\n      container: {image: example.com/x:v1, network: true}\n", nil, "--allow-network"},
		{"explicit mount needs --mount", "apiVersion: x/v1\nkind: K\nmetadata:\n  annotations:\n    config.kubernetes.io/function: |\n      container: {image: example.com/x:v1, mounts: [{type: bind, src: /etc, dst: /etc}]}\n", nil, "--mount type=bind,source=/etc,target=/etc,readonly"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRunner(t, cat, tc.mod)
			_, _, err := r.Run(context.Background(), []*yaml.RNode{parse(t, tc.cfg)}, items(t))
			if !errors.Is(err, fn.ErrNotAllowed) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want ErrNotAllowed naming %q", err, tc.want)
			}
		})
	}
	r := newRunner(t, cat, func(o *runner.Options) { o.AllowExec = true })
	out, _, err := r.Run(context.Background(), []*yaml.RNode{parse(t, explicitExec)}, items(t))
	if err != nil {
		t.Fatal(err)
	}
	if out[0].GetLabels()["a"] != "b" {
		t.Errorf("explicit exec with --allow-exec did not run: %v", out[0].GetLabels())
	}
}

const annotateScript = `for it in ctx.resource_list["items"]:
    it["metadata"].setdefault("annotations", {})["by"] = "starlark"
`

func TestRuntimeChoice(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	scriptPath := filepath.Join(dir, "annotate.star")
	if err := os.WriteFile(scriptPath, []byte(annotateScript), 0o644); err != nil {
		t.Fatal(err)
	}
	srv, _ := fntest.TLSFiles(t, map[string]string{"/annotate.star": scriptPath, "/set-labels": bins.Fn["set-labels"]})
	both := execRuntime(srv.URL+"/set-labels", fileSum(t, bins.Fn["set-labels"])) +
		"\n            starlark:\n              uri: " + srv.URL + "/annotate.star\n              sha256: " + fileSum(t, scriptPath)
	named := "            container:\n              image: registry.example.com/fn/set-labels:v1\n" + execRuntime(srv.URL+"/set-labels", fileSum(t, bins.Fn["set-labels"]))
	cat := catalogFile(t, version{"Both", both, false}, version{"NamedByImage", named, false},
		version{"BadScript", "            starlark:\n              uri: " + srv.URL + "/annotate.star\n              sha256: \"" + strings.Repeat("0", 64) + "\"", false})
	cfg := "apiVersion: fn.example.com/v1\nkind: Both\nlabels:\n  by: exec\n"
	tests := []struct {
		runtime string
		check   func(*yaml.RNode) string
	}{
		{"", func(n *yaml.RNode) string { return n.GetAnnotations()["by"] }}, // starlark first
		{"starlark", func(n *yaml.RNode) string { return n.GetAnnotations()["by"] }},
		{"exec", func(n *yaml.RNode) string { return n.GetLabels()["by"] }},
	}
	for _, tc := range tests {
		r := newRunner(t, cat, func(o *runner.Options) { o.HTTPClient = srv.Client(); o.Runtime = tc.runtime })
		out, _, err := r.Run(context.Background(), []*yaml.RNode{parse(t, cfg)}, items(t))
		if err != nil {
			t.Fatalf("runtime %q: %v", tc.runtime, err)
		}
		want := tc.runtime
		if want == "" {
			want = "starlark"
		}
		if got := tc.check(out[0]); got != want {
			t.Errorf("runtime %q: ran %q", tc.runtime, got)
		}
	}
	// An image without a digest only names the function (for fn serve, Porch): the entry's exec
	// runs, and forcing the container is refused.
	byImage := "apiVersion: fn.example.com/v1\nkind: NamedByImage\nlabels:\n  by: exec\n"
	r := newRunner(t, cat, func(o *runner.Options) { o.HTTPClient = srv.Client() })
	out, _, err := r.Run(context.Background(), []*yaml.RNode{parse(t, byImage)}, items(t))
	if err != nil || out[0].GetLabels()["by"] != "exec" {
		t.Errorf("an entry with an unpinned image and exec: %v, want exec to run", err)
	}
	forced := newRunner(t, cat, func(o *runner.Options) { o.HTTPClient = srv.Client(); o.Runtime = "container" })
	if _, _, err := forced.Run(context.Background(), []*yaml.RNode{parse(t, byImage)}, items(t)); !errors.Is(err, fn.ErrNotAllowed) {
		t.Errorf("--runtime container with an unpinned image: %v, want ErrNotAllowed", err)
	}
	_, _, err = r.Run(context.Background(), []*yaml.RNode{parse(t, "apiVersion: fn.example.com/v1\nkind: BadScript\n")}, items(t))
	if !errors.Is(err, fn.ErrDigestMismatch) {
		t.Errorf("script with the wrong digest: error = %v, want ErrDigestMismatch", err)
	}
}

func TestStarlarkRunNeedsNoCatalog(t *testing.T) {
	t.Parallel()
	res, err := resolver.New(resolver.Options{CacheDir: "-"})
	if err != nil {
		t.Fatal(err)
	}
	r := runner.New(runner.Options{Resolver: res, CacheDir: t.TempDir()})
	t.Cleanup(func() { _ = r.Close() })
	cfg := parse(t, "apiVersion: fn.kpt.dev/v1alpha1\nkind: StarlarkRun\nmetadata:\n  name: ns\nsource: |\n  for it in ctx.resource_list[\"items\"]:\n      it[\"metadata\"][\"namespace\"] = ctx.resource_list[\"functionConfig\"][\"params\"][\"ns\"]\nparams:\n  ns: kpt\n")
	// kpt's other form: a ConfigMap whose data.source is the script and whose data are its params
	cm := parse(t, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: label\ndata:\n  value: from-configmap\n  source: |\n    for it in ctx.resource_list[\"items\"]:\n        it[\"metadata\"][\"labels\"] = {\"via\": ctx.resource_list[\"functionConfig\"][\"data\"][\"value\"]}\n")
	out, _, err := r.Run(context.Background(), []*yaml.RNode{cfg, cm}, items(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := out[0].GetNamespace(); got != "kpt" {
		t.Errorf("namespace %q", got)
	}
	if got := out[0].GetLabels()["via"]; got != "from-configmap" {
		t.Errorf("label %q", got)
	}
}
