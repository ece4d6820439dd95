package kustomize

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/fn"
	"github.com/krm-catalog/krm-catalog/fn/fntest"
	"github.com/krm-catalog/krm-catalog/fn/kustomize/composition"
	"github.com/krm-catalog/krm-catalog/fn/kustomize/internal/kustrun"
	"github.com/krm-catalog/krm-catalog/fn/runner"
)

// fakeFunctions stands for the catalogs: every catalog function config it is asked about is a
// function that sets an annotation fn.example.com/<kind> to the config's value field, on every item.
// It records the catalogs each resolution used.
type fakeFunctions struct {
	mu       sync.Mutex
	catalogs map[string][]string // kind -> catalogs it was resolved through
	unknown  string              // a kind no catalog has
}

// A file of the tree that is not YAML is input that cannot be read (ErrInvalid), with the line and
// column of the problem, whether krm-catalog or kustomize reads it.
func TestUnreadableYAML(t *testing.T) {
	t.Parallel()
	bad := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  labels: [x\n  b: c\n"
	for name, files := range map[string]map[string]string{
		"a resource":        {"kustomization.yaml": "resources:\n- cm.yaml\n", "cm.yaml": bad},
		"the kustomization": {"kustomization.yaml": "resources: [\n- cm.yaml\n"},
	} {
		_, _, err := Build(context.Background(), fntest.Tree(t, files), Options{})
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "column") {
			t.Errorf("%s not YAML: %v; want ErrInvalid with a line and column", name, err)
		}
	}
}

// declaringFunctions records how the kustomizations spelled their catalogs.
type declaringFunctions struct {
	fakeFunctions
	declared map[string][]string
}

func (f *declaringFunctions) Declared(ref, written string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.declared == nil {
		f.declared = map[string][]string{}
	}
	f.declared[ref] = append(f.declared[ref], written)
}

// A Preparers that trusts catalogs as declared learns each local catalog as For gets it and as the
// kustomization wrote it; a remote one is left to the reference.
func TestDeclaredCatalogs(t *testing.T) {
	t.Parallel()
	dir := fntest.Tree(t, map[string]string{
		"app/kustomization.yaml": "catalogs:\n  - ../shared/catalog.yaml\n  - https://catalogs.example.com/c.yaml\nresources:\n- deployment.yaml\ntransformers:\n- fn.yaml\n",
		"app/deployment.yaml":    deployment,
		"app/fn.yaml":            fnConfig("Mark", "one"),
	})
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	f := &declaringFunctions{}
	build(t, filepath.Join(dir, "app"), f)
	rel, _ := filepath.Rel(wd, filepath.Join(dir, "shared", "catalog.yaml"))
	if diff := cmp.Diff(map[string][]string{filepath.ToSlash(rel): {"../shared/catalog.yaml"}}, f.declared); diff != "" {
		t.Errorf("declared (-want +got):\n%s", diff)
	}
}

func (f *fakeFunctions) For(catalogs []string) (composition.StepPreparer, error) {
	return &fakePreparer{f: f, catalogs: catalogs}, nil
}

type fakePreparer struct {
	f        *fakeFunctions
	catalogs []string
}

var errNotFound = errors.New("not in any catalog")

func (p *fakePreparer) Check(_ context.Context, cfg *yaml.RNode) (*runner.Checked, []fn.Result, error) {
	if cfg.GetKind() == p.f.unknown {
		return nil, nil, errNotFound
	}
	p.f.mu.Lock()
	defer p.f.mu.Unlock()
	if p.f.catalogs == nil {
		p.f.catalogs = map[string][]string{}
	}
	p.f.catalogs[cfg.GetKind()] = p.catalogs
	v, _ := cfg.GetString("value")
	return &runner.Checked{Name: cfg.GetKind() + "=" + v}, nil, nil
}

func (p *fakePreparer) Build(_ context.Context, c *runner.Checked, _ string) (fn.Step, error) {
	kind, value, _ := strings.Cut(c.Name, "=")
	return fn.Step{Name: c.Name, Function: annotate{key: "fn.example.com/" + strings.ToLower(kind), value: value}}, nil
}

type annotate struct{ key, value string }

func (a annotate) Run(_ context.Context, in *fn.ResourceList) (*fn.ResourceList, error) {
	for _, it := range in.Items {
		if err := it.PipeE(yaml.SetAnnotation(a.key, a.value)); err != nil {
			return nil, err
		}
	}
	if a.value == "generate" {
		cm, err := yaml.Parse("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: generated\ndata:\n  k: v\n")
		if err != nil {
			return nil, err
		}
		in.Items = append(in.Items, cm)
	}
	return in, nil
}

const deployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  template:
    spec:
      containers:
      - name: web
        image: nginx
`

func fnConfig(kind, value string) string {
	return "apiVersion: fn.example.com/v1\nkind: " + kind + "\nmetadata:\n  name: " + strings.ToLower(kind) + "\nvalue: " + value + "\n"
}

func build(t *testing.T, dir string, f Preparers) string {
	t.Helper()
	out, _, err := Build(context.Background(), dir, Options{Functions: f})
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// KEP-2906 story 2: a kustomization with catalogs and transformer configs named by kind only.
func TestStory2(t *testing.T) {
	t.Parallel()
	dir := fntest.Tree(t, map[string]string{
		"app/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\ncatalogs:\n  - catalog.yaml\nresources:\n- deployment.yaml\ntransformers:\n- java.yaml\n- secrets.yaml\n",
		"app/deployment.yaml":    deployment,
		"app/java.yaml":          fnConfig("JavaApplication", "team/my-app"),
		"app/secrets.yaml":       fnConfig("SecretSidecar", "my.secret.value"),
	})
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeFunctions{}
	got := build(t, filepath.Join(dir, "app"), f)
	want := `apiVersion: apps/v1
kind: Deployment
metadata:
  annotations:
    fn.example.com/javaapplication: team/my-app
    fn.example.com/secretsidecar: my.secret.value
  name: web
spec:
  template:
    spec:
      containers:
      - image: nginx
        name: web
`
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	rel, _ := filepath.Rel(wd, filepath.Join(dir, "app", "catalog.yaml"))
	if diff := cmp.Diff(map[string][]string{"JavaApplication": {rel}, "SecretSidecar": {rel}}, f.catalogs); diff != "" {
		t.Errorf("catalogs (-want +got):\n%s", diff)
	}
}

// A catalog function runs at its place among kustomize's transformers, in bases, components,
// generators and validators; kustomize's own fields run before the transformers list.
func TestStages(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"between built-in transformers", map[string]string{
			"kustomization.yaml": "resources:\n- deployment.yaml\nnamePrefix: p-\ntransformers:\n- prefix.yaml\n- fn.yaml\n- suffix.yaml\n",
			"deployment.yaml":    deployment,
			"fn.yaml":            fnConfig("Mark", "one"),
			"prefix.yaml":        "apiVersion: builtin\nkind: PrefixSuffixTransformer\nmetadata:\n  name: x\nprefix: q-\nfieldSpecs:\n- path: metadata/name\n",
			"suffix.yaml":        "apiVersion: builtin\nkind: PrefixSuffixTransformer\nmetadata:\n  name: y\nsuffix: -s\nfieldSpecs:\n- path: metadata/name\n",
		}, "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  annotations:\n    fn.example.com/mark: one\n  name: q-p-web-s\n"},
		{"in a base with its own catalogs", map[string]string{
			"kustomization.yaml":      "resources:\n- base\nnamespace: prod\n",
			"base/kustomization.yaml": "catalogs: [cat.yaml]\nresources:\n- deployment.yaml\ntransformers:\n- fn.yaml\n",
			"base/deployment.yaml":    deployment,
			"base/fn.yaml":            fnConfig("Mark", "base"),
		}, "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  annotations:\n    fn.example.com/mark: base\n  name: web\n  namespace: prod\n"},
		{"in a component", map[string]string{
			"kustomization.yaml":      "resources:\n- deployment.yaml\ncomponents:\n- comp\nnameSuffix: -x\n",
			"deployment.yaml":         deployment,
			"comp/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\ncatalogs: [cat.yaml]\nlabels:\n- pairs:\n    c: \"1\"\ntransformers:\n- fn.yaml\n",
			"comp/fn.yaml":            fnConfig("Mark", "component"),
		}, "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  annotations:\n    fn.example.com/mark: component\n  labels:\n    c: \"1\"\n  name: web-x\n"},
		{"a generator", map[string]string{
			"kustomization.yaml": "resources:\n- deployment.yaml\ngenerators:\n- fn.yaml\nnamePrefix: g-\n",
			"deployment.yaml":    deployment,
			"fn.yaml":            fnConfig("Gen", "generate"),
		}, "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: g-web\n---\napiVersion: v1\ndata:\n  k: v\nkind: ConfigMap\nmetadata:\n  name: g-generated\n"},
		{"a validator", map[string]string{
			"kustomization.yaml": "resources:\n- deployment.yaml\nvalidators:\n- fn.yaml\n",
			"deployment.yaml":    deployment,
			"fn.yaml":            fnConfig("Check", "ok"),
		}, "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n"},
		{"a Composition in resources and in transformers", map[string]string{
			"kustomization.yaml": "resources:\n- gen/composition.yaml\ntransformers:\n- tr/composition.yaml\n",
			"gen/composition.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Composition\ntransformers:\n" +
				"- kind: ResourceGenerator\n  files: [deployment.yaml]\n",
			"gen/deployment.yaml": deployment,
			"tr/composition.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Composition\ntransformers:\n" +
				"- kind: PrefixSuffixTransformer\n  prefix: c-\n  fieldSpecs:\n  - path: metadata/name\n" +
				"- apiVersion: fn.example.com/v1\n  kind: Mark\n  value: composed\n",
		}, "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  annotations:\n    fn.example.com/mark: composed\n  name: c-web\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := fntest.Tree(t, tc.files)
			got := build(t, dir, &fakeFunctions{})
			// the containers are the same in every case; compare what the stages change
			got = strings.Replace(got, "spec:\n  template:\n    spec:\n      containers:\n      - image: nginx\n        name: web\n", "", 1)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			for _, e := range []string{".krm-catalog-stage-0.yaml", ".krm-catalog-output.yaml"} {
				if _, err := os.Stat(filepath.Join(dir, e)); err == nil {
					t.Errorf("%s was written to disk", e)
				}
			}
		})
	}
}

// A catalog function that no catalog resolves stops the build before anything runs or prints.
func TestUnresolvedStopsTheBuild(t *testing.T) {
	t.Parallel()
	dir := fntest.Tree(t, map[string]string{
		"kustomization.yaml": "catalogs: [catalog.yaml]\nresources:\n- deployment.yaml\ntransformers:\n- a.yaml\n- b.yaml\n",
		"deployment.yaml":    deployment,
		"a.yaml":             fnConfig("Known", "x"),
		"b.yaml":             fnConfig("Unknown", "x"),
	})
	out, _, err := Build(context.Background(), dir, Options{Functions: &fakeFunctions{unknown: "Unknown"}})
	if !errors.Is(err, errNotFound) || len(out) != 0 {
		t.Fatalf("out %q, err %v; want no output and the resolution error", out, err)
	}
}

// Without any catalog function the tree goes to krusty as it is: the output is kustomize's.
func TestPlainIsKustomize(t *testing.T) {
	t.Parallel()
	dir := fntest.Tree(t, map[string]string{
		"kustomization.yaml": "resources:\n- deployment.yaml\nconfigMapGenerator:\n- name: c\n  literals: [a=b]\ncommonLabels:\n  app: web\n",
		"deployment.yaml":    deployment,
	})
	want, err := kustrun.Build(filesys.MakeFsOnDisk(), dir, krusty.MakeDefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), build(t, dir, nil)); diff != "" {
		t.Errorf("(-kustomize +build):\n%s", diff)
	}
}
