package fn

import (
	"context"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/internal/docbudget"
	"github.com/krm-catalog/krm-catalog/pkg/krmfn/yamlfast"
)

// ReadLimits bound what reading a ResourceList may cost, by what it is: nodes, nesting, values
// once aliases are expanded (docbudget.Limits). Zero fields take DefaultReadLimits'.
type ReadLimits = docbudget.Limits

// ErrReadLimit is matched (errors.Is) by the error of a read past one of its ReadLimits.
var ErrReadLimit = docbudget.ErrExceeded

// ReadLimitsFor are the limits of a read of at most maxBytes from a source that may be hostile:
// one node for every 8 bytes (docbudget.ForBytes).
func ReadLimitsFor(maxBytes int64) ReadLimits { return docbudget.ForBytes(maxBytes) }

// DefaultReadLimits bound a read of a ResourceList or of a package's files that gives no limits
// of its own (fn run's input, a function's output): 8,000,000 nodes (about forty times a large
// package: 10,000 resources of 50 values), nested at most 1,000 deep, 16,000,000 values once
// aliases are expanded. A caller reading what an untrusted client sends passes limits of the
// size it accepts (docbudget.ForBytes).
func DefaultReadLimits() ReadLimits {
	return docbudget.Limits{Nodes: 8_000_000, Depth: maxJSONDepth, Expanded: 16_000_000}
}

// reader reads YAML and JSON within a meter's budget: the fast reader and the JSON parser count
// as they go; yaml.v3, which builds a whole tree before it returns, reads only what the meter's
// scan lets through, and its tree is then counted exactly (aliases expanded).
type reader struct {
	meter *docbudget.Meter
	// alias lets the nodes' strings share the input's memory (yamlfast.Options.Alias): set by a caller
	// that never changes the input afterwards
	alias bool
}

func newReader(ctx context.Context, limits docbudget.Limits) reader {
	return reader{meter: docbudget.NewMeter(limits.Or(DefaultReadLimits()), ctx.Err)}
}

// yamlDocuments is decodeYAMLDocuments within the budget. An input that may hold more nodes
// than the budget has left (two a byte, at most) is scanned first, so that what the scan refuses
// costs no reading; the fast reader counts what it reads, yaml.v3's tree is counted after it.
func (rd reader) yamlDocuments(data []byte) ([]*yaml.Node, error) {
	rem := rd.meter.Remaining()
	scanned := false
	if rem >= 0 && 2*len(data) > rem {
		if err := rd.meter.Scan(data); err != nil {
			return nil, err
		}
		scanned = true
	}
	if FastPathsEnabled() {
		var slab nodeSlab
		docs, n, ok := yamlfast.Read(data, yamlfast.Options{Budget: rem, MaxDepth: rd.meter.Limits().Depth, Alias: rd.alias}, &slab)
		if ok {
			if err := rd.meter.Charge(n); err != nil {
				return nil, err
			}
			return docs, rd.meter.Check()
		}
		if rem >= 0 && n > rem {
			return nil, rd.meter.Charge(n) // past the limit: the error
		}
	}
	if !scanned {
		if err := rd.meter.Scan(data); err != nil {
			return nil, err
		}
	}
	docs, err := decodeYAMLv3(data)
	if err != nil {
		return nil, err
	}
	return docs, countTree(rd.meter, docs)
}

// jsonNode is DecodeJSONNode within the budget.
func (rd reader) jsonNode(data []byte) (*yaml.Node, error) {
	p := newJSONParser()
	p.meter = rd.meter
	return p.decode(data)
}

// countTree counts the nodes of a tree yaml.v3 built, at their depths, and the values its
// aliases expand to (each anchor's size worked out once).
func countTree(m *docbudget.Meter, docs []*yaml.Node) error {
	c := treeCounter{m: m, size: map[*yaml.Node]int{}, open: map[*yaml.Node]bool{}, max: m.Limits().Expanded}
	for _, d := range docs {
		if err := c.count(d, -1); err != nil {
			return err
		}
	}
	return m.Expand(c.expanded)
}

type treeCounter struct {
	m *docbudget.Meter
	// size is the expanded size of each node an alias points at; open holds those being sized
	size map[*yaml.Node]int
	open map[*yaml.Node]bool
	// expanded is what the aliases add; max, the limit past which sizes need no more precision
	expanded, max int
}

// count counts n (the document node at depth -1, its content at 0) and what its aliases add.
func (c *treeCounter) count(n *yaml.Node, depth int) error {
	if depth >= 0 {
		if err := c.m.Node(depth); err != nil {
			return err
		}
	}
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		if c.max > 0 {
			c.expanded = c.add(c.expanded, c.sizeOf(n.Alias))
		}
		return nil
	}
	for _, ch := range n.Content {
		if err := c.count(ch, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// sizeOf is how many values n stands for once its aliases are expanded; an alias inside its own
// anchor stands for more than any limit.
func (c *treeCounter) sizeOf(n *yaml.Node) int {
	if s, ok := c.size[n]; ok {
		return s
	}
	if c.open[n] {
		return c.max + 1
	}
	c.open[n] = true
	s := 1
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		s = c.sizeOf(n.Alias)
	}
	for _, ch := range n.Content {
		s = c.add(s, c.sizeOf(ch))
	}
	delete(c.open, n)
	c.size[n] = s
	return s
}

// add adds without going past max+1: beyond the limit, sizes only need to be beyond it.
func (c *treeCounter) add(a, b int) int {
	if c.max > 0 && a+b > c.max {
		return c.max + 1
	}
	return a + b
}

// ScanNodes is an upper bound of the nodes reading data builds (docbudget.Scan), found without
// reading it.
func ScanNodes(data []byte) int { return docbudget.Scan(data).Nodes }
