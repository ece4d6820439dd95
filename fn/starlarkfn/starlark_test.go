package starlarkfn

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/fn"
)

const items = `apiVersion: config.kubernetes.io/v1
kind: ResourceList
items:
- apiVersion: v1
  kind: ConfigMap
  metadata:
    name: a
  data:
    n: "1"
- apiVersion: apps/v1
  kind: Deployment
  metadata:
    name: web
  spec:
    replicas: 2
    paused: false
    ratio: 0.5
functionConfig:
  apiVersion: fn.kpt.dev/v1alpha1
  kind: StarlarkRun
  metadata:
    name: set-ns
  params:
    namespace: prod
`

const setNamespace = `
def set_ns(resources, ns):
  for r in resources:
    r["metadata"]["namespace"] = ns

set_ns(ctx.resource_list["items"], ctx.resource_list["functionConfig"]["params"]["namespace"])
`

func list(t *testing.T) *fn.ResourceList {
	t.Helper()
	rl, _, err := fn.DecodeResourceList([]byte(items))
	if err != nil {
		t.Fatal(err)
	}
	return rl
}

func TestStarlarkRun(t *testing.T) {
	t.Parallel()
	out, err := (&Function{Script: setNamespace}).Run(context.Background(), list(t))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range out.Items {
		got = append(got, it.GetNamespace())
	}
	if diff := cmp.Diff([]string{"prod", "prod"}, got); diff != "" {
		t.Error(diff)
	}
	// types survive the trip through starlark
	d, _ := out.Items[1].String()
	for _, want := range []string{"replicas: 2\n", "paused: false\n", "ratio: 0.5\n"} {
		if !strings.Contains(d, want) {
			t.Errorf("deployment lost %q:\n%s", want, d)
		}
	}
	if c, _ := out.Items[0].String(); !strings.Contains(c, `n: "1"`) && !strings.Contains(c, `n: '1'`) {
		t.Errorf("the string \"1\" became something else:\n%s", c)
	}
}

func TestStarlarkResultsAndFail(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, script string
		want         []fn.Result
	}{
		{"fail", `fail("namespace is required")`, []fn.Result{{Message: "namespace is required", Severity: fn.SeverityError}}},
		{"results appended", `ctx.resource_list["results"].append({"message": "looked at " + str(len(ctx.resource_list["items"])), "severity": "info"})`,
			[]fn.Result{{Message: "looked at 2", Severity: fn.SeverityInfo}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out, err := (&Function{Script: tc.script}).Run(context.Background(), list(t))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, out.Results); diff != "" {
				t.Errorf("results (-want +got):\n%s", diff)
			}
			if len(out.Items) != 2 {
				t.Errorf("items = %d, want the 2 unchanged", len(out.Items))
			}
		})
	}
}

func TestStarlarkBounds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		f    *Function
		want string
	}{
		{"steps", &Function{Script: "def f():\n  for i in range(1000000000):\n    pass\nf()\n", MaxSteps: 10000}, "too many steps"},
		{"wall time", &Function{Script: "def f():\n  while True:\n    pass\nf()\n", MaxSteps: 1 << 62, Timeout: 200 * time.Millisecond}, "wall time"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			_, err := tc.f.Run(context.Background(), list(t))
			if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want ErrLimit about %q", err, tc.want)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("took %s", d)
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(100 * time.Millisecond); cancel() }()
	_, err := (&Function{Script: "while True:\n  pass\n", MaxSteps: 1 << 62}).Run(ctx, list(t))
	if !errors.Is(err, ErrLimit) {
		t.Errorf("cancelled context: error = %v, want ErrLimit", err)
	}
}

func TestStarlarkHasNoIO(t *testing.T) {
	t.Parallel()
	for _, script := range []string{
		`load("os.star", "x")`,
		`open("/etc/passwd")`,
		`x = http.get("https://example.com")`,
		`x = 1 +`,
		`ctx.resource_list["items"] = 3`,
		`ctx.resource_list["items"].append({"a": lambda: 1})`,
		`ctx.resource_list["items"][0][1] = 2`,
	} {
		_, err := (&Function{Script: script}).Run(context.Background(), list(t))
		if err == nil {
			t.Errorf("%q ran without error", script)
		}
	}
}

func TestStarlarkPrintGoesToStderr(t *testing.T) {
	t.Parallel()
	var stderr bytes.Buffer
	if _, err := (&Function{Script: `print("hello", len(ctx.resource_list["items"]))`, Stderr: &stderr}).Run(context.Background(), list(t)); err != nil {
		t.Fatal(err)
	}
	if stderr.String() != "hello 2\n" {
		t.Errorf("stderr = %q", stderr.String())
	}
}

func TestStarlarkKeepsFieldOrder(t *testing.T) {
	t.Parallel()
	out, err := (&Function{Script: `ctx.resource_list["items"][1]["metadata"]["labels"] = {"z": "1", "a": "2"}`}).Run(context.Background(), list(t))
	if err != nil {
		t.Fatal(err)
	}
	meta, _ := out.Items[1].Pipe(yaml.Lookup("metadata"))
	s, _ := meta.String()
	if s != "name: web\nlabels:\n  z: \"1\"\n  a: \"2\"\n" {
		t.Errorf("metadata =\n%s", s)
	}
}
