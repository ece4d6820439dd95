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
	"github.com/krm-catalog/krm-catalog/fn/runner"
	"github.com/krm-catalog/krm-catalog/internal/fntest"
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
		{"invalid document", map[string]string{
			"a/composition.yaml": comp("transformers:\n- kind: NoAPIVersion\n"),
		}, "invalid composition"},
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
	want := []summary{
		{"ConfigMap", "shop-settings", "prod", "blue", "krm-catalog"},
		{"Deployment", "shop-web", "prod", "blue", "krm-catalog"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	out, err := fn.StripInternal(items)
	if err != nil {
		t.Fatal(err)
	}
	// kustomize read deployment.yaml itself and dropped its comment; the ConfigMap it generated has
	// none. What the pipeline restores is what entered a step: the StarlarkRun reordered nothing, and
	// the NamespaceTransformer kept the field order the inline Kustomization produced.
	s, _ := out[1].String()
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
