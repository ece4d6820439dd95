package fn

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const sampleList = `apiVersion: config.kubernetes.io/v1
kind: ResourceList
items:
- apiVersion: v1
  kind: Service
  metadata:
    name: wordpress
    annotations:
      internal.config.kubernetes.io/index: "0"
      internal.config.kubernetes.io/path: "service.yaml"
  spec: # Example comment
    type: LoadBalancer
functionConfig:
  apiVersion: foo-corp.com/v1
  kind: FulfillmentCenter
  metadata:
    name: staging
results:
- message: "Invalid type. Expected: integer, given: string"
  severity: error
  resourceRef:
    apiVersion: v1
    kind: Service
    name: wordpress
  field:
    path: spec.ports.0.port
  file:
    path: service.yaml
`

func TestDecodeResourceList(t *testing.T) {
	t.Parallel()
	rl, format, err := DecodeResourceList([]byte(sampleList))
	if err != nil {
		t.Fatal(err)
	}
	if format != YAML {
		t.Errorf("format = %v, want yaml", format)
	}
	if len(rl.Items) != 1 || rl.Items[0].GetName() != "wordpress" {
		t.Fatalf("items = %v", rl.Items)
	}
	if rl.FunctionConfig.GetKind() != "FulfillmentCenter" {
		t.Errorf("functionConfig kind = %q", rl.FunctionConfig.GetKind())
	}
	want := []Result{{
		Message: "Invalid type. Expected: integer, given: string", Severity: SeverityError,
		ResourceRef: &ResourceRef{APIVersion: "v1", Kind: "Service", Name: "wordpress"},
		Field:       &Field{Path: "spec.ports.0.port"},
		File:        &File{Path: "service.yaml"},
	}}
	if diff := cmp.Diff(want, rl.Results); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}

	// YAML out keeps the comment; JSON out and back gives the same list
	y, err := rl.Encode(YAML)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(y), "spec: # Example comment") {
		t.Errorf("YAML output lost the comment:\n%s", y)
	}
	j, err := rl.Encode(JSON)
	if err != nil {
		t.Fatal(err)
	}
	back, format, err := DecodeResourceList(j)
	if err != nil {
		t.Fatal(err)
	}
	if format != JSON {
		t.Errorf("format = %v, want json", format)
	}
	if diff := cmp.Diff(rl.Results, back.Results); diff != "" {
		t.Errorf("results after JSON (-want +got):\n%s", diff)
	}
	j1, _ := AppendJSON(nil, rl.Items[0].YNode())
	j2, _ := AppendJSON(nil, back.Items[0].YNode())
	if diff := cmp.Diff(string(j1), string(j2)); diff != "" {
		t.Errorf("item after JSON (-want +got):\n%s", diff)
	}
}

func TestDecodeResourceListErrors(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, in, want string }{
		{"empty", "", "empty input"},
		{"wrong kind", "apiVersion: v1\nkind: List\nitems: []\n", "expected one document of kind ResourceList"},
		{"wrong apiVersion", "apiVersion: config.kubernetes.io/v2\nkind: ResourceList\nitems: []\n", "apiVersion"},
		{"items not a list", "kind: ResourceList\nitems: {a: 1}\n", "items is a mapping"},
		{"item without kind", "kind: ResourceList\nitems:\n- apiVersion: v1\n", "item 0 has no kind"},
		{"item a scalar", "kind: ResourceList\nitems:\n- x\n", "item 0 is a scalar"},
		{"functionConfig a list", "kind: ResourceList\nitems: []\nfunctionConfig: [1]\n", "functionConfig is a list"},
		{"results malformed", "kind: ResourceList\nitems: []\nresults: 3\n", "results"},
		{"bad yaml", "kind: ResourceList\nitems: [\n", "invalid ResourceList"},
		{"bad json", `{"kind": "ResourceList", "items": [}`, "JSON at offset"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := DecodeResourceList([]byte(tc.in))
			if err == nil || !errors.Is(err, ErrInvalidResourceList) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want ErrInvalidResourceList containing %q", err, tc.want)
			}
		})
	}
}

func TestDecodeInputStream(t *testing.T) {
	t.Parallel()
	in := "# first\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\n# only a comment\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n"
	rl, how, err := DecodeInput([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if !how.Stream || how.Format != YAML || len(rl.Items) != 2 {
		t.Fatalf("input = %+v with %d items, want a YAML stream of 2", how, len(rl.Items))
	}
	out, err := rl.EncodeOutput(how)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(out), "# first\n") || !strings.Contains(string(out), "---\n") {
		t.Errorf("stream output lost its shape:\n%s", out)
	}
}

// TestDecodeResultsShapes: results as a list (the specification), and in the shape older SDKs
// (kyaml v0.10's framework) write, a named list whose items kpt lifts out.
func TestDecodeResultsShapes(t *testing.T) {
	t.Parallel()
	want := []Result{{Message: "set field value to \"3\"", Severity: SeverityInfo}, {Message: "no severity"}}
	for name, results := range map[string]string{
		"list":           "results:\n- message: set field value to \"3\"\n  severity: info\n- message: no severity\n",
		"named list":     "results:\n  name: apply-setters\n  items:\n  - message: set field value to \"3\"\n    severity: info\n  - message: no severity\n",
		"named, no list": "results:\n  name: apply-setters\n",
	} {
		rl, _, err := DecodeResourceList([]byte("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\n" + results))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		w := want
		if name == "named, no list" {
			w = nil
		}
		if d := cmp.Diff(w, rl.Results); d != "" {
			t.Errorf("%s: results (-want +got):\n%s", name, d)
		}
		if HasErrors(rl.Results) {
			t.Errorf("%s: a result without severity counted as an error", name)
		}
	}
}
