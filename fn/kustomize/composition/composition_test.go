package composition

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/krm-catalog/krm-catalog/fn"
	"github.com/krm-catalog/krm-catalog/fn/fntest"
	"github.com/krm-catalog/krm-catalog/fn/runner"
	"github.com/krm-catalog/krm-catalog/resolver"
)

// The KEP's own stories 1 and 2.
const appComposition = `apiVersion: kustomize.config.k8s.io/v1alpha1
kind: Composition
catalogs:
- catalog.yaml
transformers:
- apiVersion: example.com/v1
  kind: JavaApplication
  runtime: {container: {image: example.com/java:v1.0.0}}
  metadata:
    name: my-app
  spec:
    application: team/my-app
    version: v1.0
    ports: [{name: http, port: 80}]
- apiVersion: example.com/v1
  kind: Logger
  runtime: {container: {image: example.com/logger:v1.0.3}}
  metadata:
    name: logger
`

const stagingComposition = `apiVersion: kustomize.config.k8s.io/v1alpha1
kind: Composition
transformersFrom:
- path: ../app/composition.yaml
transformerOverrides:
- apiVersion: example.com/v1
  kind: JavaApplication
  metadata:
    name: my-app
  spec:
    version: v1.1-beta
transformers:
- apiVersion: example.com/v1
  kind: Prometheus
  runtime: {container: {image: example.com/prometheus:v1.0.2}}
  metadata:
    name: metrics
  spec:
    prefix: my-app-
`

func ids(c *Consolidated) []string {
	var out []string
	for _, t := range c.Transformers {
		out = append(out, t.ID())
	}
	return out
}

func TestConsolidate(t *testing.T) {
	t.Parallel()
	dir := fntest.Tree(t, map[string]string{
		"app/composition.yaml":     appComposition,
		"staging/composition.yaml": stagingComposition,
		"append/composition.yaml": strings.Replace(stagingComposition, "- path: ../app/composition.yaml",
			"- path: ../app\n  importMode: append", 1),
		"ordered/composition.yaml": stagingComposition + "transformerOrder:\n- name: metrics\n- name: logger\n- name: my-app\n",
	})
	tests := []struct {
		dir  string
		want []string
	}{
		{"staging", []string{"example.com/v1 JavaApplication my-app", "example.com/v1 Logger logger", "example.com/v1 Prometheus metrics"}},
		{"append", []string{"example.com/v1 Prometheus metrics", "example.com/v1 JavaApplication my-app", "example.com/v1 Logger logger"}},
		{"ordered", []string{"example.com/v1 Prometheus metrics", "example.com/v1 Logger logger", "example.com/v1 JavaApplication my-app"}},
	}
	for _, tc := range tests {
		c, err := Load(filepath.Join(dir, tc.dir))
		if err != nil {
			t.Fatalf("%s: %v", tc.dir, err)
		}
		if diff := cmp.Diff(tc.want, ids(c)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.dir, diff)
		}
		// the override is a strategic merge patch: version replaced, the rest kept
		var app string
		for _, tr := range c.Transformers {
			if tr.Config.GetKind() == "JavaApplication" {
				app, _ = tr.Config.String()
				if tr.File != filepath.Join(dir, "app", "composition.yaml") {
					t.Errorf("JavaApplication comes from %s", tr.File)
				}
			}
		}
		for _, want := range []string{"version: v1.1-beta", "application: team/my-app", "port: 80"} {
			if !strings.Contains(app, want) {
				t.Errorf("%s: JavaApplication lacks %q after the override:\n%s", tc.dir, want, app)
			}
		}
		if diff := cmp.Diff([]string{filepath.ToSlash(filepath.Join(dir, "app", "catalog.yaml"))}, c.Catalogs); diff != "" {
			t.Errorf("catalogs (-want +got):\n%s", diff)
		}
	}
}

func TestConsolidateErrors(t *testing.T) {
	t.Parallel()
	comp := func(body string) string {
		return "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Composition\n" + body
	}
	tr := func(kind, name string) string {
		return "- apiVersion: example.com/v1\n  kind: " + kind + "\n  metadata:\n    name: " + name + "\n"
	}
	tests := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"cycle", map[string]string{
			"a/composition.yaml": comp("transformersFrom:\n- path: ../b\n"),
			"b/composition.yaml": comp("transformersFrom:\n- path: ../a/composition.yaml\n"),
		}, "cycle"},
		{"override matches nothing", map[string]string{
			"base/composition.yaml": comp("transformers:\n" + tr("A", "a")),
			"a/composition.yaml":    comp("transformersFrom:\n- path: ../base\ntransformerOverrides:\n" + tr("A", "other")),
		}, "which no imported transformer is"},
		{"override of own transformer", map[string]string{
			"a/composition.yaml": comp("transformers:\n" + tr("A", "a") + "transformerOverrides:\n" + tr("A", "a")),
		}, "which no imported transformer is"},
		{"duplicate", map[string]string{
			"base/composition.yaml": comp("transformers:\n" + tr("A", "a")),
			"a/composition.yaml":    comp("transformersFrom:\n- path: ../base\n- path: ../base\n"),
		}, "give each instance its own metadata.name"},
		{"partial order", map[string]string{
			"a/composition.yaml": comp("transformers:\n" + tr("A", "a") + tr("B", "b") + "transformerOrder:\n- name: b\n"),
		}, "it leaves out a"},
		{"ambiguous order", map[string]string{
			"a/composition.yaml": comp("transformers:\n" + tr("A", "x") + tr("B", "x") + "transformerOrder:\n- name: x\n- name: x\n"),
		}, "more than one transformer"},
		{"order names nothing", map[string]string{
			"a/composition.yaml": comp("transformers:\n" + tr("A", "a") + "transformerOrder:\n- name: zzz\n"),
		}, "not a transformer"},
		{"with a kustomization", map[string]string{
			"a/composition.yaml":   comp("transformers:\n" + tr("A", "a")),
			"a/kustomization.yaml": "resources: []\n",
		}, "both"},
		{"unknown field", map[string]string{
			"a/composition.yaml": comp("extraField: oops\ntransformers:\n" + tr("A", "a")),
		}, `composition.yaml:3:1: error: unknown field "extraField"`},
		{"unknown field in transformersFrom", map[string]string{
			"base/composition.yaml": comp("transformers:\n" + tr("A", "a")),
			"a/composition.yaml":    comp("transformersFrom:\n- path: ../base\n  mode: append\n"),
		}, `composition.yaml:5:3: error: unknown field "mode"`},
		{"modules", map[string]string{
			"a/composition.yaml": comp("modules:\n" + tr("A", "a")),
		}, "KEP-2906 story 3's draft spelling"},
		{"missing import", map[string]string{
			"a/composition.yaml": comp("transformersFrom:\n- path: ../nope\n"),
		}, "nope"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := fntest.Tree(t, tc.files)
			_, err := Load(filepath.Join(dir, "a"))
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want ErrInvalid containing %q", err, tc.want)
			}
		})
	}
}

func TestOverrideDeletes(t *testing.T) {
	t.Parallel()
	dir := fntest.Tree(t, map[string]string{
		"app/composition.yaml": appComposition,
		"a/composition.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Composition\ntransformersFrom:\n- path: ../app\n" +
			"transformerOverrides:\n- apiVersion: example.com/v1\n  kind: Logger\n  metadata:\n    name: logger\n  $patch: delete\n",
	})
	c, err := Load(filepath.Join(dir, "a"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"example.com/v1 JavaApplication my-app"}, ids(c)); diff != "" {
		t.Error(diff)
	}
}

func TestRunBuiltinsAndFunctions(t *testing.T) {
	t.Parallel()
	dir := fntest.Tree(t, map[string]string{
		"app/composition.yaml": `apiVersion: kustomize.config.k8s.io/v1alpha1
kind: Composition
transformers:
# a built-in generator, with no resources before it
- apiVersion: builtin
  kind: ConfigMapGenerator
  metadata:
    name: settings
  literals:
  - mode=production
  options:
    disableNameSuffixHash: true
# an inline Kustomization: the resources so far are prepended to its own
- apiVersion: kustomize.config.k8s.io/v1beta1
  kind: Kustomization
  metadata:
    name: base
  resources:
  - deployment.yaml
  namePrefix: shop-
  labels:
  - pairs:
      team: blue
# a built-in transformer with its field specs, as in a Kustomization's transformers field
- apiVersion: builtin
  kind: NamespaceTransformer
  metadata:
    name: prod
    namespace: prod
  fieldSpecs:
  - path: metadata/namespace
    create: true
# a KRM function that needs no catalog
- apiVersion: fn.kpt.dev/v1alpha1
  kind: StarlarkRun
  metadata:
    name: annotate
  source: |
    for it in ctx.resource_list["items"]:
        it["metadata"].setdefault("annotations", {})["built-by"] = "krm-catalog"
`,
		"app/deployment.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web # the web tier\nspec:\n  replicas: 2\n",
	})
	c, err := Load(filepath.Join(dir, "app"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := resolver.New(resolver.Options{CacheDir: "-"})
	if err != nil {
		t.Fatal(err)
	}
	r := runner.New(runner.Options{Resolver: res, CacheDir: t.TempDir()})
	t.Cleanup(func() { _ = r.Close() })
	items, _, err := c.Run(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	type summary struct{ Kind, Name, Namespace, Team, BuiltBy string }
	var got []summary
	for _, it := range items {
		got = append(got, summary{it.GetKind(), it.GetName(), it.GetNamespace(), it.GetLabels()["team"], it.GetAnnotations()["built-by"]})
	}
	// the StarlarkRun returns the items sorted by apiVersion, kind, namespace and name, as kpt's
	// starlark function (which a Composition naming its image would run) writes them
	want := []summary{
		{"Deployment", "shop-web", "prod", "blue", "krm-catalog"},
		{"ConfigMap", "shop-settings", "prod", "blue", "krm-catalog"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	out, err := fn.StripInternal(items)
	if err != nil {
		t.Fatal(err)
	}
	// kustomize read deployment.yaml itself and dropped its comment; the ConfigMap it generated has
	// none. What the pipeline restores is what entered a step: the StarlarkRun reordered no field,
	// and the NamespaceTransformer kept the field order the inline Kustomization produced.
	s, _ := out[0].String()
	wantDeploy := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  labels:\n    team: blue\n  name: shop-web\n  namespace: prod\n  annotations:\n    built-by: krm-catalog\nspec:\n  replicas: 2\n"
	if diff := cmp.Diff(wantDeploy, s); diff != "" {
		t.Errorf("deployment (-want +got):\n%s", diff)
	}
	if _, err := os.Stat(filepath.Join(dir, "app", "kustomization.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Error("a kustomization.yaml was written into the user's directory")
	}
}

func TestKustomizeStepKeepsComments(t *testing.T) {
	t.Parallel()
	rl, _, err := fn.DecodeInput([]byte("# owned by the web team\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web # the web tier\nspec:\n  replicas: 2 # two\n"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, _, err := fn.DecodeInput([]byte("apiVersion: builtin\nkind: PrefixSuffixTransformer\nmetadata:\n  name: p\nprefix: shop-\nfieldSpecs:\n- path: metadata/name\n"))
	if err != nil {
		t.Fatal(err)
	}
	steps := []fn.Step{{Name: "prefix", Function: &kustomizeFunction{dir: t.TempDir(), config: cfg.Items[0]}}}
	out, _, err := fn.Run(context.Background(), steps, rl.Items)
	if err != nil {
		t.Fatal(err)
	}
	got, err := fn.EncodeYAML(out[0].Document())
	if err != nil {
		t.Fatal(err)
	}
	want := "# owned by the web team\napiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: shop-web # the web tier\nspec:\n  replicas: 2 # two\n"
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// newRunner is a runner with no catalog: built-ins and explicit runtimes only.
func newRunner(t *testing.T) *runner.Runner {
	t.Helper()
	res, err := resolver.New(resolver.Options{CacheDir: "-"})
	if err != nil {
		t.Fatal(err)
	}
	r := runner.New(runner.Options{Resolver: res, CacheDir: t.TempDir()})
	t.Cleanup(func() { _ = r.Close() })
	return r
}

func build(t *testing.T, dir string) string {
	t.Helper()
	c, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	items, _, err := c.Run(context.Background(), newRunner(t))
	if err != nil {
		t.Fatal(err)
	}
	out, err := Format(items)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// Compositions as KEP-2299's reference implementation (kustomize pull request 4323) writes them:
// built-ins without apiVersion, ResourceGenerator, names left to default; the output in kustomize's
// key order and format.
func TestReferenceImplementationCompositions(t *testing.T) {
	t.Parallel()
	const cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: myapp\ndata:\n  value: test\n"
	const svc = "apiVersion: v1\nkind: Service\nmetadata:\n  name: myapp\nspec:\n  selector:\n    app: myapp\n  ports:\n  - port: 3000\n    targetPort: 3000\n"
	tests := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"basic", map[string]string{
			"a/composition.yaml": `apiVersion: kustomize.config.k8s.io/v1alpha1
kind: Composition

transformers:
- kind: ResourceGenerator
  files:
    - resources/config_map.yaml
    - resources/service.yaml
- kind: LabelTransformer
  labels:
    org: Kubernetes
  fieldSpecs:
  - path: metadata/labels
    create: true
`,
			"a/resources/config_map.yaml": cm,
			"a/resources/service.yaml":    svc,
		}, "apiVersion: v1\ndata:\n  value: test\nkind: ConfigMap\nmetadata:\n  labels:\n    org: Kubernetes\n  name: myapp\n---\n" +
			"apiVersion: v1\nkind: Service\nmetadata:\n  labels:\n    org: Kubernetes\n  name: myapp\nspec:\n  ports:\n  - port: 3000\n    targetPort: 3000\n  selector:\n    app: myapp\n"},
		{"override only, by the default name", map[string]string{
			"base/composition.yaml": `apiVersion: kustomize.config.k8s.io/v1alpha1
kind: Composition
transformers:
- kind: ResourceGenerator
  files: [cm.yaml]
- kind: LabelTransformer
  labels:
    environment: staging
  fieldSpecs:
  - path: metadata/labels
    create: true
`,
			"base/cm.yaml": cm,
			"a/composition.yaml": `apiVersion: kustomize.config.k8s.io/v1alpha1
kind: Composition
transformersFrom:
- path: ../base
transformerOverrides:
- metadata:
    name: label-transformer
  kind: LabelTransformer
  labels:
    environment: production
`,
		}, "apiVersion: v1\ndata:\n  value: test\nkind: ConfigMap\nmetadata:\n  labels:\n    environment: production\n  name: myapp\n"},
		{"an override's paths are relative to its own file", map[string]string{
			"base/composition.yaml": `apiVersion: kustomize.config.k8s.io/v1alpha1
kind: Composition
transformers:
- apiVersion: builtin
  kind: ResourceGenerator
  metadata:
    name: resources
  files: [cm.yaml]
`,
			"base/cm.yaml": cm,
			"a/composition.yaml": `apiVersion: kustomize.config.k8s.io/v1alpha1
kind: Composition
transformersFrom:
- path: ../base
transformerOverrides:
- apiVersion: builtin
  kind: ResourceGenerator
  metadata:
    name: resources
  files: [service.yaml]
`,
			"a/service.yaml": svc,
		}, "apiVersion: v1\nkind: Service\nmetadata:\n  name: myapp\nspec:\n  ports:\n  - port: 3000\n    targetPort: 3000\n  selector:\n    app: myapp\n"},
		{"kustomize's key order after a function", map[string]string{
			"a/composition.yaml": `apiVersion: kustomize.config.k8s.io/v1alpha1
kind: Composition
transformers:
- apiVersion: kustomize.config.k8s.io/v1beta1
  kind: Kustomization
  resources: [cm.yaml]
- apiVersion: fn.kpt.dev/v1alpha1
  kind: StarlarkRun
  metadata:
    name: annotate
  source: |
    for it in ctx.resource_list["items"]:
        it["metadata"]["annotations"] = {"built-by": "krm-catalog"}
`,
			"a/cm.yaml": cm,
		}, "apiVersion: v1\ndata:\n  value: test\nkind: ConfigMap\nmetadata:\n  annotations:\n    built-by: krm-catalog\n  name: myapp\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := fntest.Tree(t, tc.files)
			if diff := cmp.Diff(tc.want, build(t, filepath.Join(dir, "a"))); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
