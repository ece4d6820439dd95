package docbudget

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestMeter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		run   func(m *Meter) error
		limit string
	}{
		{"nodes within", func(m *Meter) error { return count(m, 100, 0) }, ""},
		{"nodes past", func(m *Meter) error { return count(m, 101, 0) }, "nodes"},
		{"depth past", func(m *Meter) error { return m.Node(9) }, "depth"},
		{"expanded past", func(m *Meter) error { return m.Expand(201) }, "expanded"},
		{"expanded with the nodes", func(m *Meter) error { _ = count(m, 100, 0); return m.Expand(101) }, "expanded"},
		{"expanded within", func(m *Meter) error { _ = count(m, 100, 0); return m.Expand(100) }, ""},
		{"scan of a dense input", func(m *Meter) error { return m.Scan([]byte("[" + strings.Repeat("[0],", 100) + "]")) }, "nodes"},
		{"scan of a deep input", func(m *Meter) error { return m.Scan([]byte(strings.Repeat("[", 20))) }, "depth"},
		{"scan within", func(m *Meter) error { return m.Scan([]byte("a: [1, 2]\nb: {c: d}\n")) }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.run(NewMeter(Limits{Nodes: 100, Depth: 8, Expanded: 200}, nil))
			var e *Error
			switch {
			case tt.limit == "" && err != nil:
				t.Fatalf("error %v", err)
			case tt.limit != "" && !errors.As(err, &e):
				t.Fatalf("error %v, want one past the %s limit", err, tt.limit)
			case tt.limit != "" && (e.Limit != tt.limit || !errors.Is(err, ErrExceeded)):
				t.Fatalf("error %v (limit %q), want the %s limit", err, e.Limit, tt.limit)
			}
		})
	}
}

func count(m *Meter, n, depth int) error {
	for range n {
		if err := m.Node(depth); err != nil {
			return err
		}
	}
	return nil
}

// TestMeterStopsWhenCancelled: a read whose context ends stops within a few thousand nodes.
func TestMeterStopsWhenCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	m := NewMeter(Limits{}, ctx.Err)
	if err := count(m, 3*checkEvery, 0); err != nil {
		t.Fatal(err)
	}
	cancel()
	err := count(m, checkEvery+1, 0)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("after cancel: %v", err)
	}
	if err := m.Scan([]byte("a: b")); !errors.Is(err, context.Canceled) {
		t.Fatalf("Scan after cancel: %v", err)
	}
}

func TestErrorNamesTheLimit(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		e    Error
		want string
	}{
		{Error{Limit: "nodes", Max: 524288}, "more than 524,288 values"},
		{Error{Limit: "depth", Max: 128}, "more than 128 levels"},
		{Error{Limit: "expanded", Max: 1000}, "too many values through aliases: more than 1,000"},
	} {
		if got := tt.e.Error(); !strings.Contains(got, tt.want) {
			t.Errorf("%+v: %q, want %q in it", tt.e, got, tt.want)
		}
	}
}

func BenchmarkScan(b *testing.B) {
	var sb strings.Builder
	for i := range 20000 {
		sb.WriteString("- name: item\n  index: ")
		sb.WriteString(strings.Repeat("7", i%5+1))
		sb.WriteString("\n  tags: [a, b, \"c\"]\n  text: |\n    some text: [1, 2]\n")
	}
	data := []byte(sb.String())
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		Scan(data)
	}
}

func BenchmarkScanDense(b *testing.B) {
	data := []byte("a: [" + strings.Repeat("[0],", 1_000_000) + "[0]]\n")
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		Scan(data)
	}
}
