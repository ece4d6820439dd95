package functions

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/examples/fnexamples"
	"github.com/krm-catalog/krm-catalog/fn"
	"github.com/krm-catalog/krm-catalog/fn/evaluator/evaluatorpb"
	"github.com/krm-catalog/krm-catalog/fn/fntest"
)

// The verdict conformance matrix: every test function (a row) run through every way krm-catalog
// runs a function (a column: a command, a runtime, a server mode, a wire) must come to the same
// verdict: the same exit status (gRPC code for fn serve), the same results.yaml and the same
// files written. docs/runtimes.md, "The verdict", states the rule; this holds every mode to it.
// A cell that cannot apply says why (matrixRow.notApplicable). Adding a mode is adding a column
// to matrixModes.

// matrixMode is a column: one way a function call happens.
type matrixMode struct {
	// command is how the function is run: "fn run", "fn render", "build" (a Kustomization),
	// "build composition", "fn proxy" (under the real kustomize), "fn serve" (over gRPC) or
	// "fn serve --fallback" (a fn serve whose catalogs list nothing, forwarding to one that runs it).
	command string
	// runtime is exec, container or starlark (--runtime).
	runtime string
	// server is the --server-mode, "" where it does not apply (starlark runs in-process).
	server string
	// yamlWire sends YAML to the spec v2 functions (--yaml-wire); JSON otherwise.
	yamlWire bool
}

func (m matrixMode) String() string {
	s := m.command + "/" + m.runtime
	if m.server != "" {
		s += "/" + m.server
		if m.yamlWire {
			s += "/yaml"
		} else {
			s += "/json"
		}
	}
	return s
}

const (
	cmdRun         = "fn run"
	cmdRender      = "fn render"
	cmdBuild       = "build"
	cmdComposition = "build composition"
	cmdProxy       = "fn proxy"
	cmdServe       = "fn serve"
	cmdFallback    = "fn serve --fallback"
)

// matrixModes are the columns. Every command runs every runtime; exec, the cheap one, in every
// server mode on both wires; containers as a process and as a server, the wires alternating (a
// container costs seconds: auto, which starts a server for a function used twice, stands for
// always except in fn run). fn proxy runs one function per process, so auto never starts a server
// there; fn serve starts one unless told never (its default is always).
func matrixModes() []matrixMode {
	var modes []matrixMode
	for _, c := range []string{cmdRun, cmdRender, cmdBuild, cmdComposition} {
		for _, server := range []string{"never", "auto", "always"} {
			for _, yamlWire := range []bool{false, true} {
				modes = append(modes, matrixMode{c, "exec", server, yamlWire})
			}
		}
		modes = append(modes, matrixMode{c, "container", "never", false}, matrixMode{c, "container", "auto", true})
		if c == cmdRun {
			modes = append(modes, matrixMode{c, "container", "always", false})
		}
		modes = append(modes, matrixMode{c, "starlark", "", false})
	}
	for _, c := range []string{cmdProxy, cmdServe} {
		for _, server := range []string{"never", "always"} {
			for _, yamlWire := range []bool{false, true} {
				modes = append(modes, matrixMode{c, "exec", server, yamlWire})
			}
		}
		modes = append(modes, matrixMode{c, "container", "never", false}, matrixMode{c, "container", "always", true}, matrixMode{c, "starlark", "", false})
	}
	// forwarded calls: the answer of the fn serve behind comes back as it was, so a few of its modes
	// stand for all
	modes = append(modes, matrixMode{cmdFallback, "exec", "always", true}, matrixMode{cmdFallback, "exec", "never", false},
		matrixMode{cmdFallback, "container", "always", true}, matrixMode{cmdFallback, "starlark", "", false})
	return modes
}

// matrixRow is a test function: a kind of e2e/functions/testdata/verdictfn (and, where a script
// can behave so, a starlark script), and the verdict every cell must come to.
type matrixRow struct {
	name string
	kind string
	// v2 says whether the catalog declares spec v2 (so that server modes start it as a server).
	v2 bool
	// script is the starlark version of the function; "" when the row has none, noScript says why.
	script, noScript string
	// timeout runs the row's cells with --timeout 3s.
	timeout bool
	want    verdict
}

// verdict is what a run came to, in the terms every command shares.
type verdict struct {
	failed bool
	// steps are results.yaml's items (their function names and standard error left out).
	steps []fn.FunctionResults
	// written says what became of the resources: "annotated" (every one, by VerdictOK), or
	// "nothing" (the package unchanged; no output printed or answered).
	written string
}

// notApplicable says why a row cannot run in a mode; "" when it can.
func (r matrixRow) notApplicable(m matrixMode) string {
	if m.runtime == "starlark" && r.script == "" {
		return r.noScript
	}
	if r.kind == "VerdictOutside" {
		switch m.command {
		case cmdBuild, cmdComposition, cmdProxy:
			return "it writes no package: build and kustomize print the resources, and a path annotation is output, not a write"
		case cmdServe, cmdFallback:
			return "it writes no package: Porch writes it, and refuses a path outside it itself (kpt's enforcePathInvariants)"
		}
	}
	return ""
}

// project is the verdict as a mode can observe it: fn proxy leaves no results file (kustomize
// keeps none), and fn serve answers one call, with its results but not an exit code.
func (v verdict) project(m matrixMode) verdict {
	switch m.command {
	case cmdProxy:
		v.steps = nil
	case cmdServe, cmdFallback:
		var results []fn.Result
		if len(v.steps) > 0 {
			results = v.steps[0].Results
		}
		v.steps = []fn.FunctionResults{{Results: results}}
	}
	return v
}

const (
	annotated = "annotated"
	nothing   = "nothing"
)

func errorResults() []fn.Result {
	ref := &fn.ResourceRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}
	file := &fn.File{Path: "deployment.yaml"}
	return []fn.Result{
		{Severity: fn.SeverityError, Message: "no cpu limit", ResourceRef: ref, Field: &fn.Field{Path: "spec.template.spec.containers[0].resources.limits.cpu"}, File: file},
		{Severity: fn.SeverityError, Message: "no memory limit", ResourceRef: ref, Field: &fn.Field{Path: "spec.template.spec.containers[0].resources.limits.memory"}, File: file},
	}
}

const starlarkErrors = `for item in ctx.resource_list["items"]:
    if item["kind"] != "Deployment":
        continue
    ref = {"apiVersion": item["apiVersion"], "kind": item["kind"], "name": item["metadata"]["name"]}
    for res in ["cpu", "memory"]:
        ctx.resource_list["results"].append({
            "severity": "error",
            "message": "no %s limit" % res,
            "resourceRef": ref,
            "field": {"path": "spec.template.spec.containers[0].resources.limits." + res},
            "file": {"path": "deployment.yaml"},
        })
`

// matrixRows are the rows: the test functions of the issue, each with the verdict every mode
// must come to.
func matrixRows() []matrixRow {
	okResults := []fn.Result{{Severity: fn.SeverityInfo, Message: "annotated every resource"}, {Severity: fn.SeverityWarning, Message: "a warning is not a failure"}}
	return []matrixRow{
		{
			name: "succeeds", kind: "VerdictOK", v2: true,
			script: `items = ctx.resource_list["items"]
for item in items:
    meta = item.setdefault("metadata", {})
    annotations = meta.get("annotations") or {}
    annotations["verdict.example.com/seen"] = "true"
    meta["annotations"] = annotations
ctx.resource_list["results"].append({"severity": "info", "message": "annotated every resource"})
ctx.resource_list["results"].append({"severity": "warning", "message": "a warning is not a failure"})
`,
			want: verdict{steps: []fn.FunctionResults{{Results: okResults}, {Results: okResults}}, written: annotated},
		},
		{
			// a spec v1 function: every server mode runs it as a process
			name: "error results and exit 1", kind: "VerdictErrors", script: starlarkErrors,
			want: verdict{failed: true, steps: []fn.FunctionResults{{ExitCode: 1, Results: errorResults()}}, written: nothing},
		},
		{
			// spec v2: the server modes run it as a server, which answers its error results
			name: "error results from a server", kind: "VerdictServerErrors", v2: true,
			noScript: "starlark runs in-process, never as a server; the row above holds its error results",
			want:     verdict{failed: true, steps: []fn.FunctionResults{{ExitCode: 1, Results: errorResults()}}, written: nothing},
		},
		{
			name: "exit non-zero without results", kind: "VerdictExit", v2: true,
			noScript: "a starlark script has no exit status: fail() is an error result (the rows above)",
			want:     verdict{failed: true, steps: []fn.FunctionResults{{ExitCode: 3}}, written: nothing},
		},
		{
			name: "a crash", kind: "VerdictCrash", v2: true,
			noScript: "a script error cannot end its runtime: it is an error result (the rows above)",
			want:     verdict{failed: true, steps: []fn.FunctionResults{{ExitCode: 2}}, written: nothing},
		},
		{
			// a script is bounded by 100,000,000 steps as well as by time: whichever ends it first,
			// the verdict is the same
			name: "a hang past its timeout", kind: "VerdictHang", v2: true, timeout: true,
			script: "for i in range(1 << 40):\n    pass\n",
			want:   verdict{failed: true, steps: []fn.FunctionResults{{ExitCode: 1}}, written: nothing},
		},
		{
			name: "output that is not a ResourceList", kind: "VerdictGarbage", v2: true,
			noScript: "the starlark runtime writes the ResourceList itself",
			want:     verdict{failed: true, steps: []fn.FunctionResults{{ExitCode: 1}}, written: nothing},
		},
		{
			name: "a write outside the package", kind: "VerdictOutside", v2: true,
			script: `for item in ctx.resource_list["items"]:
    if item["kind"] == "Deployment":
        item["metadata"]["annotations"]["internal.config.kubernetes.io/path"] = "../outside.yaml"
        item["metadata"]["annotations"]["config.kubernetes.io/path"] = "../outside.yaml"
`,
			// as kpt's function runner (enforcePathInvariants), the step that did it fails
			want: verdict{failed: true, steps: []fn.FunctionResults{{ExitCode: 1, Results: []fn.Result{{Severity: fn.SeverityError, Message: `invalid package: Deployment/web: path "../outside.yaml" is outside the package`}}}}, written: nothing},
		},
	}
}

// matrixEnv is what every cell runs against: the test function served over https and pushed as
// an image, a catalog listing one function per row, and the tools.
type matrixEnv struct {
	catalog   string
	env       []string
	cache     string
	kustomize string // "" when missing outside CI
	engine    string // "" when Docker is missing outside CI
	registry  string // host:port of the registry holding the image
	image     map[string]string
}

func newMatrixEnv(t *testing.T, rows []matrixRow) *matrixEnv {
	t.Helper()
	e := &matrixEnv{cache: t.TempDir(), image: map[string]string{}}
	t.Run("kustomize", func(t *testing.T) { e.kustomize = fntest.Kustomize(t) })
	t.Run("docker", func(t *testing.T) { e.engine = fntest.Docker(t) })
	bin := fntest.GoBuild(t, bins.Root, "./e2e/functions/testdata/verdictfn")
	scripts := t.TempDir()
	files := map[string]string{"/verdictfn": bin}
	for _, r := range rows {
		if r.script != "" {
			files["/"+r.kind+".star"] = writeFile(t, scripts, r.kind+".star", r.script)
		}
	}
	srv, _ := fntest.TLSFiles(t, files)
	e.env = []string{"SSL_CERT_FILE=" + fntest.CAFile(t, srv)}
	digest := "sha256:" + strings.Repeat("0", 64)
	repo := func(r matrixRow) string { return "registry.example.com/verdict/" + strings.ToLower(r.kind) }
	if e.engine != "" {
		host := fntest.Registry(t)
		e.registry = host
		pinned := fntest.Image(t, e.engine, bin, host, "verdict/fn")
		_, digest, _ = strings.Cut(pinned, "@")
		repo = func(r matrixRow) string { return host + "/verdict/" + strings.ToLower(r.kind) }
		for _, r := range rows {
			for _, args := range [][]string{{"tag", host + "/verdict/fn:test", repo(r) + ":v1"}, {"push", "-q", repo(r) + ":v1"}} {
				if out, err := exec.Command(e.engine, args...).CombinedOutput(); err != nil {
					t.Fatalf("%s %v: %v\n%s", e.engine, args, err, out)
				}
			}
			t.Cleanup(func() { _ = exec.Command(e.engine, "rmi", repo(r)+":v1").Run() })
		}
	}
	var b strings.Builder
	b.WriteString("apiVersion: config.kubernetes.io/v1alpha1\nkind: KRMFunctionCatalog\nmetadata:\n  name: verdict\nspec:\n  krmFunctions:\n")
	p := fnexamples.Current()
	for _, r := range rows {
		e.image[r.kind] = repo(r) + ":v1"
		fmt.Fprintf(&b, `  - group: fn.example.com
    names:
      kind: %s
    description: The verdict matrix's %q.
    publisher: example.com
    versions:
      - name: v1
        runtime:
          container:
            image: %s@%s
          exec:
            platforms:
              - bin: verdictfn
                os: %s
                arch: %s
                uri: %s/verdictfn
                sha256: %s
`, r.kind, r.name, e.image[r.kind], digest, p.OS, p.Arch, srv.URL, sha([]byte(readFile(t, bin))))
		if r.script != "" {
			fmt.Fprintf(&b, "          starlark:\n            uri: %s/%s.star\n            sha256: %s\n", srv.URL, r.kind, sha([]byte(r.script)))
		}
		if r.v2 {
			b.WriteString("        conformWithSpecVersions: [v1, v2]\n")
		}
	}
	e.catalog = writeFile(t, t.TempDir(), "catalog.yaml", b.String())
	return e
}

// leftovers are the function containers of the matrix's image that still exist.
func (e *matrixEnv) leftovers(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command(e.engine, "ps", "-a", "--filter", "name=krm-fn-", "--format", "{{.Names}} {{.Image}}").Output()
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if name, img, ok := strings.Cut(line, " "); ok && strings.HasPrefix(img, e.registry+"/verdict/") {
			left = append(left, name)
		}
	}
	return left
}

// available says why a mode cannot run here (a part missing outside CI); "" when it can.
func (e *matrixEnv) available(m matrixMode) string {
	switch {
	case m.runtime == "container" && e.engine == "":
		return "no Docker here (outside CI)"
	case m.command == cmdProxy && e.kustomize == "":
		return "no kustomize here (outside CI)"
	}
	return ""
}

// flags are the flags of a cell's krm-catalog command.
func (e *matrixEnv) flags(m matrixMode, r matrixRow) []string {
	f := []string{"--catalog", e.catalog, "--trusted-catalog", e.catalog, "--cache-dir", e.cache, "--runtime", m.runtime}
	if m.server != "" {
		f = append(f, "--server-mode", m.server)
	}
	// said either way: fn serve's default is true, the other commands' false
	f = append(f, "--yaml-wire="+strconv.FormatBool(m.yamlWire))
	if r.timeout {
		f = append(f, "--timeout", "3s")
	}
	return f
}

func fnConfig(kind, name string, local bool) string {
	s := fmt.Sprintf("apiVersion: fn.example.com/v1\nkind: %s\nmetadata:\n  name: %s\n", kind, name)
	if local {
		s += "  annotations:\n    config.kubernetes.io/local-config: \"true\"\n"
	}
	return s
}

// cellOutput is what one command printed, for a failing cell's message.
type cellOutput struct {
	code           int
	stdout, stderr string
}

func (o cellOutput) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", o.code, o.stdout, o.stderr)
}

func (e *matrixEnv) command(dir, bin string, args ...string) (cellOutput, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), e.env...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	out := cellOutput{stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		out.code = ee.ExitCode()
	case err != nil:
		return out, err
	}
	return out, nil
}

// run runs one cell: the function of r, twice in a row (as two steps, so that auto starts a
// server; fn serve: two calls, the one that starts it and a warm one), in mode m.
func (e *matrixEnv) run(m matrixMode, r matrixRow) (verdict, string, error) {
	dir, err := os.MkdirTemp("", "krm-verdict-*")
	if err != nil {
		return verdict{}, "", err
	}
	defer os.RemoveAll(dir)
	if m.command == cmdServe || m.command == cmdFallback {
		return e.serve(dir, m, r)
	}
	pkg := filepath.Join(dir, "pkg")
	results := filepath.Join(dir, "results")
	files := map[string]string{"deployment.yaml": deployment, "service.yaml": service}
	var args []string
	bin := bins.KrmCatalog
	switch m.command {
	case cmdRun:
		cfg := filepath.Join(dir, "fn.yaml")
		if err := os.WriteFile(cfg, []byte(fnConfig(r.kind, "fn", false)), 0o644); err != nil {
			return verdict{}, "", err
		}
		args = append([]string{"fn", "run", pkg, "--fn-config", cfg, "--fn-config", cfg, "--results-dir", results}, e.flags(m, r)...)
	case cmdRender:
		files["fn.yaml"] = fnConfig(r.kind, "fn", true)
		files["Kptfile"] = "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: pkg\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\npipeline:\n  mutators:\n    - configPath: fn.yaml\n    - configPath: fn.yaml\n"
		args = append([]string{"fn", "render", pkg, "--results-dir", results}, e.flags(m, r)...)
	case cmdBuild:
		files["a.yaml"], files["b.yaml"] = fnConfig(r.kind, "a", false), fnConfig(r.kind, "b", false)
		files["kustomization.yaml"] = "resources:\n- deployment.yaml\n- service.yaml\ntransformers:\n- a.yaml\n- b.yaml\n"
		args = append([]string{"build", pkg, "--results-dir", results}, e.flags(m, r)...)
	case cmdComposition:
		files["composition.yaml"] = "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Composition\ntransformers:\n" +
			"- apiVersion: builtin\n  kind: ResourceGenerator\n  metadata:\n    name: resources\n  files:\n  - deployment.yaml\n  - service.yaml\n" +
			"- " + indentLines(fnConfig(r.kind, "a", false))[2:] + "- " + indentLines(fnConfig(r.kind, "b", false))[2:]
		args = append([]string{"build", pkg, "--results-dir", results}, e.flags(m, r)...)
	case cmdProxy:
		for _, name := range []string{"a", "b"} {
			proxyArgs, _ := json.Marshal(append([]string{"fn", "proxy"}, e.flags(m, r)...))
			files[name+".yaml"] = strings.Replace(fnConfig(r.kind, name, false), "  name: "+name+"\n", fmt.Sprintf("  name: %s\n  annotations:\n    config.kubernetes.io/function: |\n      exec:\n        path: %s\n        args: %s\n", name, bins.KrmCatalog, proxyArgs), 1)
		}
		files["kustomization.yaml"] = "resources:\n- deployment.yaml\n- service.yaml\ntransformers:\n- a.yaml\n- b.yaml\n"
		bin, args = e.kustomize, []string{"build", "--enable-alpha-plugins", "--enable-exec", pkg}
	}
	for name, content := range files {
		if err := os.MkdirAll(pkg, 0o755); err != nil {
			return verdict{}, "", err
		}
		if err := os.WriteFile(filepath.Join(pkg, name), []byte(content), 0o644); err != nil {
			return verdict{}, "", err
		}
	}
	out, err := e.command(dir, bin, args...)
	if err != nil {
		return verdict{}, out.String(), err
	}
	v := verdict{failed: out.code != 0}
	if out.code > 1 {
		return v, out.String(), fmt.Errorf("exit %d: neither success nor a failed function", out.code)
	}
	if m.command != cmdProxy {
		v.steps, err = readResults(filepath.Join(results, fn.ResultsFileName))
		if err != nil {
			return v, out.String(), err
		}
	}
	switch m.command {
	case cmdRun, cmdRender:
		v.written, err = packageWritten(pkg, files, m.command == cmdRender)
	default:
		v.written, err = outputWritten([]byte(out.stdout))
	}
	return v, out.String(), err
}

// readResults reads results.yaml's items, without what differs by mode by design: the function's
// name says how it ran, and its standard error is its own (a server's log is not one call's).
func readResults(path string) ([]fn.FunctionResults, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var list struct {
		ExitCode int                  `yaml:"exitCode"`
		Items    []fn.FunctionResults `yaml:"items"`
	}
	if err := yaml.Unmarshal(data, &list); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	failed := false
	var items []fn.FunctionResults
	for _, it := range list.Items {
		failed = failed || it.ExitCode != 0
		if strings.HasPrefix(it.Function, "builtin ") {
			continue // a Composition's kustomize built-in (its ResourceGenerator), not the row's function
		}
		it.Function, it.Stderr = "", ""
		items = append(items, it)
	}
	if failed != (list.ExitCode != 0) {
		return nil, fmt.Errorf("%s: exitCode %d contradicts its items:\n%s", path, list.ExitCode, data)
	}
	return items, nil
}

// packageWritten says what a run did to the package: "nothing" when every file is as it was
// (the Kptfile apart, whose status fn render writes: then it says how the render ended),
// "annotated" when every resource was annotated, else what it found.
func packageWritten(pkg string, before map[string]string, kptfile bool) (string, error) {
	entries, err := os.ReadDir(pkg)
	if err != nil {
		return "", err
	}
	same := len(entries) == len(before)
	var resources []*yaml.RNode
	status := ""
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(pkg, e.Name()))
		if err != nil {
			return "", err
		}
		if e.Name() == "Kptfile" {
			n, err := yaml.Parse(string(data))
			if err != nil {
				return "", err
			}
			status = "; Kptfile: Rendered " + conditionStatus(n)
			continue
		}
		same = same && before[e.Name()] == string(data)
		if e.Name() != "fn.yaml" {
			nodes, err := readDocs(data)
			if err != nil {
				return "", err
			}
			resources = append(resources, nodes...)
		}
	}
	if same {
		return nothing + status, nil
	}
	return fingerprint(resources) + status, nil
}

// readDocs reads every YAML document of data.
func readDocs(data []byte) ([]*yaml.RNode, error) {
	var out []*yaml.RNode
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var n yaml.Node
		if err := dec.Decode(&n); err == io.EOF {
			return out, nil
		} else if err != nil {
			return nil, err
		}
		out = append(out, yaml.NewRNode(&n))
	}
}

func conditionStatus(kptfile *yaml.RNode) string {
	conds, err := kptfile.Pipe(yaml.Lookup("status", "conditions"))
	if err != nil || conds == nil {
		return "(none)"
	}
	elems, _ := conds.Elements()
	for _, c := range elems {
		if v, _ := c.GetString("type"); v == "Rendered" {
			s, _ := c.GetString("status")
			return s
		}
	}
	return "(none)"
}

// outputWritten says what a command printed: "nothing", or the fingerprint of its resources.
func outputWritten(out []byte) (string, error) {
	if len(bytes.TrimSpace(out)) == 0 {
		return nothing, nil
	}
	nodes, err := readDocs(out)
	if err != nil {
		return "", err
	}
	return fingerprint(nodes), nil
}

// fingerprint is "annotated" when every resource carries VerdictOK's annotation, else the
// resources and their annotation, and where they would be written.
func fingerprint(nodes []*yaml.RNode) string {
	var lines []string
	all := len(nodes) > 0
	for _, n := range nodes {
		v := n.GetAnnotations()["verdict.example.com/seen"]
		all = all && v == "true"
		lines = append(lines, fmt.Sprintf("%s/%s seen=%q path=%q", n.GetKind(), n.GetName(), v, n.GetAnnotations()[kioutil.PathAnnotation]))
	}
	if all {
		return annotated
	}
	slices.Sort(lines)
	return strings.Join(lines, ", ")
}

// serve starts fn serve for the cell and calls it twice: the call that starts the function (a
// server, in server mode) and a warm one. Both must come to the same.
func (e *matrixEnv) serve(dir string, m matrixMode, r matrixRow) (verdict, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	flags := e.flags(m, r)
	var behind *servedCell
	if m.command == cmdFallback {
		var err error
		if behind, err = e.startServe(ctx, dir, flags); err != nil {
			return verdict{}, behind.logged(), err
		}
		defer behind.stop()
		// the front's catalog lists nothing: every call goes behind, as it came
		empty := filepath.Join(dir, "empty-catalog.yaml")
		if err := os.WriteFile(empty, []byte("apiVersion: config.kubernetes.io/v1alpha1\nkind: KRMFunctionCatalog\nmetadata: {name: empty}\nspec:\n  krmFunctions: []\n"), 0o644); err != nil {
			return verdict{}, "", err
		}
		flags = []string{"--catalog", empty, "--trusted-catalog", empty, "--cache-dir", filepath.Join(dir, "front-cache"), "--fallback", behind.addr}
	}
	front, err := e.startServe(ctx, dir, flags)
	logged := func() string {
		if behind != nil {
			return front.logged() + "behind:\n" + behind.logged()
		}
		return front.logged()
	}
	if err != nil {
		return verdict{}, logged(), err
	}
	defer front.stop()
	a, metrics := front.addr, front.metrics
	conn, err := grpc.NewClient(a, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return verdict{}, logged(), err
	}
	defer conn.Close()
	client := evaluatorpb.NewFunctionEvaluatorClient(conn)
	list := "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n" + indentItems(deployment) + indentItems(service) + "functionConfig:\n" + strings.TrimSuffix(indentLines(fnConfig(r.kind, "fn", false)), "\n") + "\n"
	var calls []verdict
	var detail strings.Builder
	for range 2 {
		resp, err := client.EvaluateFunction(ctx, &evaluatorpb.EvaluateFunctionRequest{Image: e.image[r.kind], ResourceList: []byte(list)})
		st := status.Convert(err)
		fmt.Fprintf(&detail, "call: %v: %s\n", st.Code(), st.Message())
		v := verdict{failed: err != nil, written: nothing}
		if err != nil {
			if st.Code().String() != "Internal" {
				return v, detail.String() + logged(), fmt.Errorf("code %v, want OK or Internal", st.Code())
			}
			for _, d := range st.Details() {
				if r, ok := d.(*evaluatorpb.EvaluateFunctionResponse); ok {
					resp = r
				}
			}
			if resp == nil {
				return v, detail.String() + logged(), errors.New("no EvaluateFunctionResponse in the details")
			}
		}
		rl, _, derr := fn.DecodeResourceList(resp.GetResourceList())
		if derr != nil {
			return v, detail.String() + logged(), derr
		}
		v.steps = []fn.FunctionResults{{Results: rl.Results}}
		// Porch shows its user the status message alone: it names every error result
		for _, res := range rl.Results {
			if err != nil && res.IsError() && !strings.Contains(st.Message(), res.String()) {
				return v, detail.String() + logged(), fmt.Errorf("the status message does not name the error result %q", res.String())
			}
		}
		if err == nil {
			v.written = fingerprint(rl.Items)
		}
		calls = append(calls, v)
	}
	if diff := cmp.Diff(calls[0], calls[1], cmp.AllowUnexported(verdict{})); diff != "" {
		return calls[1], detail.String() + logged(), fmt.Errorf("the warm call differs from the first (-first +warm):\n%s", diff)
	}
	// the metrics count both calls as they ended
	code := "OK"
	if calls[0].failed {
		code = "Internal"
	}
	if n, err := scrapeCalls(ctx, metrics, code); err != nil || n != 2 {
		return calls[0], detail.String() + logged(), fmt.Errorf("krm_catalog_evaluator_calls_total{code=%q} = %v (%v), want 2", code, n, err)
	}
	return calls[0], detail.String() + logged(), nil
}

// servedCell is a fn serve a cell started.
type servedCell struct {
	addr, metrics string
	logged        func() string
	stop          func()
}

// startServe starts fn serve with flags and waits until it says where it serves.
func (e *matrixEnv) startServe(ctx context.Context, dir string, flags []string) (*servedCell, error) {
	args := append([]string{"fn", "serve", "--addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0", "--log-format", "json", "--shutdown-grace", "5s"}, flags...)
	cmd := exec.CommandContext(ctx, bins.KrmCatalog, args...)
	cmd.Env = append(os.Environ(), e.env...)
	cmd.Dir = dir
	var log strings.Builder
	var mu sync.Mutex
	s := &servedCell{logged: func() string { mu.Lock(); defer mu.Unlock(); return log.String() }, stop: func() {}}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return s, err
	}
	if err := cmd.Start(); err != nil {
		return s, err
	}
	addr := make(chan [2]string, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		var metrics string
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			mu.Lock()
			log.WriteString(sc.Text() + "\n")
			mu.Unlock()
			var line struct{ Msg, Addr, URL string }
			if json.Unmarshal(sc.Bytes(), &line) != nil {
				continue
			}
			switch line.Msg {
			case "metrics":
				metrics = line.URL
			case "serving evaluator.FunctionEvaluator":
				addr <- [2]string{line.Addr, metrics}
			}
		}
	}()
	s.stop = func() {
		// stopped as a Deployment stops it, so that it stops its function servers (a container
		// outlives a killed krm-catalog)
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(time.Minute):
			_ = cmd.Process.Kill()
			<-done
		}
		_ = cmd.Wait()
	}
	select {
	case a := <-addr:
		s.addr, s.metrics = a[0], a[1]
		return s, nil
	case <-done:
		s.stop()
		return s, errors.New("fn serve ended before serving")
	case <-ctx.Done():
		s.stop()
		return s, errors.New("fn serve did not start")
	}
}

// scrapeCalls sums krm_catalog_evaluator_calls_total over the series with the code.
func scrapeCalls(ctx context.Context, url, code string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var sum float64
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "krm_catalog_evaluator_calls_total{") || !strings.Contains(line, `code="`+code+`"`) {
			continue
		}
		var v float64
		if _, err := fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v); err != nil {
			return 0, err
		}
		sum += v
	}
	return sum, sc.Err()
}

func indentItems(doc string) string {
	return "- " + strings.ReplaceAll(strings.TrimSuffix(doc, "\n"), "\n", "\n  ") + "\n"
}

func indentLines(doc string) string {
	return "  " + strings.ReplaceAll(strings.TrimSuffix(doc, "\n"), "\n", "\n  ") + "\n"
}

func TestVerdictMatrix(t *testing.T) {
	t.Parallel()
	rows := matrixRows()
	e := newMatrixEnv(t, rows)
	type cell struct {
		row    matrixRow
		mode   matrixMode
		why    string // why it cannot apply
		got    verdict
		detail string
		err    error
		took   time.Duration
		agreed bool
	}
	var cells []*cell
	for _, r := range rows {
		for _, m := range matrixModes() {
			why := r.notApplicable(m)
			if why == "" {
				why = e.available(m)
			}
			cells = append(cells, &cell{row: r, mode: m, why: why})
		}
	}
	start := time.Now()
	// cells mostly wait (for a container, a timeout): more run at once than there are cores
	sem := make(chan struct{}, 12)
	var wg sync.WaitGroup
	for _, c := range cells {
		if c.why != "" {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			began := time.Now()
			c.got, c.detail, c.err = e.run(c.mode, c.row)
			c.took = time.Since(began)
		}()
	}
	wg.Wait()
	if e.engine != "" {
		t.Run("no container left behind", func(t *testing.T) {
			if left := e.leftovers(t); len(left) > 0 {
				t.Errorf("containers of the matrix left running: %s", strings.Join(left, ", "))
			}
		})
	}
	ran := 0
	for _, c := range cells {
		t.Run(c.row.name+"/"+c.mode.String(), func(t *testing.T) {
			if c.why != "" {
				t.Logf("cannot apply: %s", c.why)
				return
			}
			ran++
			defer func() { c.agreed = !t.Failed() }()
			if c.err != nil {
				t.Fatalf("%v\n%s", c.err, c.detail)
			}
			want := c.row.want.project(c.mode)
			if c.mode.command == cmdRender {
				if want.failed {
					want.written += "; Kptfile: Rendered False"
				} else {
					want.written += "; Kptfile: Rendered True"
				}
			}
			if diff := cmp.Diff(want, c.got, cmp.AllowUnexported(verdict{})); diff != "" {
				t.Errorf("verdict (-want +got):\n%s\n%s", diff, c.detail)
			}
		})
	}
	t.Logf("%d cells ran in %s (%d cannot apply)", ran, time.Since(start).Round(time.Second), len(cells)-ran)
	// the matrix, one line per row: each command's cells that agreed, and why the others cannot apply
	var table strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&table, "%s:", r.name)
		for _, command := range []string{cmdRun, cmdRender, cmdBuild, cmdComposition, cmdProxy, cmdServe, cmdFallback} {
			agreed, total, why := 0, 0, map[string]bool{}
			for _, c := range cells {
				if c.row.name != r.name || c.mode.command != command {
					continue
				}
				total++
				switch {
				case c.why != "":
					why[c.why] = true
				case c.agreed:
					agreed++
				}
			}
			fmt.Fprintf(&table, " %s %d/%d", command, agreed, total)
			if len(why) > 0 {
				fmt.Fprintf(&table, " (n/a: %s)", strings.Join(slices.Sorted(maps.Keys(why)), "; "))
			}
			table.WriteString(";")
		}
		table.WriteString("\n")
	}
	t.Logf("the matrix (cells that agreed / cells):\n%s", table.String())
	slices.SortFunc(cells, func(a, b *cell) int { return int(b.took - a.took) })
	var slow []string
	for _, c := range cells[:min(10, len(cells))] {
		slow = append(slow, fmt.Sprintf("%s/%s %s", c.row.name, c.mode, c.took.Round(100*time.Millisecond)))
	}
	t.Logf("the slowest cells: %s", strings.Join(slow, ", "))
}
