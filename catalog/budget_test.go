package catalog_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/krm-catalog/krm-catalog/catalog"
	"github.com/krm-catalog/krm-catalog/catalog/catalogtest"
	"github.com/krm-catalog/krm-catalog/internal/docbudget"
)

// denseCatalog is catalogtest.Dense: n elements of two values each.
func denseCatalog(n int) []byte { return catalogtest.Dense(n) }

// TestDecodeBudget: a document is refused by what it is, with a finding and an error that name
// the limit: unparsed when its scan is surely past the node limit, and by the exact count of
// the values converted otherwise.
func TestDecodeBudget(t *testing.T) {
	t.Parallel()
	lim := docbudget.Limits{Nodes: 1000, Depth: 16, Expanded: 2000}
	tests := []struct {
		name    string
		data    []byte
		limit   string // "": decodes
		scanned bool
		line    int
		pointer string
	}{
		{name: "within", data: denseCatalog(400)},
		{name: "dense, refused unparsed", data: denseCatalog(5000), limit: "nodes", scanned: true, line: 1},
		{name: "just past, refused by the count", data: denseCatalog(495), limit: "nodes", line: 16, pointer: "/spec/krmFunctions/0/versions/0/schema/openAPIV3Schema/default/481/0"},
		{name: "deep", data: []byte("a: " + strings.Repeat("[", 20) + strings.Repeat("]", 20) + "\n"), limit: "depth", scanned: true, line: 1},
		{name: "expanded", data: []byte("a: &a [" + strings.Repeat("x,", 100) + "x]\nb: [" + strings.Repeat("*a,", 30) + "*a]\n"), limit: "expanded", line: 2, pointer: "/b/18"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			docs, fs, err := catalog.DecodeContext(context.Background(), "in.yaml", tt.data, lim)
			if tt.limit == "" {
				if err != nil || fs.HasErrors() || len(docs) != 1 {
					t.Fatalf("err %v, findings %v, %d documents", err, fs, len(docs))
				}
				return
			}
			var e *docbudget.Error
			if !errors.As(err, &e) || e.Limit != tt.limit || e.Scanned != tt.scanned {
				t.Fatalf("err %#v, want the %s limit (scanned %v)", err, tt.limit, tt.scanned)
			}
			if len(docs) != 0 || len(fs) != 1 {
				t.Fatalf("%d documents, findings %v; want none and one finding", len(docs), fs)
			}
			if f := fs[0]; f.Line != tt.line || f.Pointer != tt.pointer || f.Message != err.Error() {
				t.Errorf("finding %s (at %q); want line %d, pointer %q, the error's message %q", f, f.Pointer, tt.line, tt.pointer, err)
			}
		})
	}
}

// countingContext ends after Err was asked n times: a deadline that passes while the work is
// under way, wherever it is.
type countingContext struct {
	context.Context
	n atomic.Int64
}

func (c *countingContext) Err() error {
	if c.n.Add(-1) < 0 {
		return context.DeadlineExceeded
	}
	return nil
}

// TestValidateStopsWhenItsContextEnds: the deadline stops the work where it is, inside the
// reading of a large document, rather than after it.
func TestValidateStopsWhenItsContextEnds(t *testing.T) {
	t.Parallel()
	v, err := catalog.NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	data := denseCatalog(100_000) // 200,000 values: the meter asks the context every 4,096
	ctx := &countingContext{Context: context.Background()}
	ctx.n.Store(3)
	docs, fs, err := v.ValidateContext(ctx, "in.yaml", data, catalog.Options{})
	if !errors.Is(err, context.DeadlineExceeded) || docs != nil {
		t.Fatalf("err %v, %d documents; want the deadline", err, len(docs))
	}
	if len(fs) != 1 || !strings.Contains(fs[0].Message, "reading the document stopped") || fs[0].Line != 16 {
		t.Fatalf("findings %v; want where the reading stopped, in the default on line 16", fs)
	}
	// and between the steps of a document read whole
	ctx = &countingContext{Context: context.Background()}
	ctx.n.Store(60)
	if _, _, err := v.ValidateContext(ctx, "in.yaml", data, catalog.Options{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v; want the deadline", err)
	}
}

// TestValidateFindingsBounded: a document of many wrong values reports at most catalog.MaxFindings, and
// says how many more there were.
func TestValidateFindingsBounded(t *testing.T) {
	t.Parallel()
	v, err := catalog.NewValidator()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("apiVersion: config.kubernetes.io/v1alpha1\nkind: KRMFunctionCatalog\nmetadata: {name: many}\nspec:\n  krmFunctions:\n")
	b.WriteString("    - {group: many.example.com, names: {kind: Many}, description: d, publisher: example.com, versions: [{name: v1, runtime: {container: {image: \"r.example.com/m@sha256:" + strings.Repeat("b", 64) + "\"}}}], tags: [")
	for i := range 3000 {
		fmt.Fprintf(&b, "\"bad\\u202e%d\",", i)
	}
	b.WriteString("x]}\n")
	_, fs := v.Validate("in.yaml", []byte(b.String()), catalog.Options{})
	if len(fs) != catalog.MaxFindings+1 {
		t.Fatalf("%d findings, want %d", len(fs), catalog.MaxFindings+1)
	}
	last := fs.Count(catalog.SeverityError)
	if last < catalog.MaxFindings || !strings.Contains(strings.Join(messages(fs), "\n"), "more findings of this document are not shown") {
		t.Fatalf("%d errors; want %d and the note of those left out", last, catalog.MaxFindings)
	}
}

func messages(fs catalog.Findings) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.Message
	}
	return out
}
