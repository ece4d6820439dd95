// Package docbudget bounds what reading a YAML or JSON document may cost by what the document is,
// not by its bytes: the nodes a reader builds (every key, value and list item), how deeply they
// nest, and how many values aliases expand them into. Four megabytes of `[0],` hold two million
// nodes, and reading them costs hundreds of times their size; a budget refuses them before a
// parser builds them.
//
// A reader that builds nodes one at a time counts them on a Meter (Node, Expand), which also
// stops the work when the caller's context ends. A parser that cannot be asked along the way
// (yaml.v3 builds a whole tree before it returns) is guarded by Scan, which reads the bytes once,
// without allocating, and finds an upper bound of the nodes the parser would build: Meter.Scan
// refuses the input before the parser runs. Readers take a Limits as an option; callers choose
// the limits that fit what they read (a service request, a file on disk).
package docbudget

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/dustin/go-humanize"
)

// Limits bound one read (a request body, a file, a function's input). Zero fields are unbounded.
type Limits struct {
	// Nodes is how many nodes (keys, values, list items; aliases count one each) a reader may build.
	Nodes int
	// Depth is how deeply collections may nest.
	Depth int
	// Expanded is how many values (nodes included) the documents may hold once every alias is
	// expanded.
	Expanded int
}

// Or is l with its zero fields taken from def.
func (l Limits) Or(def Limits) Limits {
	if l.Nodes == 0 {
		l.Nodes = def.Nodes
	}
	if l.Depth == 0 {
		l.Depth = def.Depth
	}
	if l.Expanded == 0 {
		l.Expanded = def.Expanded
	}
	return l
}

// ForBytes is the default budget of a read of at most maxBytes: one node for every 8 bytes
// (real catalogs and Kubernetes resources hold one for every 12 to 20, and the densest YAML one for
// every 2), nesting at most 128 deep, and twice the nodes once aliases are expanded.
func ForBytes(maxBytes int64) Limits {
	n := int(min(maxBytes/8, 1<<40))
	return Limits{Nodes: max(n, 10_000), Depth: 128, Expanded: 2 * max(n, 10_000)}
}

// ErrExceeded is matched (errors.Is) by every *Error.
var ErrExceeded = errors.New("the document is past a limit on what reading it may cost")

// Error is a read stopped at a limit.
type Error struct {
	// Limit names the bound: "nodes", "depth" or "expanded".
	Limit string
	// Max is the bound's value.
	Max int
	// Line and Column are where the reader stopped, when it knows (1-based; 0 otherwise).
	Line, Column int
	// Scanned is set when the bound was found before parsing, by Scan's upper bound.
	Scanned bool
}

func (e *Error) Error() string {
	switch e.Limit {
	case "depth":
		return fmt.Sprintf("the document nests more than %d levels deep, the limit", e.Max)
	case "expanded":
		return fmt.Sprintf("the document expands to too many values through aliases: more than %s, the limit (a YAML alias bomb?)", humanize.Comma(int64(e.Max)))
	}
	return fmt.Sprintf("the document holds more than %s values (keys, values and list items), the limit", humanize.Comma(int64(e.Max)))
}

// Is makes errors.Is(err, ErrExceeded) true.
func (e *Error) Is(target error) bool { return target == ErrExceeded }

// checkEvery is how many nodes a Meter counts between two looks at whether its work was cancelled.
const checkEvery = 1 << 12

// Meter counts one read against its Limits. A Meter lives for one read; it is not safe for
// concurrent use.
type Meter struct {
	limits   Limits
	nodes    int
	expanded int
	tick     int
	// cancelled reports why the read should stop (a context's Err); nil: never
	cancelled func() error
}

// NewMeter returns a meter of limits. cancelled, when not nil, is asked every few thousand nodes
// whether the read should stop (pass a context's Err): a reader stops with its error.
func NewMeter(limits Limits, cancelled func() error) *Meter {
	return &Meter{limits: limits, cancelled: cancelled}
}

// Limits are the meter's limits.
func (m *Meter) Limits() Limits { return m.limits }

// Nodes is how many nodes were counted so far.
func (m *Meter) Nodes() int { return m.nodes }

// Node counts one node at depth (the top-level collection of a document is at depth 0).
func (m *Meter) Node(depth int) error {
	m.nodes++
	if m.limits.Nodes > 0 && m.nodes > m.limits.Nodes {
		return &Error{Limit: "nodes", Max: m.limits.Nodes}
	}
	if m.limits.Depth > 0 && depth > m.limits.Depth {
		return &Error{Limit: "depth", Max: m.limits.Depth}
	}
	return m.poll()
}

// Charge counts n nodes at once: those a reader read with its own count (Remaining), at depths
// it bounded itself.
func (m *Meter) Charge(n int) error {
	m.nodes += n
	if m.limits.Nodes > 0 && m.nodes > m.limits.Nodes {
		return &Error{Limit: "nodes", Max: m.limits.Nodes}
	}
	m.tick += n
	return m.poll()
}

// Remaining is how many nodes the meter has left, or -1 when it has no node limit.
func (m *Meter) Remaining() int {
	if m.limits.Nodes <= 0 {
		return -1
	}
	return max(m.limits.Nodes-m.nodes, 0)
}

// Expand counts n values that expanding an alias (or a merge) produced: with the nodes, they
// are what the read holds once expanded.
func (m *Meter) Expand(n int) error {
	m.expanded += n
	if m.limits.Expanded > 0 && m.nodes+m.expanded > m.limits.Expanded {
		return &Error{Limit: "expanded", Max: m.limits.Expanded}
	}
	m.tick += n
	return m.poll()
}

// Check reports whether the read should stop now: its context ended. Readers call it between
// steps that count no nodes.
func (m *Meter) Check() error {
	if m == nil || m.cancelled == nil {
		return nil
	}
	return m.cancelled()
}

func (m *Meter) poll() error {
	if m.tick++; m.tick < checkEvery {
		return nil
	}
	m.tick = 0
	return m.Check()
}

// scanSlack is how far above the node limit Scan's upper bound may go before the input is
// refused unparsed. The bound counts as a node what may turn out to be none (a key followed
// by nothing on its line), so an input at the limit may scan a little above it; the parser then
// builds at most this much more than the limit, and the reader's own count refuses exactly.
const scanSlack = 4

// Scan reads data (YAML or JSON) without parsing it and refuses it when the nodes a YAML parser
// would build, or their nesting, are surely past the limits. Call it before a parser that builds
// a whole tree at once (yaml.v3); a reader that counts as it goes needs no Scan.
func (m *Meter) Scan(data []byte) error {
	if err := m.Check(); err != nil {
		return err
	}
	// the top-level collection of a document is at depth 0: limits.Depth+1 may be open at once
	s := scan(data, m.limits.Depth+1)
	err := m.Admit(s.Shape)
	var e *Error
	if errors.As(err, &e) && e.Limit == "depth" {
		e.Line, e.Column = lineCol(data, s.deepAt)
	}
	return err
}

// Admit is Scan of an input whose Shape the caller has already (it scanned the input to
// estimate what reading it costs, before it admitted the read).
func (m *Meter) Admit(s Shape) error {
	if err := m.Check(); err != nil {
		return err
	}
	if m.limits.Depth > 0 && s.Depth > m.limits.Depth+1 {
		return &Error{Limit: "depth", Max: m.limits.Depth, Scanned: true, Line: 1, Column: 1}
	}
	if m.limits.Nodes > 0 && s.Nodes > m.limits.Nodes+m.limits.Nodes/scanSlack {
		return &Error{Limit: "nodes", Max: m.limits.Nodes, Scanned: true, Line: 1, Column: 1}
	}
	return nil
}

// lineCol is the 1-based line and column (in bytes) of offset off.
func lineCol(data []byte, off int) (line, col int) {
	off = min(off, len(data))
	line = 1 + bytes.Count(data[:off], []byte{'\n'})
	return line, off - bytes.LastIndexByte(data[:off], '\n')
}
