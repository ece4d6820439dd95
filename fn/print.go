package fn

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/internal/docbudget"
	"github.com/krm-catalog/krm-catalog/internal/outbuf"
)

// A run whose items are only printed (fn run over standard input) need not hold its last
// function's output as node trees, at several times its size: when that function hands back its
// output unread (RawFunction), the output stays the bytes it came as, outside the heap
// (internal/outbuf). Once the call's verdict is known (its results come after its items), each
// item is read, restored and reconciled as the step does (stepRun.finish), and encoded, one at a
// time, twice: a first pass checks that every item reads as the whole output would read it and
// that the step takes it, and only then does the second write them. Whatever the first pass does
// not take (a failed call, output the fast reader leaves to yaml.v3, an item the step refuses, a
// list past the read budget) is decoded whole, as Run decodes it, so the verdict and the errors are
// Run's. docs/runtimes.md, "Printing a large output", says why.

// streamFrom is the size from which a printed output is streamed: below it, reading it whole is
// cheaper than reading it twice, and its trees cost little.
const streamFrom = 16 << 20

// errNotStreamed is an output the item-by-item pass does not take: it is decoded whole.
var errNotStreamed = errors.New("not streamed")

// Print is how a run's result is printed: a ResourceList holding apiVersion, the functionConfig,
// the items and every step's results, or, for input that was a stream of resources, the items
// alone (ResourceList.EncodeOutput).
type Print struct {
	APIVersion     string
	FunctionConfig *yaml.RNode
	In             Input
}

// Printed is what a run to print gave: its items, or, when they are streamed, a writer of them.
type Printed struct {
	// Items are the resulting items, unless the output is streamed.
	Items []*yaml.RNode
	print Print
	runs  []FunctionResults
	s     *itemStream
}

// Streamed reports whether the items are written item by item by WriteTo (Items is then nil).
func (p *Printed) Streamed() bool { return p.s != nil }

// List is the list Print describes, Items included (nil when streamed).
func (p *Printed) List() *ResourceList {
	rl := &ResourceList{APIVersion: p.print.APIVersion, Items: p.Items, FunctionConfig: p.print.FunctionConfig}
	for _, run := range p.runs {
		rl.Results = append(rl.Results, run.Results...)
	}
	return rl
}

// Encode is the output, encoded whole (EncodeOutput); for a streamed one, WriteTo writes it.
func (p *Printed) Encode() ([]byte, error) {
	if p.s != nil {
		var b bytes.Buffer
		_, err := p.WriteTo(&b)
		return b.Bytes(), err
	}
	return p.List().EncodeOutput(p.print.In)
}

// WriteTo writes the output, item by item when streamed; it releases the function's output
// (only once: a streamed output is written once).
func (p *Printed) WriteTo(w io.Writer) (int64, error) {
	if p.s == nil {
		b, err := p.Encode()
		if err != nil {
			return 0, err
		}
		n, err := w.Write(b)
		return int64(n), err
	}
	if p.s.out == nil {
		return 0, errors.New("the streamed output was written already")
	}
	defer p.Release()
	cw := &countWriter{w: w}
	bw := bufio.NewWriterSize(cw, 256<<10)
	err := p.s.each(func(_ int, enc []byte) error {
		_, err := bw.Write(enc)
		return err
	}, bw)
	if err == nil {
		err = bw.Flush()
	}
	return cw.n, err
}

// Release gives back the memory of a streamed output that is not to be written.
func (p *Printed) Release() {
	if p.s != nil {
		p.s.release()
	}
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

// RunToPrint is Run for a run whose result is only printed, as p says: its last step's output
// may be streamed (Printed.WriteTo) rather than read into trees.
func RunToPrint(ctx context.Context, steps []Step, items []*yaml.RNode, p Print) (*Printed, []FunctionResults, error) {
	return runToPrint(ctx, steps, items, p, streamFrom)
}

func runToPrint(ctx context.Context, steps []Step, items []*yaml.RNode, p Print, from int) (*Printed, []FunctionResults, error) {
	last := len(steps) - 1
	var raw RawFunction
	if last >= 0 {
		raw, _ = steps[last].Function.(RawFunction)
	}
	if raw == nil || p.In.Format != YAML || !FastPathsEnabled() {
		out, runs, err := Run(ctx, steps, items)
		return &Printed{Items: out, print: p, runs: runs}, runs, err
	}
	items, runs, err := Run(ctx, steps[:last], items)
	if err != nil {
		return nil, runs, err
	}
	if err := ctx.Err(); err != nil {
		return nil, runs, err
	}
	s := steps[last]
	pr := &Printed{print: p}
	out, fr, err := printStep(ctx, s, raw, items, pr, runs, from)
	runs = append(runs, fr)
	pr.runs = runs
	if err != nil {
		return nil, runs, fmt.Errorf("%s: %w", s.Name, err)
	}
	pr.Items = out
	return pr, runs, nil
}

// printStep is runStep over the step of f, streaming its output into pr when it can (pr.s).
func printStep(ctx context.Context, s Step, f RawFunction, items []*yaml.RNode, pr *Printed, before []FunctionResults, from int) ([]*yaml.RNode, FunctionResults, error) {
	st, err := startStep(s, items, false)
	if err != nil {
		return nil, st.fr, err
	}
	buf := outbuf.New(MaxResourceListBytes)
	call, runErr := f.RunRaw(ctx, &ResourceList{Items: items, FunctionConfig: s.Config}, buf)
	if runErr == nil && call.ExitErr == nil && buf.Len() >= from {
		is := &itemStream{buf: buf, out: buf.Bytes(), st: st, layout: call.Format == JSON, in: pr.print.In}
		if fr, ok := is.open(ctx, call, pr, before); ok {
			pr.s = is
			return nil, fr, nil
		}
	}
	// decoded whole, as Run decodes it; the strings read share the copy's memory
	var out *ResourceList
	if runErr == nil {
		out, runErr = call.Decode(bytes.Clone(buf.Bytes()))
	}
	buf.Release()
	return st.finish(out, runErr)
}

// itemStream is a function's output kept as it came, its items written one by one.
type itemStream struct {
	buf    *outbuf.Buffer
	out    []byte // buf's bytes
	st     *stepRun
	layout bool // restore the layout (the function was sent JSON)
	in     Input
	// items are the items' texts in out; line is the line of out the first starts on
	items [][]byte
	line  int
	// head and tail go before and after the items of a ResourceList
	head, tail []byte
}

// open reads what the output holds besides its items (its results), decides the call, and checks
// every item, as Run would read and finish them; ok is false when any of it needs the whole read.
// fr is the step's results (its verdict: ok is false for a failed call, whose output is decoded
// whole for its results).
func (s *itemStream) open(ctx context.Context, call *RawCall, pr *Printed, before []FunctionResults) (FunctionResults, bool) {
	meter := itemsBudget()
	if rem := meter.Remaining(); rem >= 0 && 2*len(s.out) > rem {
		if meter.Scan(s.out) != nil {
			return FunctionResults{}, false
		}
	}
	start, end, ok := yamlLayout.span(s.out)
	if !ok {
		return FunctionResults{}, false
	}
	rest := make([]byte, 0, len(s.out)-(end-start)+len(yamlLayout.empty))
	rest = append(append(append(rest, s.out[:start]...), yamlLayout.empty...), s.out[end:]...)
	list, ok := decodeRest(rest)
	if !ok || meter.Charge(docbudget.Scan(rest).Nodes) != nil {
		return FunctionResults{}, false
	}
	list.Stderr, list.SentJSON, list.Exited = call.Stderr, s.layout, true
	if _, failed := Verdict(list, nil); failed != nil {
		return FunctionResults{}, false
	}
	saved := s.st.fr
	_ = s.st.verdict(list, nil)
	s.items = yamlLayout.split(s.out[start:end])
	s.line = 2 + bytes.Count(s.out[:start], []byte("\n"))
	if s.in.Stream {
		s.head, s.tail = nil, nil
	} else {
		rl := &ResourceList{APIVersion: pr.print.APIVersion, FunctionConfig: pr.print.FunctionConfig}
		for _, run := range before {
			rl.Results = append(rl.Results, run.Results...)
		}
		rl.Results = append(rl.Results, s.st.fr.Results...)
		if s.head, s.tail, ok = listEnds(rl); !ok {
			s.st.fr = saved
			return FunctionResults{}, false
		}
	}
	// the first pass: every item must be taken before anything is written
	r := itemReader{meter: meter}
	if err := s.walk(ctx, &r, func(int, []byte) error { return nil }); err != nil {
		s.st.fr = saved
		return FunctionResults{}, false
	}
	return s.st.fr, true
}

// listEnds are what a ResourceList of rl's apiVersion, functionConfig and results (its items
// left out) holds before its items and after them, as the fast writer writes it; ok is false
// when the fast writer does not write it (yaml.v3 would write the whole list).
func listEnds(rl *ResourceList) (head, tail []byte, ok bool) {
	rl = &ResourceList{APIVersion: rl.APIVersion, FunctionConfig: rl.FunctionConfig, Results: rl.Results}
	n, err := rl.Node()
	if err != nil {
		return nil, nil, false
	}
	b, ok := appendYAML(nil, n, false)
	const items = "\nitems: []\n"
	i := bytes.Index(b, []byte(items))
	if !ok || i < 0 {
		return nil, nil, false
	}
	return append(b[:i:i], "\nitems:\n"...), b[i+len(items):], true
}

// walk reads, finishes and encodes every item in order, handing each encoding to write (valid
// until it returns); it stops at the first item the step or the fast paths do not take
// (errNotStreamed), or at write's error.
func (s *itemStream) walk(ctx context.Context, r *itemReader, write func(i int, enc []byte) error) error {
	line := s.line
	var enc []byte
	one := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{
		{Kind: yaml.ScalarNode, Tag: "!!str", Value: "items"},
		{Kind: yaml.SequenceNode, Tag: "!!seq", Content: make([]*yaml.Node, 1)},
	}}
	for i, text := range s.items {
		if i%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		n, ok := r.read(text, line)
		line += bytes.Count(text, []byte("\n"))
		if !ok {
			return errNotStreamed
		}
		it, err := checkItem(n, i)
		if err != nil {
			return errNotStreamed
		}
		orig := s.st.origByID[itemID(it)]
		if it, err = s.st.tags.restore(it, s.layout); err != nil {
			return errNotStreamed
		}
		if err := s.st.settle(it, i, orig); err != nil {
			return errNotStreamed
		}
		if enc, err = s.encode(enc[:0], it, i, one); err != nil {
			return errNotStreamed
		}
		if err := write(i, enc); err != nil {
			return err
		}
	}
	return nil
}

// encode appends item i as the whole output holds it: a document of a stream after its "---"
// separator (encodeYAML), or an item of the list's sequence, which the fast writer writes as it
// writes it within the whole list when it writes it within one, a list of that item alone.
func (s *itemStream) encode(dst []byte, it *yaml.RNode, i int, one *yaml.Node) ([]byte, error) {
	if s.in.Stream {
		if i > 0 {
			dst = append(dst, "---\n"...)
		}
		if b, ok := appendYAML(dst, it.Document(), false); ok {
			return b, nil
		}
		b, err := encodeYAMLv3(it.Document(), false)
		return append(dst, b...), err
	}
	one.Content[1].Content[0] = it.YNode()
	b, ok := appendYAML(dst, one, false)
	if !ok {
		return nil, errNotStreamed
	}
	return append(b[:0], b[len("items:\n"):]...), nil
}

// each writes the output: head, every item, tail.
func (s *itemStream) each(write func(i int, enc []byte) error, w io.Writer) error {
	if _, err := w.Write(s.head); err != nil {
		return err
	}
	// the pass that checked the items charged the budget already
	r := itemReader{meter: docbudget.NewMeter(docbudget.Limits{Nodes: -1}, nil)}
	if err := s.walk(context.Background(), &r, write); err != nil {
		return err
	}
	if _, err := w.Write(s.tail); err != nil {
		return err
	}
	return s.st.tags.untagInputs()
}

func (s *itemStream) release() {
	s.items, s.out = nil, nil
	s.buf.Release()
}
