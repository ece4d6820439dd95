package kpt

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/fn"
)

// sameNodes says where two trees differ in what a writer reads of them (kind, tag, value, style,
// comments, anchor, children), or "": statusNode builds no positions.
func sameNodes(path string, a, b *yaml.Node) string {
	f := func(n *yaml.Node) string {
		return fmt.Sprintf("kind=%v tag=%q value=%q style=%v anchor=%q comments=%q/%q/%q children=%d", n.Kind, n.Tag, n.Value, n.Style, n.Anchor, n.HeadComment, n.LineComment, n.FootComment, len(n.Content))
	}
	if fa, fb := f(a), f(b); fa != fb {
		return fmt.Sprintf("%s:\n  toNode:     %s\n  statusNode: %s", path, fa, fb)
	}
	for i := range a.Content {
		if d := sameNodes(fmt.Sprintf("%s/%d", path, i), a.Content[i], b.Content[i]); d != "" {
			return d
		}
	}
	return ""
}

// checkStatusNode holds statusNode to toNode on rs, nodes and written YAML; it reports whether
// statusNode built the nodes itself (they have no line numbers).
func checkStatusNode(t *testing.T, rs *RenderStatus) bool {
	t.Helper()
	want, werr := toNode(rs)
	got, gerr := statusNode(rs)
	if werr != nil || gerr != nil {
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("toNode error %v, statusNode error %v", werr, gerr)
		}
		return false
	}
	if d := sameNodes("status", want, got); d != "" {
		t.Fatalf("statusNode differs from toNode at %s\nstatus: %+v", d, rs)
	}
	wb, err := fn.EncodeYAML(want)
	if err != nil {
		t.Fatal(err)
	}
	gb, err := fn.EncodeYAML(got)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(wb), string(gb)); diff != "" {
		t.Fatalf("written YAML differs (-toNode +statusNode):\n%s", diff)
	}
	return got.Line == 0
}

func statusOf(msg, sev, name, path, stderr string, index, exit int) *RenderStatus {
	r := fn.Result{Message: msg, Severity: fn.Severity(sev), ResourceRef: &fn.ResourceRef{APIVersion: "apps/v1", Kind: "Deployment", Name: name, Namespace: "prod"}, Field: &fn.Field{Path: path}, File: &fn.File{Path: path, Index: index}}
	st := StepStatus{Name: "set-namespace", Image: "ghcr.example/set-namespace:v1", Exec: "", Stderr: stderr, ExitCode: exit, Results: []fn.Result{r, {Message: msg}}}
	if r.IsError() {
		st.ErrorResults = []fn.Result{r}
	}
	return &RenderStatus{MutationSteps: []StepStatus{st, {Name: "skipped", Skipped: true}}, ValidationSteps: []StepStatus{{Exec: "./validate", ExitCode: 1, ExecutionError: "not allowed"}}}
}

func TestStatusNodeMatchesToNode(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		rs   *RenderStatus
		fast bool
	}{
		{"results", statusOf("namespace updated", "info", "web-1", "apps/web.yaml", "", 3, 0), true},
		{"an error", statusOf("bad", "error", "web", "a.yaml", "", 0, 1), true},
		{"empty", &RenderStatus{}, false},
		{"a look-alike", statusOf("yes", "info", "on", "12:30", "", 0, 0), false},
		{"a number", statusOf("updated", "info", "1", "a.yaml", "", 0, 0), false},
		{"single quotes", statusOf(`set annotations: {"owner":"team-blue"}`, "info", "#x", " lead", "#warn: a", 0, 0), true},
		{"a field", &RenderStatus{MutationSteps: []StepStatus{{Name: "s", Results: []fn.Result{{Message: "m", Field: &fn.Field{Path: "metadata.annotations"}, File: &fn.File{Path: "a.yaml", Index: 2}}}}}}, true},
		{"an empty field", &RenderStatus{MutationSteps: []StepStatus{{Name: "s", Results: []fn.Result{{Message: "m", Field: &fn.Field{}}}}}}, false},
		{"trailing space", statusOf("m ", "info", "web", "a.yaml", "", 0, 0), true},
		{"lines", statusOf("one\ntwo", "info", "web", "a.yaml", "err\n", 0, 0), false},
		{"non-ASCII", statusOf("déjà", "info", "web", "a.yaml", "", 0, 0), false},
		{"empty message", statusOf("", "info", "web", "a.yaml", "", 0, 0), false},
		{"empty reference", &RenderStatus{MutationSteps: []StepStatus{{Name: "s", Results: []fn.Result{{Message: "m", ResourceRef: &fn.ResourceRef{}, File: &fn.File{}}}}}}, false},
		{"empty file", &RenderStatus{MutationSteps: []StepStatus{{Name: "s", Results: []fn.Result{{Message: "m", File: &fn.File{}}}}}}, false},
		{"field values", &RenderStatus{MutationSteps: []StepStatus{{Name: "s", Results: []fn.Result{{Message: "m", Field: &fn.Field{Path: "a.b", CurrentValue: 1}}}}}}, false},
		{"tags", &RenderStatus{MutationSteps: []StepStatus{{Name: "s", Results: []fn.Result{{Message: "m", Tags: map[string]string{"b": "1", "a": "x"}}}}}}, false},
		{"summary", &RenderStatus{ValidationSteps: []StepStatus{{Name: "v", ExitCode: 1}}, ErrorSummary: "v: exit code 1"}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := checkStatusNode(t, c.rs); got != c.fast {
				t.Errorf("built directly: %v, want %v", got, c.fast)
			}
		})
	}
}

// FuzzStatusNode holds statusNode to toNode (yaml.Marshal, then yaml.v3 reading it back) on
// any strings and numbers in a status.
//
//	go test ./fn/kpt -run '^$' -fuzz FuzzStatusNode -fuzztime 60s
func FuzzStatusNode(f *testing.F) {
	f.Add("namespace updated", "info", "web-1", "apps/web.yaml", "", 3, 0)
	f.Add("yes", "error", "0x1F", "a: b", "two\nlines", -1, 2)
	f.Add("", "", "", "", "", 0, 0)
	f.Fuzz(func(t *testing.T, msg, sev, name, path, stderr string, index, exit int) {
		checkStatusNode(t, statusOf(msg, sev, name, path, stderr, index, exit))
	})
}
