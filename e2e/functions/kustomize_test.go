package functions

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/krm-catalog/krm-catalog/fn/fntest"
)

// kustomize v5.8.2 runs `krm-catalog fn proxy` as an exec function: the transformer config names a
// catalog function by apiVersion and kind, and the proxy resolves and runs it.
func TestKustomizeRunsFnProxy(t *testing.T) {
	t.Parallel()
	kustomize := fntest.Kustomize(t)
	pub := publish(t, nil)
	cache := t.TempDir()
	dir := t.TempDir()
	writeFile(t, dir, "deployment.yaml", deployment)
	writeFile(t, dir, "service.yaml", service)
	proxy := func(kind, body string) string {
		return fmt.Sprintf(`apiVersion: fn.example.com/v1
kind: %s
metadata:
  name: %s
  annotations:
    config.kubernetes.io/function: |
      exec:
        path: %s
        args: [fn, proxy, --catalog, %s, --trusted-catalog, %s, --cache-dir, %s]
%s`, kind, strings.ToLower(kind), bins.KrmCatalog, pub.catalog, pub.catalog, cache, body)
	}
	writeFile(t, dir, "set-namespace.yaml", proxy("SetNamespace", "namespace: kustomized\n"))
	writeFile(t, dir, "set-labels.yaml", proxy("SetLabels", "labels:\n  via: fn-proxy\n"))
	writeFile(t, dir, "limits.yaml", proxy("RequireResourceLimits", ""))
	// the validating function is listed under transformers: kustomize v5.8.2 refuses any exec function
	// under validators, even one that echoes its input ("validator shouldn't modify the resource
	// map"), because it adds path annotations to what the function returns
	writeFile(t, dir, "kustomization.yaml", "resources:\n- deployment.yaml\n- service.yaml\ntransformers:\n- set-namespace.yaml\n- set-labels.yaml\n- limits.yaml\n")

	out := run{env: pub.env}.exec(t, kustomize, "build", "--enable-alpha-plugins", "--enable-exec", dir)
	if out.code != 0 {
		t.Fatal(out)
	}
	if strings.Count(out.stdout, "namespace: kustomized") != 2 || strings.Count(out.stdout, "via: fn-proxy") != 2 {
		t.Errorf("kustomize output:\n%s", out.stdout)
	}
	if n := pub.hits.Total(); n != 3 {
		t.Errorf("%d downloads for three functions, want 3 (then the cache)", n)
	}

	// an error result from the validator fails kustomize build
	writeFile(t, dir, "deployment.yaml", strings.Replace(deployment, "          limits: {cpu: 500m, memory: 128Mi}\n", "          limits: {cpu: 500m}\n", 1))
	out = run{env: pub.env}.exec(t, kustomize, "build", "--enable-alpha-plugins", "--enable-exec", dir)
	if out.code == 0 || !strings.Contains(out.stderr, "has no memory limit") {
		t.Errorf("the validator's error result must fail the build:\n%s", out)
	}

	// without trust, the proxy refuses the catalog and kustomize fails
	writeFile(t, dir, "set-namespace.yaml", strings.Replace(proxy("SetNamespace", "namespace: kustomized\n"), "--trusted-catalog, "+pub.catalog, "--trusted-catalog, other.yaml", 1))
	out = run{env: pub.env}.exec(t, kustomize, "build", "--enable-alpha-plugins", "--enable-exec", dir)
	if out.code == 0 || !strings.Contains(out.stderr, "--trusted-catalog") {
		t.Errorf("an untrusted catalog must fail the build:\n%s", out)
	}
}

// krm-catalog build renders a Composition: an imported composition with an override, a kustomize
// built-in, and a catalog function.
func TestBuildComposition(t *testing.T) {
	t.Parallel()
	pub := publish(t, nil)
	dir := t.TempDir()
	writeFile(t, dir, "base/deployment.yaml", deployment)
	writeFile(t, dir, "base/composition.yaml", `apiVersion: kustomize.config.k8s.io/v1alpha1
kind: Composition
transformers:
- apiVersion: kustomize.config.k8s.io/v1beta1
  kind: Kustomization
  metadata:
    name: app
  resources:
  - deployment.yaml
- apiVersion: fn.example.com/v1
  kind: SetNamespace
  metadata:
    name: ns
  namespace: dev
`)
	writeFile(t, dir, "prod/composition.yaml", `apiVersion: kustomize.config.k8s.io/v1alpha1
kind: Composition
transformersFrom:
- path: ../base
transformerOverrides:
- apiVersion: fn.example.com/v1
  kind: SetNamespace
  metadata:
    name: ns
  namespace: prod
transformers:
- apiVersion: builtin
  kind: PrefixSuffixTransformer
  metadata:
    name: prefix
  prefix: prod-
  fieldSpecs:
  - path: metadata/name
- apiVersion: fn.example.com/v1
  kind: SetLabels
  metadata:
    name: labels
  labels:
    env: prod
`)
	out := run{env: pub.env}.krm(t, append([]string{"build", filepath.Join(dir, "prod")}, flags(t, pub.catalog)...)...)
	if out.code != 0 {
		t.Fatal(out)
	}
	// kustomize itself read deployment.yaml (an inline Kustomization), and kustomize drops comments
	for _, want := range []string{"name: prod-web", "namespace: prod", "env: prod", "replicas: 3"} {
		if !strings.Contains(out.stdout, want) {
			t.Errorf("build output lacks %q:\n%s", want, out.stdout)
		}
	}
	if strings.Contains(out.stdout, "config.kubernetes.io") {
		t.Errorf("orchestrator annotations leaked into the output:\n%s", out.stdout)
	}
}
