package starlark

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"go.starlark.net/starlark"
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
		// kpt's starlark function reports the script's error message, which starlark prefixes with "fail: "
		{"fail", `fail("namespace is required")`, []fn.Result{{Message: "fail: namespace is required", Severity: fn.SeverityError}}},
		{"fail with values", `fail("want", 3, "got", None)`, []fn.Result{{Message: "fail: want 3 got None", Severity: fn.SeverityError}}},
		{"other script error", `x = {}["missing"]`, []fn.Result{{Message: `key "missing" not in dict`, Severity: fn.SeverityError}}},
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

// A StarlarkRun or a ConfigMap's source runs as kpt's starlark function runs it (Kpt): the script
// gets no ctx.resource_list["results"], results it sets are dropped, and the items come back in its
// SDK's order (apiVersion, kind, namespace, name). A catalog's starlark runtime (not Kpt) reports
// the script's results and keeps its order. kpt main's render of the same scripts:
// testdata kpt-main/starlark-results and kpt-main/starlark-order.
func TestStarlarkAsKptFunction(t *testing.T) {
	t.Parallel()
	const add = `ctx.resource_list["items"].append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b", "namespace": "ns"}})
ctx.resource_list["items"].append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": 7}})
`
	tests := []struct {
		name, script string
		kpt          bool
		wantResults  []fn.Result
		wantOrder    []string
	}{
		{"kpt: results set are dropped, items sorted", add + `ctx.resource_list["results"] = [{"severity": "error", "message": "dropped"}]`, true,
			nil, []string{"Deployment/web", "ConfigMap/7", "ConfigMap/a", "ConfigMap/b"}},
		{"kpt: there is no results to append to", `ctx.resource_list["results"].append({"severity": "info", "message": "x"})`, true,
			[]fn.Result{{Message: `key "results" not in dict`, Severity: fn.SeverityError}}, []string{"ConfigMap/a", "Deployment/web"}},
		{"kpt: the script sees no results", `r = ctx.resource_list["items"][0]
r["data"]["results"] = str("results" in ctx.resource_list)
if "results" in ctx.resource_list:
    fail("results offered")`, true, nil, []string{"Deployment/web", "ConfigMap/a"}},
		{"catalog runtime: results kept, order kept", add + `ctx.resource_list["results"].append({"severity": "info", "message": "kept"})`, false,
			[]fn.Result{{Message: "kept", Severity: fn.SeverityInfo}}, []string{"ConfigMap/a", "Deployment/web", "ConfigMap/b", "ConfigMap/7"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out, err := (&Function{Script: tc.script, Kpt: tc.kpt}).Run(context.Background(), list(t))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantResults, out.Results); diff != "" {
				t.Errorf("results (-want +got):\n%s", diff)
			}
			var order []string
			for _, it := range out.Items {
				name := it.GetName()
				if name == "" {
					name = yaml.GetValue(it.Field("metadata").Value.Field("name").Value)
				}
				order = append(order, it.GetKind()+"/"+name)
			}
			if diff := cmp.Diff(tc.wantOrder, order); diff != "" {
				t.Errorf("items (-want +got):\n%s", diff)
			}
		})
	}
}

// Floats are written as yaml.v3's Marshal writes a float64 in kpt's starlark function: a float of
// no fraction as the plain integer (kpt main writes data six: 6, testdata kpt-main/starlark-scalars),
// infinities and NaN as .inf, -.inf and .nan (what kpt main's function wrote for float("inf")...).
func TestStarlarkFloatsAsKpt(t *testing.T) {
	t.Parallel()
	script := `ctx.resource_list["items"][0]["data"] = {"f": [6.0, -0.0, 2.5, 1e20, 1e-7, 123456789.0, 100000.0, 0.1, float("inf"), float("-inf"), float("nan")]}`
	out, err := (&Function{Script: script}).Run(context.Background(), list(t))
	if err != nil {
		t.Fatal(err)
	}
	f, _ := out.Items[0].Pipe(yaml.Lookup("data", "f"))
	got, err := f.String()
	if err != nil {
		t.Fatal(err)
	}
	if want := "- 6\n- -0\n- 2.5\n- 1e+20\n- 1e-07\n- 1.23456789e+08\n- 100000\n- 0.1\n- .inf\n- -.inf\n- .nan\n"; got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	var tags []string
	for _, n := range f.YNode().Content {
		tags = append(tags, n.ShortTag())
	}
	if diff := cmp.Diff([]string{"!!int", "!!int", "!!float", "!!float", "!!float", "!!float", "!!int", "!!float", "!!float", "!!float", "!!float"}, tags); diff != "" {
		t.Errorf("tags, as kpt reads back what it wrote (-want +got):\n%s", diff)
	}
	// an int beyond 64 bits is what kpt's function cannot write: the run fails
	if _, err := (&Function{Script: `ctx.resource_list["items"][0]["data"] = {"big": 1 << 70}`}).Run(context.Background(), list(t)); err == nil ||
		!strings.Contains(err.Error(), "1180591620717411303424 out of range (want value in signed 64-bit range)") {
		t.Errorf("an int of 71 bits: %v, want an error saying it is out of range", err)
	}
}

// encoding/yaml.star's dumps is starlib's: yaml.v2's Marshal, its YAML 1.1 quoting and folding.
// The want is what kpt main's starlark function returned for the same value.
func TestStarlarkYAMLDumpsAsKpt(t *testing.T) {
	t.Parallel()
	script := `load("encoding/yaml.star", "yaml")
d = {"t": "06:00:00", "y": "yes", "f": [6.0, 2.5], "k": ["12:30", "- x", "on", "<<"], "long": "word " * 20, 1: "int key"}
ctx.resource_list["items"][0]["data"] = {"dumps": yaml.dumps(d)}
`
	out, err := (&Function{Script: script}).Run(context.Background(), list(t))
	if err != nil {
		t.Fatal(err)
	}
	if fn.HasErrors(out.Results) {
		t.Fatal(out.Results)
	}
	got, _ := out.Items[0].Pipe(yaml.Lookup("data", "dumps"))
	want := "1: int key\nf:\n- 6\n- 2.5\nk:\n- \"12:30\"\n- '- x'\n- \"on\"\n- <<\n" +
		"long: 'word word word word word word word word word word word word word word word\n  word word word word word '\n" +
		"t: \"06:00:00\"\n\"y\": \"yes\"\n"
	if diff := cmp.Diff(want, got.YNode().Value); diff != "" {
		t.Errorf("yaml.dumps (-want +got):\n%s", diff)
	}
	for _, bad := range []struct{ script, want string }{
		{`yaml.dumps(1 << 70)`, "out of range"},
		{`yaml.dumps({"s": set([1])})`, "unmarshaling starlark value: sets aren't yet supported"},
		{"l = []\nl.append(l)\nyaml.dumps(l)", "nested too deeply"},
	} {
		out, err := (&Function{Script: "load(\"encoding/yaml.star\", \"yaml\")\n" + bad.script}).Run(context.Background(), list(t))
		if err != nil || len(out.Results) != 1 || !strings.Contains(out.Results[0].Message, bad.want) {
			t.Errorf("%s: %v %v, want an error result saying %q", bad.script, err, out.Results, bad.want)
		}
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
		out, err := (&Function{Script: script}).Run(context.Background(), list(t))
		if err == nil && !fn.HasErrors(out.Results) {
			t.Errorf("%q ran without error", script)
		}
	}
}

func TestStarlarkPrintGoesToStderr(t *testing.T) {
	t.Parallel()
	var stderr bytes.Buffer
	out, err := (&Function{Script: `print("hello", len(ctx.resource_list["items"]))`, Stderr: &stderr}).Run(context.Background(), list(t))
	if err != nil {
		t.Fatal(err)
	}
	if stderr.String() != "hello 2\n" {
		t.Errorf("stderr = %q", stderr.String())
	}
	// and kept for the step's results
	if out.Stderr != "hello 2" {
		t.Errorf("ResourceList.Stderr = %q", out.Stderr)
	}
}

// kpt's starlark function writes the keys of dicts a script creates sorted as yaml.Marshal sorts a
// Go map's (its SimpleFilter runs no FormatFilter): a new container is image, name, ports, a new
// resource apiVersion, data, kind, metadata. Keys an item had keep their order (fn.Restore).
func TestStarlarkSortsKeysAsKpt(t *testing.T) {
	t.Parallel()
	out, err := (&Function{Script: `ctx.resource_list["items"][1]["metadata"]["labels"] = {"z": "1", "a10": "3", "a2": "2"}
ctx.resource_list["items"].append({"data": {"b": "1", "a": "2"}, "metadata": {"name": "n"}, "kind": "ConfigMap", "apiVersion": "v1",
    "spec": {"containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 1}]}]}})`}).Run(context.Background(), list(t))
	if err != nil {
		t.Fatal(err)
	}
	meta, _ := out.Items[1].Pipe(yaml.Lookup("metadata"))
	if diff := cmp.Diff("labels:\n  a2: \"2\"\n  a10: \"3\"\n  z: \"1\"\nname: web\n", meta.MustString()); diff != "" {
		t.Errorf("metadata (-want +got):\n%s", diff)
	}
	want := `apiVersion: v1
data:
  a: "2"
  b: "1"
kind: ConfigMap
metadata:
  name: n
spec:
  containers:
  - image: i
    name: c
    ports:
    - containerPort: 1
`
	if diff := cmp.Diff(want, out.Items[2].MustString()); diff != "" {
		t.Errorf("new item (-want +got):\n%s", diff)
	}
}

// yamlEncoderOrder is the order yaml.v3's encoder writes the keys of a Go map in.
func yamlEncoderOrder(t testing.TB, keys []string) []string {
	t.Helper()
	m := make(map[string]int, len(keys))
	for _, k := range keys {
		m[k] = 0
	}
	var n yaml.Node
	if err := n.Encode(m); err != nil {
		t.Fatal(err)
	}
	got := make([]string, 0, len(keys))
	for i := 0; i+1 < len(n.Content); i += 2 {
		got = append(got, n.Content[i].Value)
	}
	return got
}

func keyOrder(keys []string) []string {
	items := make([]starlark.Tuple, 0, len(keys))
	for _, k := range keys {
		items = append(items, starlark.Tuple{starlark.String(k), starlark.None})
	}
	out := make([]string, 0, len(keys))
	for _, kv := range kptKeyOrder(items) {
		out = append(out, string(kv[0].(starlark.String)))
	}
	return out
}

// kptKeyOrder is yaml.v3's map key order, checked against the encoder itself.
func TestKptKeyOrderIsYAMLEncoderOrder(t *testing.T) {
	t.Parallel()
	for _, keys := range [][]string{
		{"name", "image", "ports", "args", "env"},
		{"spec", "metadata", "kind", "apiVersion", "data", "status"},
		{"a10", "a2", "a1", "b", "a"},
		{"x01", "x1", "x001", "x10", "x010", "x0"},
		{"10", "9", "1a", "1-", "1", "-", "_", "a", "A", "Z", "z"},
		{"a.b", "a-b", "a_b", "ab", "a/b", "a0", "é", "e", "ß"},
		{"v1beta1", "v1", "v1alpha2", "v10", "v2"},
		{"k8s.io/x", "k8s10.io", "k8s9.io", "app.kubernetes.io/name", "app"},
		{"99999999999999999999", "9", "100000000000000000000"},
	} {
		if diff := cmp.Diff(yamlEncoderOrder(t, keys), keyOrder(keys)); diff != "" {
			t.Errorf("%q (-yaml.v3 +kptKeyOrder):\n%s", keys, diff)
		}
	}
}

// FuzzKptKeyOrder compares yamlKeyLess with yaml.v3's encoder on pairs of keys.
func FuzzKptKeyOrder(f *testing.F) {
	for _, s := range [][2]string{{"a2", "a10"}, {"x01", "x1"}, {"1a", "1-"}, {"name", "image"}, {"10", "010"}, {"é", "e"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if a == b || !utf8.ValidString(a) || !utf8.ValidString(b) {
			return
		}
		keys := []string{a, b}
		if diff := cmp.Diff(yamlEncoderOrder(t, keys), keyOrder(keys)); diff != "" {
			t.Errorf("(-yaml.v3 +kptKeyOrder):\n%s", diff)
		}
	})
}

// The modules kpt's starlark function offers to load(), by kpt's names.
func TestStarlarkLoadsKptModules(t *testing.T) {
	t.Parallel()
	script := `
load("encoding/json.star", "json")
load("encoding/yaml.star", "yaml")
load("encoding/base64.star", "base64")
load("hash.star", "hash")
load("re.star", "re")
load("math.star", "math")
load("time.star", "time")
load("krmfn.star", "krmfn")
r = ctx.resource_list["items"][1]
d = {}
d["json"] = json.encode({"b": [1, True, None], "a": "x"})
d["json_back"] = json.decode('{"k": [1, 2]}')["k"][1]
d["dumps"] = json.dumps([1])
d["yaml"] = yaml.dumps({"k": "v"})
d["yaml_back"] = yaml.loads("a:\n  b: 3\n")["a"]["b"]
d["b64"] = base64.encode("hello")
d["b64_back"] = base64.decode("aGVsbG8=")
d["sha256"] = hash.sha256("abc")
d["findall"] = re.findall("[0-9]+", "a1b22c333")
d["match"] = re.match("(w+)e", "web")
d["sub"] = re.sub("e", "E", "web")
d["split"] = re.split(",", "a,b,c")
d["floor"] = math.floor(2.7)
d["dur"] = str(time.parse_duration("90s"))
d["gvk"] = krmfn.match_gvk(r, "apps/v1", "Deployment")
d["core"] = krmfn.match_gvk(ctx.resource_list["items"][0], "v1", "ConfigMap")
d["name"] = krmfn.match_name(r, "web")
d["ns"] = krmfn.match_namespace(r, "")
r["spec"] = {"probe": d}
`
	out, err := (&Function{Script: script}).Run(context.Background(), list(t))
	if err != nil {
		t.Fatal(err)
	}
	if fn.HasErrors(out.Results) {
		t.Fatalf("results: %v", out.Results)
	}
	probe, err := out.Items[1].Pipe(yaml.Lookup("spec", "probe"))
	if err != nil || probe == nil {
		t.Fatalf("no probe: %v", err)
	}
	got := map[string]any{}
	if err := probe.YNode().Decode(&got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"json": `{"a":"x","b":[1,true,null]}`, "json_back": 2, "dumps": "[1]",
		"yaml": "k: v\n", "yaml_back": 3, "b64": "aGVsbG8=", "b64_back": "hello",
		"sha256":  "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
		"findall": []any{"1", "22", "333"}, "match": []any{"we", "w"}, "sub": "wEb", "split": []any{"a", "b", "c"},
		"floor": 2, "dur": "1m30s", "gvk": true, "core": true, "name": true, "ns": true,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("module results (-want +got):\n%s", diff)
	}
	out, err = (&Function{Script: `load("nope.star", "nope")`}).Run(context.Background(), list(t))
	if err != nil || len(out.Results) != 1 || !strings.Contains(out.Results[0].Message, `module "nope.star" is not available`) {
		t.Errorf("load of nope.star: %v %v", err, out)
	}
}

// ctx.open_api is the Kubernetes OpenAPI document (kyaml's), as in kpt; ctx.environment is empty.
func TestStarlarkOpenAPIAndEnvironment(t *testing.T) {
	t.Parallel()
	script := `
defs = ctx.open_api["definitions"]
d = defs["io.k8s.api.apps.v1.Deployment"]
ctx.resource_list["items"][1]["spec"] = {
  "count": len(defs) > 500,
  "replicas": d["properties"]["spec"]["$ref"],
  "env": len(ctx.environment),
}`
	out, err := (&Function{Script: script}).Run(context.Background(), list(t))
	if err != nil {
		t.Fatal(err)
	}
	if fn.HasErrors(out.Results) {
		t.Fatalf("results: %v", out.Results)
	}
	spec, _ := out.Items[1].Pipe(yaml.Lookup("spec"))
	if s, _ := spec.String(); s != "count: true\nenv: 0\nreplicas: '#/definitions/io.k8s.api.apps.v1.DeploymentSpec'\n" {
		t.Errorf("spec =\n%s", s)
	}
}

// Every module kpt's starlark function offers (krm-functions-catalog's functions/go/starlark,
// loadlib.go: starlib's fourteen and krmfn) loads, with the names it binds, in-process and in the
// sandbox, with no network allowed.
func TestStarlarkLoadsEveryKptModule(t *testing.T) {
	t.Parallel()
	kpt := [][2]string{
		{"bsoup.star", "bsoup"}, {"encoding/base64.star", "base64"}, {"encoding/csv.star", "csv"},
		{"encoding/json.star", "json"}, {"encoding/yaml.star", "yaml"}, {"geo.star", "geo"},
		{"hash.star", "hash"}, {"html.star", "html"}, {"http.star", "http"}, {"math.star", "math"},
		{"re.star", "re"}, {"time.star", "time"}, {"xlsx.star", "xlsx"}, {"zipfile.star", "ZipFile"},
		{"krmfn.star", "krmfn"},
	}
	var script strings.Builder
	for _, m := range kpt {
		fmt.Fprintf(&script, "load(%q, %q)\n", m[0], m[1])
	}
	for _, m := range kpt {
		fmt.Fprintf(&script, "ctx.resource_list[\"items\"][0][\"data\"][%q] = type(%s)\n", m[1], m[1])
	}
	for _, sb := range []*Sandbox{nil, testSandbox(0)} {
		out, err := (&Function{Script: script.String(), Sandbox: sb}).Run(context.Background(), list(t))
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Results) != 0 {
			t.Fatalf("sandbox %t: %v", sb != nil, out.Results)
		}
		data := out.Items[0].GetDataMap()
		for _, m := range kpt {
			if data[m[1]] == "" {
				t.Errorf("sandbox %t: %s bound nothing", sb != nil, m[1])
			}
		}
	}
	if len(modules(netAccess{})) != len(kpt) {
		t.Errorf("%d modules offered, kpt's function offers %d", len(modules(netAccess{})), len(kpt))
	}
}
