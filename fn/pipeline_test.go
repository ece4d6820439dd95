package fn

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// jsonFunction is a fake function that does what a real one over JSON does to a list: everything
// goes through JSON (comments and quoting styles are lost), fields come back in reverse order, and
// then edit changes each item.
type jsonFunction struct {
	edit    func(*yaml.RNode) error
	results []Result
	stderr  string
	err     error
	calls   int
}

func (f *jsonFunction) Run(_ context.Context, in *ResourceList) (*ResourceList, error) {
	f.calls++
	if f.err != nil {
		return nil, f.err
	}
	data, err := in.Encode(JSON)
	if err != nil {
		return nil, err
	}
	out, _, err := DecodeResourceList(data)
	if err != nil {
		return nil, err
	}
	for _, it := range out.Items {
		reverse(it.YNode())
		if f.edit != nil {
			if err := f.edit(it); err != nil {
				return nil, err
			}
		}
	}
	out.Results = f.results
	out.Stderr = f.stderr
	return out, nil
}

func reverse(n *yaml.Node) {
	if n.Kind != yaml.MappingNode {
		return
	}
	c := n.Content
	for i, j := 0, len(c)-2; i < j; i, j = i+2, j-2 {
		c[i], c[i+1], c[j], c[j+1] = c[j], c[j+1], c[i], c[i+1]
	}
	for i := 1; i < len(c); i += 2 {
		reverse(c[i])
	}
}

const commented = `# leading comment
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web # the name
  labels:
    app: web
spec:
  # how many
  replicas: 2
  template:
    spec:
      containers:
      - name: web
        image: "nginx:1.25" # pinned later
        args: ["-g", 'daemon off;']
`

func TestPipelineRestoresCommentsOrderAndStyle(t *testing.T) {
	t.Parallel()
	items := mustItems(t, commented)
	setLabel := func(k, v string) func(*yaml.RNode) error {
		return func(n *yaml.RNode) error { return n.PipeE(yaml.SetLabel(k, v)) }
	}
	steps := []Step{
		{Name: "one", Function: &jsonFunction{edit: setLabel("a", "1")}},
		{Name: "two", Function: &jsonFunction{edit: func(n *yaml.RNode) error {
			return n.PipeE(yaml.Lookup("metadata"), yaml.SetField("namespace", yaml.NewStringRNode("prod")))
		}}},
		{Name: "three", Function: &jsonFunction{edit: setLabel("b", "2")}},
	}
	out, results, err := Run(context.Background(), steps, items)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 3 {
		t.Errorf("got %d function results, want 3", len(results))
	}
	got, err := EncodeYAML(out[0].Document())
	if err != nil {
		t.Fatal(err)
	}
	want := `# leading comment
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web # the name
  labels:
    app: web
    a: '1'
    b: '2'
  namespace: prod
spec:
  # how many
  replicas: 2
  template:
    spec:
      containers:
      - name: web
        image: "nginx:1.25" # pinned later
        args: ["-g", 'daemon off;']
`
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("after three JSON functions (-want +got):\n%s", diff)
	}
	if strings.Contains(string(got), "internal.config.kubernetes.io/id") {
		t.Error("the id annotation leaked into the output")
	}
}

func TestPipelineStopsAtErrorResult(t *testing.T) {
	t.Parallel()
	third := &jsonFunction{}
	steps := []Step{
		{Name: "ok", Function: &jsonFunction{results: []Result{{Message: "fine", Severity: SeverityInfo}}}},
		{Name: "validator", Function: &jsonFunction{results: []Result{{Message: "no limits", Severity: SeverityError}}}},
		{Name: "never", Function: third},
	}
	_, results, err := Run(context.Background(), steps, mustItems(t, commented))
	if !errors.Is(err, ErrFunctionFailed) || !strings.Contains(err.Error(), "no limits") {
		t.Fatalf("error = %v, want ErrFunctionFailed naming the result", err)
	}
	if third.calls != 0 {
		t.Error("the step after the failing one ran")
	}
	if len(results) != 2 || results[1].ExitCode != 1 {
		t.Errorf("results = %+v", results)
	}
}

func TestPipelineFunctionError(t *testing.T) {
	t.Parallel()
	items := mustItems(t, commented)
	steps := []Step{{Name: "boom", Function: &jsonFunction{err: &FunctionError{ExitCode: 3, Stderr: "bad\n", Err: errors.New("exit status 3")}}}}
	_, results, err := Run(context.Background(), steps, items)
	if !errors.Is(err, ErrFunctionFailed) {
		t.Fatalf("error = %v, want ErrFunctionFailed", err)
	}
	if diff := cmp.Diff([]FunctionResults{{Function: "boom", ExitCode: 3, Stderr: "bad\n"}}, results); diff != "" {
		t.Error(diff)
	}
	// the input items must not keep the id annotations of the failed step
	if s, _ := items[0].String(); strings.Contains(s, "config.k8s.io/id") {
		t.Errorf("id annotation left on the input:\n%s", s)
	}
}

// A successful step's results keep what it wrote on stderr, as kpt's results do.
func TestPipelineKeepsStderrOfSuccess(t *testing.T) {
	t.Parallel()
	steps := []Step{{Name: "warns", Function: &jsonFunction{stderr: "careful\n"}}}
	_, results, err := Run(context.Background(), steps, mustItems(t, commented))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]FunctionResults{{Function: "warns", Stderr: "careful\n"}}, results); diff != "" {
		t.Error(diff)
	}
}

func mustItems(t *testing.T, s string) []*yaml.RNode {
	t.Helper()
	rl, _, err := DecodeInput([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return rl.Items
}

// An orchestrator running krm-catalog (kustomize running fn proxy) uses the same id annotations; it
// must get its own values back.
func TestPipelineGivesBackPriorIDs(t *testing.T) {
	t.Parallel()
	items := mustItems(t, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  annotations:\n    internal.config.kubernetes.io/id: '1'\n    config.k8s.io/id: '1'\n")
	out, _, err := Run(context.Background(), []Step{{Name: "one", Function: &jsonFunction{}}}, items)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"internal.config.kubernetes.io/id": "1", "config.k8s.io/id": "1"}
	if diff := cmp.Diff(want, out[0].GetAnnotations()); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
}

func TestFunctionErrorSaysExitStatusOnce(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  *FunctionError
		want string
	}{
		{&FunctionError{ExitCode: 3, Err: errors.New("exit status 3")}, "exit status 3"},
		{&FunctionError{ExitCode: 3, Err: errors.New("its output is not a ResourceList")}, "exit status 3: its output is not a ResourceList"},
		{&FunctionError{ExitCode: -1, Err: errors.New("timed out after 1s")}, "timed out after 1s"},
	}
	for _, tc := range tests {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
}

// A step that moves a resource out of its package fails in a package (as kpt's function runner
// fails it) and not in a printed run, where a path is output.
func TestRunInPackageRefusesPathsLeavingIt(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		path    string
		run     func(context.Context, []Step, []*yaml.RNode) ([]*yaml.RNode, []FunctionResults, error)
		wantErr bool
	}{
		{name: "package, outside", path: "../x.yaml", run: RunInPackage, wantErr: true},
		{name: "package, outside once cleaned", path: "a/../../x.yaml", run: RunInPackage, wantErr: true},
		{name: "package, inside once cleaned", path: "a/../x.yaml", run: RunInPackage},
		{name: "package, a name starting with two dots", path: "..x.yaml", run: RunInPackage},
		{name: "printed, outside", path: "../x.yaml", run: Run},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			item, err := yaml.Parse("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  annotations:\n    config.kubernetes.io/path: a.yaml\n")
			if err != nil {
				t.Fatal(err)
			}
			f := &jsonFunction{edit: func(n *yaml.RNode) error {
				return n.PipeE(yaml.SetAnnotation("config.kubernetes.io/path", tc.path))
			}}
			_, runs, err := tc.run(context.Background(), []Step{{Name: "move", Function: f}}, []*yaml.RNode{item})
			if !tc.wantErr {
				if err != nil {
					t.Fatalf("error %v, want none", err)
				}
				return
			}
			var rej *RejectedError
			if !errors.Is(err, ErrInvalidPackage) || !errors.As(err, &rej) || !strings.Contains(err.Error(), "ConfigMap/a") {
				t.Fatalf("error %v, want a RejectedError naming ConfigMap/a, wrapping ErrInvalidPackage", err)
			}
			msg := fmt.Sprintf("invalid package: ConfigMap/a: path %q is outside the package", tc.path)
			want := []FunctionResults{{Function: "move", ExitCode: 1, Results: []Result{{Severity: SeverityError, Message: msg}}}}
			if diff := cmp.Diff(want, runs); diff != "" {
				t.Errorf("runs (-want +got):\n%s", diff)
			}
		})
	}
}
