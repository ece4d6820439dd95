package kpt_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/internal/cli"
)

// deadRegistry is a registry host on which nothing listens: any attempt to contact it fails.
func deadRegistry(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

func digestOf(tag string) string { return fmt.Sprintf("%064x", len(tag)*7919+int(tag[len(tag)-1])) }

// tagCatalog lists the image repo at the given tags, each pinned by a digest, as versions of one
// function.
func tagCatalog(repo string, tags ...string) string {
	var b strings.Builder
	b.WriteString("apiVersion: config.kubernetes.io/v1alpha1\nkind: KRMFunctionCatalog\nmetadata:\n  name: tags\nspec:\n  krmFunctions:\n")
	b.WriteString("    - group: fn.example.com\n      names:\n        kind: SetNamespace\n      description: sets namespaces\n      publisher: example.com\n      versions:\n")
	for i, tag := range tags {
		fmt.Fprintf(&b, "        - name: v%d\n          runtime:\n            container:\n              image: %s:%s@sha256:%s\n", i+1, repo, tag, digestOf(tag))
	}
	return b.String()
}

func TestRenderResolvesTagConstraints(t *testing.T) {
	t.Parallel()
	registry := deadRegistry(t)
	listed := registry + "/fns/set-namespace"
	unlisted := registry + "/fns/set-labels"
	tests := []struct {
		name      string
		image     string
		tag       string
		wantImage string // in renderStatus; "" when render must fail
		wantErr   string
	}{
		{name: "highest catalog version in the range, pinned", image: listed, tag: "~1.2", wantImage: listed + ":1.2.7@sha256:" + digestOf("1.2.7")},
		{name: "caret range", image: listed, tag: "^1.1", wantImage: listed + ":1.3.0@sha256:" + digestOf("1.3.0")},
		{name: "the step's own tag is replaced", image: listed + ":0.9.0", tag: "1.1.0 - 1.2.0", wantImage: listed + ":1.2.0@sha256:" + digestOf("1.2.0")},
		{name: "no catalog version matches: the registry is not asked", image: listed, tag: "~2.0", wantErr: "the trusted catalogs list 1.1.0, 1.2.0, 1.2.7, 1.3.0"},
		{name: "an image no catalog lists falls back to the registry's tags", image: unlisted, tag: "~1.2", wantErr: "list tags of " + unlisted},
		{name: "a short name is the repository the catalog lists by it", image: "set-namespace", tag: "~1.2", wantImage: listed + ":1.2.7@sha256:" + digestOf("1.2.7")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			cat := filepath.Join(dir, "catalog.yaml")
			pkg := filepath.Join(dir, "pkg")
			files := map[string]string{
				cat:                           tagCatalog(listed, "1.1.0", "1.2.0", "1.2.7", "1.3.0", "2.1.0"),
				filepath.Join(pkg, "Kptfile"): fmt.Sprintf("apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\npipeline:\n  mutators:\n    - image: %s\n      tag: %q\n      configMap:\n        namespace: staging\n", tc.image, tc.tag),
				filepath.Join(pkg, "cm.yaml"): "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n",
			}
			for p, c := range files {
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var stdout, stderr bytes.Buffer
			args := []string{"fn", "render", pkg, "--catalog", cat, "--trusted-catalog", cat, "--cache-dir", filepath.Join(dir, "cache")}
			code := cli.Main(context.Background(), args, cli.IO{In: strings.NewReader(""), Out: &stdout, Err: &stderr})
			t.Logf("exit %d\n%s", code, stderr.String())
			if tc.wantErr != "" {
				if code == 0 || !strings.Contains(stderr.String(), tc.wantErr) {
					t.Fatalf("exit %d, want a failure saying %q", code, tc.wantErr)
				}
				return
			}
			if code != 0 {
				t.Fatalf("exit %d", code)
			}
			data, err := os.ReadFile(filepath.Join(pkg, "Kptfile"))
			if err != nil {
				t.Fatal(err)
			}
			var kf struct {
				Status struct {
					RenderStatus struct {
						MutationSteps []struct {
							Image    string `yaml:"image"`
							ExitCode int    `yaml:"exitCode"`
						} `yaml:"mutationSteps"`
					} `yaml:"renderStatus"`
				} `yaml:"status"`
			}
			if err := yaml.Unmarshal(data, &kf); err != nil {
				t.Fatal(err)
			}
			steps := kf.Status.RenderStatus.MutationSteps
			if len(steps) != 1 {
				t.Fatalf("renderStatus has %d steps:\n%s", len(steps), data)
			}
			if d := cmp.Diff(tc.wantImage, steps[0].Image); d != "" {
				t.Errorf("renderStatus image (-want +got):\n%s", d)
			}
			cm, err := os.ReadFile(filepath.Join(pkg, "cm.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(cm), "namespace: staging") {
				t.Errorf("the step did not run:\n%s", cm)
			}
		})
	}
}

// A failed render names the version each step resolved to, as kpt prints it.
func TestRenderPrintsResolvedVersionsOnFailure(t *testing.T) {
	t.Parallel()
	pkg := t.TempDir()
	catalog, err := filepath.Abs(filepath.Join("testdata", "catalog.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	kptfile := "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\npipeline:\n  mutators:\n" +
		"    - image: example.com/kptdev/krm-functions-catalog/set-namespace\n      tag: ~0.4\n      configMap:\n        namespace: staging\n" +
		"    - image: example.com/kptdev/krm-functions-catalog/dne\n      configMap:\n        a: b\n"
	for name, c := range map[string]string{"Kptfile": kptfile, "cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n"} {
		if err := os.WriteFile(filepath.Join(pkg, name), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var stdout, stderr bytes.Buffer
	args := []string{"fn", "render", pkg, "--catalog", catalog, "--trusted-catalog", catalog, "--cache-dir", filepath.Join(t.TempDir(), "cache")}
	code := cli.Main(context.Background(), args, cli.IO{In: strings.NewReader(""), Out: &stdout, Err: &stderr})
	if code == 0 {
		t.Fatalf("exit 0, want a failure:\n%s", stderr.String())
	}
	for _, want := range []string{
		"step example.com/kptdev/krm-functions-catalog/set-namespace:v0.4.5@sha256:",
		"step example.com/kptdev/krm-functions-catalog/dne:latest: exit code 125",
	} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr does not say %q:\n%s", want, stderr.String())
		}
	}
}
