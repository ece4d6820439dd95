package fn

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/krm-catalog/krm-catalog/internal/docbudget"
)

// TestReadBudget: a ResourceList is read within limits on what it is, whichever reader reads it
// (the fast YAML reader, yaml.v3, the JSON parser): past them it is refused with an error that
// names the limit and is ErrInvalidResourceList and docbudget.ErrExceeded both.
func TestReadBudget(t *testing.T) {
	t.Parallel()
	items := func(n int, item string) string {
		return "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n" + strings.Repeat(item, n)
	}
	cm := "- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: a}\n  data:\n    k: v\n"
	block := "- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: a\n"
	jsonList := func(n int) string {
		return `{"apiVersion":"config.kubernetes.io/v1","kind":"ResourceList","items":[` +
			strings.TrimSuffix(strings.Repeat(`{"apiVersion":"v1","kind":"ConfigMap","data":{"k":[0,0,0]}},`, n), ",") + "]}"
	}
	bomb := "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nfunctionConfig:\n  apiVersion: v1\n  kind: X\n  a: &a [x, x, x, x, x, x, x, x, x, x]\n  b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n  c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n  d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\nitems: []\n"
	lim := docbudget.Limits{Nodes: 1000, Depth: 20, Expanded: 5000}
	tests := []struct {
		name, in string
		limit    string // "": read
	}{
		{"block, within", items(80, block), ""},
		{"block, past (the fast reader)", items(200, block), "nodes"},
		{"flow, within", items(60, cm), ""},
		{"flow, past (yaml.v3, refused by the scan)", items(300, cm), "nodes"},
		{"flow, just past (yaml.v3, refused by the count)", items(84, cm), "nodes"},
		{"JSON, within", jsonList(50), ""},
		{"JSON, past", jsonList(200), "nodes"},
		{"JSON, deep", `{"kind":"ResourceList","items":[{"kind":"A","apiVersion":"v1","a":` + strings.Repeat("[", 30) + strings.Repeat("]", 30) + "}]}", "depth"},
		{"YAML, deep", items(1, "- apiVersion: v1\n  kind: A\n  a: "+strings.Repeat("[", 30)+strings.Repeat("]", 30)+"\n"), "depth"},
		{"aliases expand past", bomb, "expanded"},
		{"an alias inside its anchor", "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nfunctionConfig: &x\n  apiVersion: v1\n  kind: X\n  self: *x\nitems: []\n", "expanded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := DecodeInputContext(context.Background(), []byte(tt.in), lim)
			var e *docbudget.Error
			switch {
			case tt.limit == "" && err != nil:
				t.Fatalf("error %v", err)
			case tt.limit == "":
			case !errors.As(err, &e) || e.Limit != tt.limit || !errors.Is(err, ErrInvalidResourceList) || !errors.Is(err, docbudget.ErrExceeded):
				t.Fatalf("error %v; want the %s limit, an invalid ResourceList", err, tt.limit)
			}
		})
	}
}

// TestReadBudgetDefault: fn run's input is bounded by what it is with no limits given: 22 MB of
// [0] (11 million values, past the 8 million and the scan's margin above them) is refused unparsed,
// where it cost gigabytes.
func TestReadBudgetDefault(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	b.WriteString("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  data: [")
	b.WriteString(strings.Repeat("[0],", 5_500_000))
	b.WriteString("[0]]\n")
	_, _, err := DecodeInput(b.Bytes())
	var e *docbudget.Error
	if !errors.As(err, &e) || !e.Scanned || !strings.Contains(err.Error(), "more than 8,000,000 values") {
		t.Fatalf("error %v; want the default node limit, found by the scan", err)
	}
}

// TestReadStopsWhenCancelled: a read whose context ended stops.
func TestReadStopsWhenCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	in := "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: [" + strings.Repeat("{apiVersion: v1, kind: A},", 10_000) + "]\n"
	if _, _, err := DecodeResourceListContext(ctx, []byte(in), docbudget.Limits{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v; want the context's", err)
	}
}
