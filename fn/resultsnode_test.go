package fn

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// checkResultsNode holds resultsNode to yaml.v3's Node.Encode of rs, node for node, and reports
// whether it built the nodes itself.
func checkResultsNode(t *testing.T, rs []Result) (built bool) {
	t.Helper()
	var want yaml.Node
	if err := want.Encode(rs); err != nil {
		t.Fatal(err)
	}
	got, err := resultsNode(rs)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&want, got); diff != "" {
		t.Errorf("results %+v (-yaml.v3 +built):\n%s", rs, diff)
	}
	var b NodeBuilder
	b.Results(rs)
	return !b.Slow
}

func TestResultsNodeAsEncode(t *testing.T) {
	t.Parallel()
	ref := &ResourceRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "web", Namespace: "prod"}
	for _, c := range []struct {
		name  string
		rs    []Result
		built bool
	}{
		{"one message", []Result{{Message: "namespace updated"}}, true},
		{"all fields", []Result{{Message: "set", Severity: SeverityInfo, ResourceRef: ref, Field: &Field{Path: "metadata.namespace"}, File: &File{Path: "apps/web.yaml", Index: 2}}}, true},
		{"many", []Result{{Message: "a", Severity: SeverityError}, {Message: "b", Severity: SeverityWarning, File: &File{Path: "x.yaml"}}}, true},
		{"a message to quote", []Result{{Message: `set annotations: {"a":"b"}`}}, true},
		{"a look-alike", []Result{{Message: "yes"}}, false},
		{"a number", []Result{{Message: "0x1F"}}, false},
		{"two lines", []Result{{Message: "two\nlines"}}, false},
		{"not ASCII", []Result{{Message: "café"}}, false},
		{"an empty message", []Result{{Message: ""}}, false},
		{"tags", []Result{{Message: "m", Tags: map[string]string{"b": "1", "a": "2"}}}, false},
		{"an empty resourceRef", []Result{{Message: "m", ResourceRef: &ResourceRef{}}}, false},
		{"field values", []Result{{Message: "m", Field: &Field{Path: "a", CurrentValue: 3}}}, false},
		{"an empty file", []Result{{Message: "m", File: &File{}}}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if got := checkResultsNode(t, c.rs); got != c.built {
				t.Errorf("built directly: %v, want %v", got, c.built)
			}
		})
	}
}

// FuzzResultsNode holds resultsNode to yaml.v3 on any strings and numbers in a result.
//
//	go test ./fn -run '^$' -fuzz FuzzResultsNode -fuzztime 60s
func FuzzResultsNode(f *testing.F) {
	f.Add("namespace updated", "info", "Deployment", "web-1", "metadata.name", "apps/web.yaml", 3)
	f.Add("yes", "error", "0x1F", "a: b", "two\nlines", "", -1)
	f.Add("", "", "", "", "", "", 0)
	f.Fuzz(func(t *testing.T, msg, sev, kind, name, field, path string, index int) {
		r := Result{Message: msg, Severity: Severity(sev)}
		if kind != "" || name != "" {
			r.ResourceRef = &ResourceRef{Kind: kind, Name: name}
		}
		if field != "" {
			r.Field = &Field{Path: field}
		}
		if path != "" || index != 0 {
			r.File = &File{Path: path, Index: index}
		}
		checkResultsNode(t, []Result{r, {Message: name}})
	})
}
