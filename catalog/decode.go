package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/dustin/go-humanize"
	"go.yaml.in/yaml/v3"

	"github.com/krm-catalog/krm-catalog/internal/docbudget"
	"github.com/krm-catalog/krm-catalog/internal/yamlpos"
	"github.com/krm-catalog/krm-catalog/pkg/krmfn/yamlfast"
	"github.com/krm-catalog/krm-catalog/schemas"
)

// Limits on what Decode accepts. They are far above any real catalog and keep hostile input cheap.
const (
	// MaxInputBytes is the largest input Decode reads.
	MaxInputBytes = 16 << 20
	// maxDepth is how deeply values may nest (DefaultLimits' Depth).
	maxDepth = 128
	// valueBudgetPerByte bounds how many values aliases may expand a document into, per input byte.
	// Without aliases a document cannot hold more values than it has bytes.
	valueBudgetPerByte = 2
	minValueBudget     = 100_000
)

// DefaultLimits bound a read of Decode: those of an input of MaxInputBytes (docbudget.ForBytes),
// 2,097,152 values nesting at most 128 deep. A caller that reads less (the service reads request
// bodies of a few MiB) passes the limits of its own size to DecodeContext.
func DefaultLimits() docbudget.Limits { return docbudget.ForBytes(MaxInputBytes) }

// Document is one YAML or JSON document of a file, decoded.
type Document struct {
	File string
	// Index is the document's position in the file's stream, from 0.
	Index int
	// Raw is the document's own bytes, exactly as they were read.
	Raw []byte
	// Value is the document as JSON-compatible Go values: map[string]any, []any, string, int64,
	// float64, json.Number (integers beyond int64), bool and nil.
	Value map[string]any
	// APIVersion and Kind are the document's type, when it names one.
	APIVersion, Kind string

	root      *yaml.Node // the document's top-level mapping
	lineShift int        // lines before Raw in the file
}

// Position returns the 1-based line and column of the value at a JSON pointer, or of the nearest
// enclosing value that exists. A member of a mapping is placed at its key.
func (d *Document) Position(pointer string) (line, col int) {
	if d.root == nil {
		return d.lineShift + 1, 1
	}
	n := d.root
	line, col = n.Line, n.Column
	if pointer != "" {
	walk:
		for _, tok := range strings.Split(strings.TrimPrefix(pointer, "/"), "/") {
			tok = schemas.UnescapeToken(tok)
			n = deref(n)
			switch n.Kind {
			case yaml.MappingNode:
				key, val := findKey(n, tok, 0)
				if key == nil {
					break walk
				}
				line, col, n = key.Line, key.Column, val
			case yaml.SequenceNode:
				i, err := strconv.Atoi(tok)
				if err != nil || i < 0 || i >= len(n.Content) {
					break walk
				}
				n = n.Content[i]
				line, col = n.Line, n.Column
			default:
				break walk
			}
		}
	}
	return line + d.lineShift, col
}

// findKey finds the last key named name in a mapping, looking into merged mappings (<<) when the
// mapping itself lacks it.
func findKey(m *yaml.Node, name string, depth int) (key, val *yaml.Node) {
	if depth > maxDepth {
		return nil, nil
	}
	for i := len(m.Content) - 2; i >= 0; i -= 2 {
		if k := m.Content[i]; k.Kind == yaml.ScalarNode && k.Value == name && !isMergeKey(k) {
			return k, m.Content[i+1]
		}
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if !isMergeKey(m.Content[i]) {
			continue
		}
		for _, src := range mergeSources(m.Content[i+1]) {
			if k, v := findKey(src, name, depth+1); k != nil {
				return k, v
			}
		}
	}
	return nil, nil
}

func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < maxDepth; i++ {
		n = n.Alias
	}
	return n
}

// Decode splits data into documents and decodes each one. It never panics on bad input: a problem
// becomes an error finding naming where it is, and a document that cannot be decoded is left out.
// Documents that are empty (only comments or white space) are skipped. It reads within
// DefaultLimits; a document past them is an error finding too.
func Decode(file string, data []byte) ([]*Document, Findings) {
	docs, fs, _ := DecodeContext(context.Background(), file, data, DefaultLimits())
	return docs, fs
}

// DecodeContext is Decode within limits (zero fields: DefaultLimits'), stopped when ctx ends. A
// read past a limit returns no document, a finding that names the limit and where the read
// stopped, and the *docbudget.Error (errors.Is docbudget.ErrExceeded) for callers that answer
// it otherwise than an invalid document (the service: 413). A read that ctx ended returns ctx's
// error. The input is scanned before it is parsed (docbudget.Meter.Scan), so that a document
// surely past the node limit costs no parsing.
func DecodeContext(ctx context.Context, file string, data []byte, limits docbudget.Limits) ([]*Document, Findings, error) {
	return decodeContext(ctx, file, data, limits, nil)
}

// decodeContext is DecodeContext of an input whose Shape the caller may have already.
func decodeContext(ctx context.Context, file string, data []byte, limits docbudget.Limits, shape *docbudget.Shape) ([]*Document, Findings, error) {
	limits = limits.Or(DefaultLimits())
	// aliases may expand a document to twice its bytes in values: a document without aliases
	// cannot hold more values than it has bytes
	limits.Expanded = min(limits.Expanded, max(minValueBudget, valueBudgetPerByte*len(data)))
	meter := docbudget.NewMeter(limits, ctx.Err)
	docs, fs, err := decode(file, data, meter, shape)
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return nil, fs, err
	}
	return docs, fs, nil
}

// decode is DecodeContext's work; err is the error that stopped the read, whose finding is in fs.
func decode(file string, data []byte, meter *docbudget.Meter, shape *docbudget.Shape) (docs []*Document, fs Findings, err error) {
	fail := func(line, col int, format string, args ...any) ([]*Document, Findings, error) {
		return nil, Findings{{Severity: SeverityError, File: file, Line: line, Column: col, Message: fmt.Sprintf(format, args...)}}, nil
	}
	if len(data) > MaxInputBytes {
		return fail(1, 1, "input is %s, above the %s limit", humanize.IBytes(uint64(len(data))), humanize.IBytes(MaxInputBytes))
	}
	if i := bytes.IndexByte(data, 0); i >= 0 {
		line, col := lineCol(data, i)
		return fail(line, col, "binary input: NUL byte at offset %d; expected YAML or JSON text", i)
	}
	if !utf8.Valid(data) {
		i := firstInvalidUTF8(data)
		line, col := lineCol(data, i)
		return fail(line, col, "input is not UTF-8 text: invalid byte 0x%02x at offset %d", data[i], i)
	}
	scanErr := func() error {
		if shape != nil {
			var e *docbudget.Error
			if err := meter.Admit(*shape); !errors.As(err, &e) || e.Limit != "depth" {
				return err
			}
		}
		return meter.Scan(data) // and where the input goes too deep
	}
	if err := scanErr(); err != nil {
		line, col := 1, 1
		var e *docbudget.Error
		if errors.As(err, &e) && e.Line > 0 {
			line, col = e.Line, e.Column
		}
		return nil, Findings{stoppedFinding(file, 0, err, line, col, "")}, err
	}
	trimmed := bytes.TrimLeft(data, " \t\r\n\ufeff")
	var segs []segment
	var errs Findings
	if len(trimmed) > 0 && trimmed[0] == '{' {
		segs, errs = splitJSON(file, data)
	} else {
		segs = splitYAML(data)
	}
	for _, s := range segs {
		doc, fs, err := decodeSegment(file, len(docs), s, meter)
		errs = append(errs, fs...)
		if err != nil {
			return nil, errs, err // the read stopped: what is left is not read
		}
		if doc != nil {
			docs = append(docs, doc)
		}
	}
	if len(docs) == 0 && len(errs) == 0 {
		return fail(1, 1, "empty input: no YAML or JSON document found")
	}
	return docs, errs, nil
}

// segment is one document's bytes and where they start in the file.
type segment struct {
	data  []byte
	line  int // 0-based line of data[0] in the file
	json  bool
	index int
}

// splitYAML cuts a YAML stream at its document markers. A line that starts with "---" or "..."
// followed by a blank is a marker wherever it stands, even inside a block scalar (YAML's
// c-forbidden), so cutting by lines is exact.
func splitYAML(data []byte) []segment {
	var segs []segment
	start, startLine, line := 0, 0, 0
	blank := true         // the current segment holds only comments, directives and white space so far
	hasDirective := false // ... and among them a directive (%YAML), which belongs to the next document
	cut := func(end, nextStart, nextLine int) {
		if !blank {
			segs = append(segs, segment{data: data[start:end], line: startLine})
		}
		start, startLine, blank, hasDirective = nextStart, nextLine, true, false
	}
	for off := 0; off < len(data); line++ {
		end := bytes.IndexByte(data[off:], '\n')
		next := len(data)
		if end >= 0 {
			next = off + end + 1
		}
		l := data[off:next]
		switch {
		case isMarker(l, "---"):
			if !blank || !hasDirective {
				cut(off, off, line)
			}
			// the marker line may carry content ("--- !tag" or "--- {a: 1}")
			if rest := bytes.TrimSpace(l[3:]); len(rest) > 0 && rest[0] != '#' {
				blank = false
			}
		case isMarker(l, "..."):
			if blank {
				start, startLine = next, line+1
			} else {
				cut(next, next, line+1)
			}
		default:
			t := bytes.TrimSpace(bytes.TrimPrefix(l, []byte("\ufeff")))
			switch {
			case len(t) == 0 || t[0] == '#':
			case t[0] == '%' && blank:
				hasDirective = true
			default:
				blank = false
			}
		}
		off = next
	}
	cut(len(data), len(data), line)
	return segs
}

func isMarker(line []byte, marker string) bool {
	if !bytes.HasPrefix(line, []byte(marker)) {
		return false
	}
	return len(line) == 3 || line[3] == ' ' || line[3] == '\t' || line[3] == '\r' || line[3] == '\n'
}

// splitJSON cuts a stream of concatenated JSON values.
func splitJSON(file string, data []byte) ([]segment, Findings) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var segs []segment
	prev := 0
	for {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			return segs, nil
		}
		if err != nil {
			off := int(dec.InputOffset())
			var se *json.SyntaxError
			if errors.As(err, &se) {
				off = int(se.Offset)
			}
			line, col := lineCol(data, max(off-1, 0))
			return segs, Findings{{Severity: SeverityError, File: file, Document: len(segs), Line: line, Column: col,
				Message: "invalid JSON: " + strings.TrimPrefix(err.Error(), "json: ")}}
		}
		end := int(dec.InputOffset())
		begin := prev + (len(data[prev:end]) - len(bytes.TrimLeft(data[prev:end], " \t\r\n\ufeff")))
		line, _ := lineCol(data, begin)
		segs = append(segs, segment{data: data[begin:end], line: line - 1, json: true})
		prev = end
	}
}

// yamlErrorAt returns where a YAML syntax error is (line and column in data) and what it is. A
// construct left open at the end of the input (a quote, a flow sequence) is reported where it
// starts, the end of the input being no place to look for it. data is a document that starts after
// the file's first shift lines; the line returned is the document's, the lines in msg the file's.
func yamlErrorAt(data []byte, shift int, err error) (line, col int, msg string) {
	var se *yamlpos.SyntaxError
	if !errors.As(yamlpos.Locate(data, err), &se) {
		return 1, 1, strings.TrimPrefix(err.Error(), "yaml: ")
	}
	line, col, msg = se.Line, se.Column, se.Problem
	if lines := bytes.Count(data, []byte{'\n'}) + 1; line > lines {
		// the parser puts the end of an input without a final line break on a line of its own
		line, col = lines, utf8.RuneCount(data[bytes.LastIndexByte(data, '\n')+1:])+1
	}
	end := atEnd(data, line, col)
	switch {
	case se.Context == "" && end:
		return line, col, msg + " at the end of the input"
	case se.Context == "":
		return line, col, msg
	case end:
		return se.ContextLine, se.ContextColumn, fmt.Sprintf("%s at the end of the input (%s started here)", msg, se.Context)
	}
	return line, col, fmt.Sprintf("%s (%s started at %d:%d)", msg, se.Context, se.ContextLine+shift, se.ContextColumn)
}

// atEnd reports whether only blanks and comments follow line:col (1-based, col in characters).
func atEnd(data []byte, line, col int) bool {
	off := 0
	for l := 1; l < line; l++ {
		i := bytes.IndexByte(data[off:], '\n')
		if i < 0 {
			return true
		}
		off += i + 1
	}
	for c := 1; c < col && off < len(data) && data[off] != '\n'; c++ {
		_, n := utf8.DecodeRune(data[off:])
		off += n
	}
	for _, l := range bytes.Split(data[off:], []byte{'\n'}) {
		if t := bytes.TrimSpace(l); len(t) > 0 && t[0] != '#' {
			return false
		}
	}
	return true
}

// stoppedFinding is the error finding of a read its meter stopped: past a limit, or cancelled.
func stoppedFinding(file string, index int, err error, line, col int, pointer string) Finding {
	msg := err.Error()
	if !errors.Is(err, docbudget.ErrExceeded) {
		msg = "reading the document stopped: " + msg
	}
	return Finding{Severity: SeverityError, File: file, Document: index, Line: line, Column: col, Pointer: pointer, Message: msg}
}

// decodeSegment decodes one document; err is the error of its meter that stopped it, whose
// finding is in the findings.
func decodeSegment(file string, index int, s segment, meter *docbudget.Meter) (*Document, Findings, error) {
	fail := func(line, col int, pointer, msg string) (*Document, Findings, error) {
		return nil, Findings{{Severity: SeverityError, File: file, Document: index, Line: line + s.line, Column: col, Pointer: pointer, Message: msg}}, nil
	}
	text := s.data
	if s.json && bytes.Contains(text, []byte(`\/`)) {
		text = unescapeJSONSlashes(text)
	}
	var doc yaml.Node
	var slab yamlfast.Slab
	// the fast reader builds yaml.v3's nodes for most documents; what it declines, yaml.v3 reads,
	// and reports errors of (the meter bounds the tree as it is converted below)
	if docs, _, ok := yamlfast.Read(text, yamlfast.Options{Budget: -1}, &slab); ok && len(docs) <= 1 {
		if len(docs) == 0 {
			return nil, nil, nil
		}
		doc = *docs[0]
	} else if err := yaml.Unmarshal(text, &doc); err != nil {
		line, col, msg := yamlErrorAt(text, s.line, err)
		return fail(line, col, "", "invalid YAML: "+msg)
	}
	if len(doc.Content) == 0 {
		return nil, nil, nil
	}
	root := deref(doc.Content[0])
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return nil, nil, nil
	}
	if root.Kind != yaml.MappingNode {
		return fail(root.Line, root.Column, "", fmt.Sprintf("a document must be a mapping of fields, found %s", describeNode(root)))
	}
	c := converter{meter: meter, inProgress: map[*yaml.Node]bool{}, lineShift: s.line}
	v, ok := c.convert(root, 0)
	if !ok {
		f := c.err
		f.File, f.Document, f.Line = file, index, f.Line+s.line
		var e *docbudget.Error
		if errors.As(c.stopped, &e) {
			e.Line, e.Column = f.Line, f.Column
		}
		return nil, Findings{f}, c.stopped
	}
	d := &Document{File: file, Index: index, Raw: s.data, Value: v.(map[string]any), root: root, lineShift: s.line}
	d.APIVersion, _ = d.Value["apiVersion"].(string)
	d.Kind, _ = d.Value["kind"].(string)
	var fs Findings
	for _, dup := range c.duplicates {
		dup.File, dup.Document, dup.Line = file, index, dup.Line+s.line
		fs = append(fs, dup)
	}
	return d, fs, nil
}

// converter turns a YAML node tree into JSON-compatible values, counting them on its meter:
// each node once, and each value an alias or a merge expands it into once more.
type converter struct {
	meter *docbudget.Meter
	// expanding counts the aliases and merges whose expansion is under way
	expanding int
	// path is where the conversion is, the JSON pointer a finding names (pointer): kept as its
	// tokens, as most documents need no pointer at all
	path []pathToken
	// outerAlias is the alias whose expansion is under way, where an exhausted budget is reported.
	outerAlias    *yaml.Node
	outerAliasPtr string
	inProgress    map[*yaml.Node]bool // anchors being expanded, to catch an alias inside its own anchor
	duplicates    Findings
	err           Finding // the first fatal problem
	stopped       error   // the meter's error, when it is what stopped the conversion
	lineShift     int     // lines before the document in its file, for messages that cite a line
}

// pathToken is a key of a mapping, or (key "" and index >= 0) an index of a list.
type pathToken struct {
	key   string
	index int
}

// pointer is the JSON pointer of where the conversion is.
func (c *converter) pointer() string {
	var b strings.Builder
	for _, t := range c.path {
		b.WriteByte('/')
		if t.index >= 0 {
			b.WriteString(strconv.Itoa(t.index))
		} else {
			b.WriteString(schemas.EscapeToken(t.key))
		}
	}
	return b.String()
}

func (c *converter) fatal(n *yaml.Node, format string, args ...any) (any, bool) {
	c.err = Finding{Severity: SeverityError, Line: n.Line, Column: n.Column, Pointer: c.pointer(), Message: fmt.Sprintf(format, args...)}
	return nil, false
}

// count counts n, a node at depth, on the meter: an error ends the conversion there (an
// expansion's at the alias that started it).
func (c *converter) count(n *yaml.Node, depth int) bool {
	var err error
	if c.expanding > 0 {
		err = c.meter.Expand(1)
	} else {
		err = c.meter.Node(depth)
	}
	if err == nil {
		return true
	}
	at, atPtr := n, ""
	if c.outerAlias != nil {
		at, atPtr = c.outerAlias, c.outerAliasPtr
	} else {
		atPtr = c.pointer()
	}
	c.err, c.stopped = stoppedFinding("", 0, err, at.Line, at.Column, atPtr), err
	return false
}

func (c *converter) convert(n *yaml.Node, depth int) (any, bool) {
	if !c.count(n, depth) {
		return nil, false
	}
	if n.Anchor != "" {
		// an alias inside its own anchor's value is a cycle
		c.inProgress[n] = true
		defer delete(c.inProgress, n)
	}
	switch n.Kind {
	case yaml.AliasNode:
		if n.Alias == nil {
			return c.fatal(n, "alias *%s has no anchor", n.Value)
		}
		if c.inProgress[n.Alias] {
			return c.fatal(n, "alias *%s refers to a value that contains it", n.Value)
		}
		c.inProgress[n.Alias] = true
		defer delete(c.inProgress, n.Alias)
		if c.outerAlias == nil {
			c.outerAlias, c.outerAliasPtr = n, c.pointer()
			defer func() { c.outerAlias = nil }()
		}
		c.expanding++
		defer func() { c.expanding-- }()
		return c.convert(n.Alias, depth)
	case yaml.MappingNode:
		return c.mapping(n, depth)
	case yaml.SequenceNode:
		s := make([]any, len(n.Content))
		for i, item := range n.Content {
			c.path = append(c.path, pathToken{index: i})
			v, ok := c.convert(item, depth+1)
			c.path = c.path[:len(c.path)-1]
			if !ok {
				return nil, false
			}
			s[i] = v
		}
		return s, true
	case yaml.ScalarNode:
		return c.scalar(n)
	default:
		return c.fatal(n, "unexpected YAML node")
	}
}

func (c *converter) mapping(n *yaml.Node, depth int) (any, bool) {
	m := make(map[string]any, len(n.Content)/2)
	merged := false
	// merged keys (<<) give way to the mapping's own keys, whatever their order
	for i := 0; i+1 < len(n.Content); i += 2 {
		if !isMergeKey(n.Content[i]) {
			continue
		}
		merged = true
		for _, src := range mergeSources(n.Content[i+1]) {
			if src.Kind != yaml.MappingNode {
				return c.fatal(n.Content[i+1], "a merge (<<) takes a mapping or a list of mappings, found %s", describeNode(src))
			}
			c.expanding++
			v, ok := c.convert(src, depth+1)
			c.expanding--
			if !ok {
				return nil, false
			}
			for k, val := range v.(map[string]any) {
				if _, earlier := m[k]; !earlier {
					m[k] = val
				}
			}
		}
	}
	// the keys seen, to report duplicates: m itself, unless merged keys are in it
	var seen map[string]*yaml.Node
	if merged {
		seen = make(map[string]*yaml.Node, len(n.Content)/2)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := deref(n.Content[i])
		if isMergeKey(k) {
			continue
		}
		if k.Kind != yaml.ScalarNode {
			return c.fatal(k, "a key must be a plain value, found %s", describeNode(k))
		}
		c.path = append(c.path, pathToken{key: k.Value, index: -1})
		if !c.count(k, depth+1) {
			return nil, false
		}
		dup := false
		if seen != nil {
			_, dup = seen[k.Value]
			seen[k.Value] = k
		} else {
			_, dup = m[k.Value]
		}
		if dup {
			c.duplicate(n, i, k)
		}
		v, ok := c.convert(n.Content[i+1], depth+1)
		c.path = c.path[:len(c.path)-1]
		if !ok {
			return nil, false
		}
		m[k.Value] = v
	}
	return m, true
}

// duplicate reports the key at n.Content[i], which an earlier key of n repeats.
func (c *converter) duplicate(n *yaml.Node, i int, k *yaml.Node) {
	first := k
	for j := 0; j < i; j += 2 {
		if e := deref(n.Content[j]); e.Kind == yaml.ScalarNode && e.Value == k.Value && !isMergeKey(e) {
			first = e
			break
		}
	}
	c.duplicates = append(c.duplicates, Finding{Severity: SeverityError, Line: k.Line, Column: k.Column, Pointer: c.pointer(),
		Message: fmt.Sprintf("duplicate key %q (first at line %d); the later value would silently win", k.Value, first.Line+c.lineShift)})
}

func (c *converter) scalar(n *yaml.Node) (any, bool) {
	switch n.ShortTag() {
	case "!!null":
		return nil, true
	case "!!bool":
		switch n.Value {
		case "true", "True", "TRUE":
			return true, true
		case "false", "False", "FALSE":
			return false, true
		}
		var b bool
		if err := n.Decode(&b); err != nil {
			return c.fatal(n, "invalid boolean %q", n.Value)
		}
		return b, true
	case "!!int":
		// decimal integers, the common case, without a decoder (a leading 0 is octal to yaml.v3)
		if plainDecimal(n.Value) {
			if i, err := strconv.ParseInt(n.Value, 10, 64); err == nil {
				return i, true
			}
		}
		var i int64
		if err := n.Decode(&i); err == nil {
			return i, true
		}
		if _, err := strconv.ParseFloat(n.Value, 64); err == nil && json.Valid([]byte(n.Value)) {
			return json.Number(n.Value), true
		}
		return c.fatal(n, "integer %s is out of range", n.Value)
	case "!!float":
		var f float64
		if err := n.Decode(&f); err != nil {
			return c.fatal(n, "invalid number %q", n.Value)
		}
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return c.fatal(n, "number %s has no JSON representation", n.Value)
		}
		return f, true
	default:
		// strings, timestamps (kept as written, as Kubernetes tools do), binary (its base64 text)
		// and custom tags
		return n.Value, true
	}
}

// plainDecimal reports whether s is an integer in decimal digits, signed with '-' only, without
// leading zeros: what yaml.v3 reads in base 10.
func plainDecimal(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" || len(s) > 1 && s[0] == '0' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func isMergeKey(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && k.Value == "<<" && (k.Tag == "!!merge" || k.Tag == "")
}

func mergeSources(v *yaml.Node) []*yaml.Node {
	v = deref(v)
	if v.Kind == yaml.SequenceNode {
		out := make([]*yaml.Node, 0, len(v.Content))
		for _, item := range v.Content {
			out = append(out, deref(item))
		}
		return out
	}
	return []*yaml.Node{v}
}

func describeNode(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	case yaml.ScalarNode:
		if len(n.Value) > 40 {
			return fmt.Sprintf("the value %.40q...", n.Value)
		}
		return fmt.Sprintf("the value %q", n.Value)
	}
	return "an alias"
}

// unescapeJSONSlashes rewrites JSON's "\/" escape, which YAML lacks, to "\u002f" so the YAML parser
// reads JSON text the way a JSON parser does. Raw bytes stay untouched; only columns after such an
// escape on its line shift.
func unescapeJSONSlashes(data []byte) []byte {
	var out bytes.Buffer
	out.Grow(len(data) + 16)
	inString := false
	for i := 0; i < len(data); i++ {
		b := data[i]
		switch {
		case inString && b == '\\' && i+1 < len(data):
			if data[i+1] == '/' {
				out.WriteString(`\u002f`)
			} else {
				out.WriteByte(b)
				out.WriteByte(data[i+1])
			}
			i++
			continue
		case b == '"':
			inString = !inString
		}
		out.WriteByte(b)
	}
	return out.Bytes()
}

// lineCol converts a byte offset to a 1-based line and column (in bytes).
func lineCol(data []byte, off int) (line, col int) {
	off = min(off, len(data))
	line = 1 + bytes.Count(data[:off], []byte{'\n'})
	col = off - bytes.LastIndexByte(data[:off], '\n')
	return line, col
}

func firstInvalidUTF8(data []byte) int {
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && size <= 1 {
			return i
		}
		i += size
	}
	return 0
}
