package cmd

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/distribution/reference"
	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"

	"github.com/krm-catalog/krm-catalog/oci/registrytest"
)

func TestFunctionInput(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args    []string
		want    string
		wantErr bool
	}{
		{nil, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: function-input\ndata: {}\n", false},
		{[]string{"namespace=prod", "replicas=3", "on=true"}, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: function-input\ndata:\n  namespace: prod\n  replicas: \"3\"\n  on: \"true\"\n", false},
		{[]string{"a=b=c", "empty="}, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: function-input\ndata:\n  a: b=c\n  empty: \"\"\n", false},
		// as kpt: a first argument without = is the config's kind
		{[]string{"SetNamespace", "namespace=prod"}, "apiVersion: v1\nkind: SetNamespace\nmetadata:\n  name: function-input\ndata:\n  namespace: prod\n", false},
		{[]string{"namespace=prod", "oops"}, "", true},
	} {
		cfg, err := functionInput(tc.args)
		if (err != nil) != tc.wantErr {
			t.Errorf("%q: error %v, want error %v", tc.args, err, tc.wantErr)
			continue
		}
		if err != nil {
			continue
		}
		if diff := cmp.Diff(tc.want, cfg.MustString()); diff != "" {
			t.Errorf("%q (-want +got):\n%s", tc.args, diff)
		}
	}
}

// TestFnRunImage runs a function named by its image, as kpt fn eval --image does: the catalog
// lists the image and a starlark script for the same version, and the script runs with the
// ConfigMap made of the arguments after --.
// imageCatalog writes a catalog whose one function, SetAnnotation, lists a container image and a
// starlark script (an OCI artifact in a real registry) that sets the annotation its ConfigMap's
// data names (key, value).
func imageCatalog(t *testing.T) (dir, cat string) {
	dir = ociEnv(t)
	reg := registrytest.Distribution(t)
	script := `for r in ctx.resource_list["items"]:
  d = ctx.resource_list["functionConfig"]["data"]
  r["metadata"]["annotations"][d["key"]] = d["value"]
`
	scriptPath := writeTestFile(t, dir, "ann.star", script, 0o644)
	digest := strings.TrimSpace(mustRun(t, ExitOK, "", "push", "--type", "starlark", reg.Host+"/fns/ann:v1", scriptPath))
	sum := sha256.Sum256([]byte(script))
	cat = writeTestFile(t, dir, "catalog.yaml", fmt.Sprintf(`apiVersion: config.kubernetes.io/v1alpha1
kind: KRMFunctionCatalog
metadata:
  name: images
spec:
  krmFunctions:
  - group: fn.example.com
    names: {kind: SetAnnotation}
    description: d
    publisher: example.com
    versions:
    - name: v1
      runtime:
        container: {image: 'registry.example.com/fns/set-annotation:v1.0.0', sha256: '%s'}
        starlark: {ref: '%s/fns/ann@%s', sha256: '%s'}
`, strings.Repeat("cd", 32), reg.Host, digest, hex.EncodeToString(sum[:])), 0o644)
	return dir, cat
}

func TestFnRunImage(t *testing.T) {
	dir, cat := imageCatalog(t)
	other := writeTestFile(t, dir, "other.yaml", "apiVersion: config.kubernetes.io/v1alpha1\nkind: KRMFunctionCatalog\nmetadata:\n  name: other\nspec:\n  krmFunctions: []\n", 0o644)
	cfgFile := writeTestFile(t, dir, "cfg.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {key: from, value: file}\n", 0o644)
	pkg := filepath.Join(dir, "pkg")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata: {x: '1'}\n"
	common := []string{"--catalog", cat, "--trusted-catalog", cat, "--catalog", other, "--cache-dir", filepath.Join(dir, "c")}
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stderr []string // what standard error must say
		wrote  string   // what cm.yaml must hold afterwards
	}{
		{"short name, arguments", []string{"--image", "set-annotation:v1.0.0", "--", "key=owner", "value=platform"}, ExitOK, nil, "owner: platform"},
		{"full name", []string{"--image", "registry.example.com/fns/set-annotation:v1.0.0", "--", "key=team", "value=42"}, ExitOK, nil, `team: "42"`},
		{"config file", []string{"--image", "set-annotation:v1.0.0", "--fn-config", cfgFile}, ExitOK, nil, "from: file"},
		{"unknown image", []string{"--image", "set-labels:v1", "--", "a=b"}, ExitFailure, []string{"set-labels:v1", cat, "untrusted (--trusted-catalog trusts them): " + other}, ""},
		{"unknown tag", []string{"--image", "registry.example.com/fns/set-annotation:v2", "--", "a=b"}, ExitFailure, []string{"set-annotation:v2", "not found", "searched 1 catalog(s): " + cat, cat + " lists it at v1.0.0"}, ""},
		{"arguments and config file", []string{"--image", "set-annotation:v1.0.0", "--fn-config", cfgFile, "--", "a=b"}, ExitUsage, []string{"function arguments can only be specified without function config file"}, ""},
		{"arguments without image", []string{"--fn-config", cfgFile, "--", "a=b"}, ExitUsage, []string{"give --image"}, ""},
		{"argument without =", []string{"--image", "set-annotation:v1.0.0", "--", "a=b", "c"}, ExitUsage, []string{"separated by ="}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			writeTestFile(t, pkg, "cm.yaml", cm, 0o644)
			args := append([]string{"fn", "run", pkg}, common...)
			code, _, stderr := run(t, "", append(args, tc.args...)...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tc.code, stderr)
			}
			for _, s := range tc.stderr {
				if !strings.Contains(stderr, s) {
					t.Errorf("standard error does not say %q:\n%s", s, stderr)
				}
			}
			got, err := os.ReadFile(filepath.Join(pkg, "cm.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			if tc.wrote != "" && !strings.Contains(string(got), tc.wrote) {
				t.Errorf("cm.yaml:\n%s\nwant %q in it", got, tc.wrote)
			}
		})
	}
}

// TestFnRenderPinImages renders a package whose step names only a kind, with --pin-images: the
// step runs (the catalog's starlark script), and the Kptfile then names the catalog's image by
// digest, one line added, and passes kpt's own checks of a pipeline step (kpt's
// api/kptfile/v1/validation.go: an image or an exec, not both, and an image that
// distribution/reference parses), so kpt fn render can run it.
func TestFnRenderPinImages(t *testing.T) {
	dir, cat := imageCatalog(t)
	pkg := filepath.Join(dir, "pkg")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	kptfile := "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: pkg\npipeline:\n  mutators:\n  # owner annotation\n  - configPath: ann.yaml # by kind\n"
	writeTestFile(t, pkg, "Kptfile", kptfile, 0o644)
	writeTestFile(t, pkg, "ann.yaml", "apiVersion: fn.example.com/v1\nkind: SetAnnotation\nmetadata:\n  name: ann\n  annotations: {config.kubernetes.io/local-config: \"true\"}\ndata: {key: owner, value: platform}\n", 0o644)
	writeTestFile(t, pkg, "cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata: {x: '1'}\n", 0o644)
	code, _, stderr := run(t, "", "fn", "render", pkg, "--pin-images", "--catalog", cat, "--trusted-catalog", cat, "--cache-dir", filepath.Join(dir, "c"))
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := "registry.example.com/fns/set-annotation:v1.0.0@sha256:" + strings.Repeat("cd", 32)
	if !strings.Contains(stderr, "step ann.yaml: pinned "+want) {
		t.Errorf("standard error does not name the pin:\n%s", stderr)
	}
	cm, _ := os.ReadFile(filepath.Join(pkg, "cm.yaml"))
	if !strings.Contains(string(cm), "owner: platform") {
		t.Errorf("the step did not run:\n%s", cm)
	}
	got, err := os.ReadFile(filepath.Join(pkg, "Kptfile"))
	if err != nil {
		t.Fatal(err)
	}
	// render adds its status below; the pipeline is the original with one line added
	wantPipeline := "pipeline:\n  mutators:\n  # owner annotation\n  - image: " + want + "\n    configPath: ann.yaml # by kind\n"
	if !strings.Contains(string(got), wantPipeline) {
		t.Errorf("Kptfile:\n%s\nwant its pipeline to be:\n%s", got, wantPipeline)
	}
	var kf struct {
		Pipeline struct {
			Mutators, Validators []struct{ Image, Exec string }
		}
	}
	if err := yaml.Unmarshal(got, &kf); err != nil {
		t.Fatal(err)
	}
	for i, f := range append(kf.Pipeline.Mutators, kf.Pipeline.Validators...) {
		if (f.Image == "") == (f.Exec == "") {
			t.Errorf("step %d: kpt needs an image or an exec, and not both: %+v", i, f)
		}
		if _, err := reference.Parse(f.Image); f.Image != "" && err != nil {
			t.Errorf("step %d: kpt refuses the image: %v", i, err)
		}
	}

	// again: nothing left to pin. The step names an image now, which runs as a container unless
	// --runtime picks the catalog's other runtime of that image
	if code, _, stderr := run(t, "", "fn", "render", pkg, "--pin-images", "--runtime", "starlark", "--catalog", cat, "--trusted-catalog", cat, "--cache-dir", filepath.Join(dir, "c")); code != ExitOK || strings.Contains(stderr, "pinned") {
		t.Errorf("second run: exit %d:\n%s", code, stderr)
	}
	if code, _, stderr := run(t, "", "fn", "render", pkg, "--pin-images", "--dry-run"); code != ExitUsage {
		t.Errorf("--pin-images --dry-run: exit %d, want %d:\n%s", code, ExitUsage, stderr)
	}
}
