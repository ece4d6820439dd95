package resolver

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

func TestExplicitRuntime(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, cfg string
		want      *Explicit
	}{
		{"none", "apiVersion: fn.example.com/v1\nkind: SetNamespace\nnamespace: x\n", nil},
		{"annotation container", `apiVersion: fn.example.com/v1
kind: SetNamespace
metadata:
  annotations:
    config.kubernetes.io/function: |
      container:
        image: example.com/fn/set-namespace:v1
        network: true
        mounts: [{type: bind, src: /data, dst: /in}]
        envs: [A=1]
`, &Explicit{Source: "annotation config.kubernetes.io/function", Container: &ExplicitContainer{
			Image: "example.com/fn/set-namespace:v1", Network: true, Mounts: []StorageMount{{Type: "bind", Src: "/data", Dst: "/in"}}, Env: []string{"A=1"}}}},
		{"legacy annotation exec", `apiVersion: fn.example.com/v1
kind: SetNamespace
metadata:
  annotations:
    config.k8s.io/function: |
      exec:
        path: ./fn
        args: [--x]
`, &Explicit{Source: "annotation config.kubernetes.io/function", Exec: &ExplicitExec{Path: "./fn", Args: []string{"--x"}}}},
		{"runtime field", `apiVersion: example.com/v1
kind: JavaApplication
runtime: {container: {image: example.com/java:v1.0.0}}
`, &Explicit{Source: "runtime field", Container: &ExplicitContainer{Image: "example.com/java:v1.0.0"}}},
		{"runtime field starlark", "apiVersion: example.com/v1\nkind: X\nruntime:\n  starlark:\n    path: fn.star\n",
			&Explicit{Source: "runtime field", Starlark: &ExplicitStarlark{Path: "fn.star"}}},
		{"StarlarkRun", "apiVersion: fn.kpt.dev/v1alpha1\nkind: StarlarkRun\nmetadata:\n  name: s\nsource: |\n  print(1)\nparams:\n  a: b\n",
			&Explicit{Source: "StarlarkRun", Starlark: &ExplicitStarlark{Script: "print(1)\n", Name: "s"}}},
		{"ConfigMap with source", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: s\ndata:\n  source: print(2)\n",
			&Explicit{Source: "ConfigMap data.source", Starlark: &ExplicitStarlark{Script: "print(2)", Name: "s"}}},
		{"ConfigMap without source", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: s\ndata:\n  a: b\n", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := yaml.Parse(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			got, err := ExplicitRuntime(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseFunctionAnnotationErrors(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"", "is empty"},
		{"deferFailure: true\n", "exactly one"},
		{"container: {image: a}\nexec: {path: b}\n", "exactly one"},
		{"container: {}\n", "needs an image"},
		{"exec: {args: [x]}\n", "needs a path"},
		{"starlark: {}\n", "needs a path"},
		{"container: {image: a, networks: true}\n", "networks"},
		{"container: {image: a, mounts: [{type: bind}]}\n", "src and dst"},
		{"[not, a, mapping]\n", "runtime"},
		{"container: {image: [1]}\n", "runtime"},
		{strings.Repeat("#", maxSpecBytes+1), "larger than"},
	}
	for _, tc := range tests {
		_, err := ParseFunctionAnnotation(tc.in)
		if !errors.Is(err, ErrInvalidRuntime) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseFunctionAnnotation(%.40q) error = %v, want ErrInvalidRuntime containing %q", tc.in, err, tc.want)
		}
	}
	cfg, _ := yaml.Parse("apiVersion: fn.kpt.dev/v1alpha1\nkind: StarlarkRun\nmetadata:\n  name: s\n")
	if _, err := ExplicitRuntime(cfg); !errors.Is(err, ErrInvalidRuntime) {
		t.Errorf("a StarlarkRun without source: error = %v, want ErrInvalidRuntime", err)
	}
}

// FuzzParseFunctionAnnotation: the annotation is text in a user's (or a generator's) YAML. Parsing
// must never panic, and what it accepts names exactly one runtime with its required field.
//
//	go test ./resolver -run '^$' -fuzz FuzzParseFunctionAnnotation -fuzztime 30s
func FuzzParseFunctionAnnotation(f *testing.F) {
	for _, seed := range []string{
		"container:\n  image: example.com/fn:v1\n",
		"container: {image: a, network: true, mounts: [{type: bind, src: /a, dst: /b, rw: true}], envs: [A=1, B]}\n",
		"exec:\n  path: ./fn\n  args: [a, b]\n",
		"starlark: {path: x.star}\n",
		"deferFailure: true\nexec: {path: x}\n",
		"a: &a [*a]\n",
		"container: !!binary aGVsbG8=\n",
		"{",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := ParseFunctionAnnotation(s)
		if err != nil {
			return
		}
		n := 0
		if e.Container != nil {
			n++
			if strings.TrimSpace(e.Container.Image) == "" {
				t.Fatal("container without image accepted")
			}
		}
		if e.Exec != nil {
			n++
			if strings.TrimSpace(e.Exec.Path) == "" {
				t.Fatal("exec without path accepted")
			}
		}
		if e.Starlark != nil {
			n++
		}
		if n != 1 {
			t.Fatalf("%d runtimes accepted", n)
		}
	})
}
