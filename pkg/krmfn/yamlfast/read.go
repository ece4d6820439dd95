// Package yamlfast reads the common shape of Kubernetes configuration into yaml.v3's nodes several
// times faster than yaml.v3, line by line: block mappings and sequences of printable-ASCII scalars
// (plain, quoted, literal blocks), flow collections on one line, comments at the end of a line, and
// comment lines where yaml.v3 makes them a head comment (contentLine) or, at the end, a foot
// comment (end). It builds exactly the nodes yaml.v3 builds (kind, style, tag, value, comments,
// line and column), which the differential tests and fuzz targets hold it to, and declines
// (ok=false) anything else: other foot comments, anchors, tags, multi-line plain or quoted
// scalars, tabs, non-ASCII... The caller then gives the whole input to yaml.v3, which also reports
// every error (docs/yaml.md). Append is the writer of the same shape (write.go).
//
// It belongs to the function SDK's module so that pkg/krmfn reads and writes with it without
// requiring krm-catalog's module, which imports it from here: one reader and one writer for both.
package yamlfast

import (
	"bytes"
	"strings"
	"unsafe"

	"go.yaml.in/yaml/v3"
)

// Slab hands out nodes from blocks of 256: one allocation for many small ones, which is most
// of what reading YAML or JSON allocates.
type Slab []yaml.Node

// Next returns a zero node.
func (s *Slab) Next() *yaml.Node {
	if len(*s) == 0 {
		*s = make([]yaml.Node, 256)
	}
	n := &(*s)[0]
	*s = (*s)[1:]
	return n
}

// MaxDepth bounds the nesting the reader follows; deeper input goes to yaml.v3.
const MaxDepth = 64

type fastReader struct {
	src  []byte
	pos  int // offset in src
	line int // 1-based line of pos
	bol  int // offset of the start of pos's line
	slab Slab
	text string // src as one string, of which every value read as it is written is a part
	// alias makes text src itself rather than a copy: for a caller that never changes src
	// afterwards (a function's output, read once), whose size then counts once, not twice
	alias bool
	// nodes counts the nodes read; past budget (when not negative) the reader stops, reporting
	// ok=false, and over is set
	nodes, budget int
	over          bool
	// maxDepth is the nesting the reader follows (MaxDepth, or less); deeper input is left
	// to yaml.v3
	maxDepth int
	// head is the comment block read before the current line, which the node it starts takes;
	// docHead, that of the document (docStart: before the first document's content)
	head, docHead string
	// keyFoot and docFoot are the foot comments read at the end of the input (end)
	keyFoot, docFoot string
	headAt           int // where the line head belongs to starts
	// stack holds the children of the collections being read; ptrs is where their Content
	// slices are cut from
	stack, ptrs []*yaml.Node
	docStart    bool
}

// Options say how to read.
type Options struct {
	// Line is the line data starts on in what it is part of (1 when zero).
	Line int
	// Budget is how many nodes may be read: past it the reader stops with ok=false. Negative:
	// unbounded; zero: none.
	Budget int
	// MaxDepth is the nesting followed (MaxDepth when zero, and never more); deeper input is
	// left to yaml.v3.
	MaxDepth int
	// Alias lets the nodes' strings share data's memory instead of a copy of it: for a caller
	// that never changes data afterwards.
	Alias bool
}

// Read returns the non-empty documents of data, as yaml.v3 reads them (documents that are empty
// or hold only comments left out), and how many nodes it read; ok is false when it leaves data to
// yaml.v3, or read past o.Budget (nodes then says how many it had read). It takes its nodes from
// slab and leaves there those it did not take: a caller reading many small inputs (resources one
// by one) shares one slab between them.
func Read(data []byte, o Options, slab *Slab) (docs []*yaml.Node, nodes int, ok bool) {
	line, depth := o.Line, MaxDepth
	if line == 0 {
		line = 1
	}
	if o.MaxDepth > 0 {
		depth = min(depth, o.MaxDepth)
	}
	return read(&fastReader{src: data, line: line, slab: *slab, budget: o.Budget, maxDepth: depth, alias: o.Alias}, slab)
}

func read(r *fastReader, slab *Slab) (docs []*yaml.Node, nodes int, ok bool) {
	data := r.src
	defer func() { *slab = r.slab; nodes = r.nodes }()
	for i := 0; i < len(data); i++ {
		if c := data[i]; c >= 0x7f || c < 0x20 && c != '\n' {
			return nil, 0, false // tabs, carriage returns, control and non-ASCII characters
		} else if c == '.' && (i == 0 || data[i-1] == '\n') && bytes.HasPrefix(data[i:], []byte("...")) {
			return nil, 0, false // "..." at a line's start may end a document
		}
	}
	for {
		r.docStart = len(docs) == 0
		ind, ok := r.contentLine()
		r.docStart = false
		if !ok || r.over {
			return nil, 0, false
		}
		if ind < 0 {
			return docs, 0, true
		}
		doc := r.node(yaml.DocumentNode, "", "")
		doc.Column = 1
		doc.HeadComment, r.docHead = r.docHead, ""
		if ind == 0 && r.isDocumentStart() {
			if doc.HeadComment != "" || r.head != "" {
				return nil, 0, false // comments before "---"
			}
			r.pos += 3
			if !r.endOfLine() {
				return nil, 0, false // content or a comment after "---"
			}
			if ind, ok = r.contentLine(); !ok {
				return nil, 0, false
			}
			if ind < 0 || ind == 0 && r.isDocumentStart() {
				if r.keyFoot != "" || r.docFoot != "" || r.head != "" {
					return nil, 0, false // yaml.v3 gives an empty document's comments to the document before
				}
				continue // an empty document, left out as decodeYAMLDocuments leaves it out
			}
		} else if len(docs) > 0 {
			return nil, 0, false
		}
		if ind != 0 {
			return nil, 0, false
		}
		root, ok := r.block(0, 0)
		if !ok || !r.rootFeet(doc, root) {
			return nil, 0, false
		}
		doc.Content = []*yaml.Node{root}
		docs = append(docs, doc)
	}
}

// children moves the nodes pushed since mark off the stack into the Content of their collection:
// a slice of exactly their number, cut from a shared block (capped, so that appending to one
// reallocates it rather than writing over the next).
func (r *fastReader) children(mark int) []*yaml.Node {
	n := len(r.stack) - mark
	if n == 0 {
		return nil
	}
	if n > len(r.ptrs) {
		// about what the rest of the input needs (a node for every 8 bytes or more), up to a
		// block: an item read alone takes a block of its size
		r.ptrs = make([]*yaml.Node, max(n, min(1024, (len(r.src)-r.pos)/8+16)))
	}
	c := r.ptrs[:n:n]
	r.ptrs = r.ptrs[n:]
	copy(c, r.stack[mark:])
	clear(r.stack[mark:])
	r.stack = r.stack[:mark]
	return c
}

func (r *fastReader) node(kind yaml.Kind, tag, value string) *yaml.Node {
	if r.nodes++; r.budget >= 0 && r.nodes > r.budget {
		r.over = true // the loops that read collections stop at their next entry
	}
	n := r.slab.Next()
	n.Kind, n.Tag, n.Value = kind, tag, value
	n.Line, n.Column = r.line, r.pos-r.bol+1
	return n
}

// textOf returns src[start:end] as a string: a part of one copy of the input, so that reading
// allocates nothing per value.
func (r *fastReader) textOf(start, end int) string {
	if r.text == "" {
		if r.alias {
			r.text = unsafe.String(unsafe.SliceData(r.src), len(r.src))
		} else {
			r.text = string(r.src)
		}
	}
	return r.text[start:end]
}

// contentLine moves to the first character of the next line that holds something, and returns its
// indentation: -1 at the end of the input. Comment lines before it are read as the head comment of
// what that line starts, which the reader takes (takeHead), in the one shape yaml.v3 reads so: a
// block of comment lines, each at the indentation of the line that follows the block directly.
// Comments that yaml.v3 gives another node (a block followed by a blank line, or indented otherwise
// than what follows, or with nothing after it: foot comments) are left to yaml.v3 (ok=false). At the
// start of the first document, blocks followed by a blank line are the document's head comment
// (docHead).
func (r *fastReader) contentLine() (indent int, ok bool) {
	if r.head != "" {
		if r.pos == r.headAt {
			return r.pos - r.bol, true // called again at the same line: the block collections ended there
		}
		return 0, false // a head comment nothing took
	}
	var lines []string   // the current block's lines, from their "#"
	blockCol := -1       // the block's indentation
	blankAfter := false  // a blank line since the block
	blankBefore := false // a blank line before the first block
	var docHead, foot []string
	for {
		if r.pos >= len(r.src) {
			return r.end(lines, foot, docHead, blockCol, blankBefore, blankAfter)
		}
		for r.pos < len(r.src) && r.src[r.pos] == ' ' {
			r.pos++
		}
		if r.pos >= len(r.src) {
			return r.end(lines, foot, docHead, blockCol, blankBefore, blankAfter)
		}
		switch r.src[r.pos] {
		case '\n':
			r.pos++
			r.line++
			r.bol = r.pos
			blankAfter = lines != nil
			blankBefore = blankBefore || lines == nil && foot == nil
			continue
		case '#':
			col := r.pos - r.bol
			if blankAfter {
				// the block before is the document's head comment, or a foot comment: the last
				// key's when right below it and at column 0, and only at the end (end)
				switch {
				case r.docStart && docHead == nil:
					docHead, lines, blankAfter = lines, nil, false
				case !r.docStart && foot == nil && !blankBefore && blockCol == 0:
					foot, lines, blankAfter = lines, nil, false
				default:
					return 0, false
				}
			}
			if lines != nil && col != blockCol {
				return 0, false
			}
			blockCol = col
			end := bytes.IndexByte(r.src[r.pos:], '\n')
			if end < 0 {
				return 0, false // a comment on the last line: a foot comment
			}
			lines = append(lines, r.textOf(r.pos, r.pos+end))
			r.pos += end + 1
			r.line++
			r.bol = r.pos
			continue
		}
		indent = r.pos - r.bol
		if foot != nil {
			return 0, false // a foot comment, then more
		}
		if blankAfter {
			if !r.docStart || docHead != nil {
				return 0, false
			}
			docHead, lines = lines, nil
		}
		if lines != nil && blockCol != indent {
			return 0, false
		}
		if docHead != nil {
			r.docHead = strings.Join(docHead, "\n")
		}
		if lines != nil {
			r.head, r.headAt = joinComment(lines), r.pos
		}
		return indent, true
	}
}

// end ends the comment lines contentLine read at the end of the input: foot comments, in the one
// shape yaml.v3 reads so, at column 0 below the last document: a block right below its last line
// is the foot comment of the root's last key, one after a blank line (and the last line of the
// input) the document's, both when the first block is right below the last line. read gives them
// to their nodes (rootFeet).
func (r *fastReader) end(lines, foot, docHead []string, col int, blankBefore, blankAfter bool) (int, bool) {
	switch {
	case lines == nil && foot == nil && docHead == nil:
		return -1, true
	case r.docStart || docHead != nil || col != 0:
		return 0, false
	case foot != nil && !blankAfter:
		r.keyFoot, r.docFoot = joinComment(foot), joinComment(lines)
	case foot == nil && !blankBefore:
		r.keyFoot = joinComment(lines)
	case foot == nil && !blankAfter:
		r.docFoot = joinComment(lines)
	default:
		return 0, false // yaml.v3 ends a document's foot comment followed by blank lines with "\n"
	}
	return -1, true
}

// rootFeet gives the foot comments end read to the root's last key and to the document, when
// the root is a block mapping whose last value is neither a literal block (whose blank lines
// yaml.v3 counts before the comment) nor a sequence not indented below its key (whose last item
// yaml.v3 gives the comment); false otherwise.
func (r *fastReader) rootFeet(doc, root *yaml.Node) bool {
	if r.keyFoot == "" && r.docFoot == "" {
		return true
	}
	if root.Kind != yaml.MappingNode || root.Style != 0 || len(root.Content) < 2 {
		return false
	}
	v := root.Content[len(root.Content)-1]
	if v.Style == yaml.LiteralStyle || v.Kind == yaml.SequenceNode && v.Column == 1 {
		return false
	}
	if v.LineComment != "" || root.Content[len(root.Content)-2].LineComment != "" {
		return false // after a line comment yaml.v3 may give the foot to the document instead
	}
	root.Content[len(root.Content)-2].FootComment = r.keyFoot
	doc.FootComment = r.docFoot
	r.keyFoot, r.docFoot = "", ""
	return true
}

// joinComment joins the lines of a comment block.
func joinComment(lines []string) string {
	if len(lines) == 1 {
		return lines[0]
	}
	return strings.Join(lines, "\n")
}

// takeHead returns the head comment read before the current line, for the node it starts.
func (r *fastReader) takeHead() string {
	h := r.head
	r.head = ""
	return h
}

func (r *fastReader) isDocumentStart() bool {
	return bytes.HasPrefix(r.src[r.pos:], []byte("---")) && (r.pos+3 == len(r.src) || r.src[r.pos+3] == '\n' || r.src[r.pos+3] == ' ')
}

// endOfLine moves past trailing spaces and the line break; false when anything else is left.
func (r *fastReader) endOfLine() bool {
	for r.pos < len(r.src) && r.src[r.pos] == ' ' {
		r.pos++
	}
	if r.pos == len(r.src) {
		return true
	}
	if r.src[r.pos] != '\n' {
		return false
	}
	r.pos++
	r.line++
	r.bol = r.pos
	return true
}

// lineComment reads the rest of the line: spaces, then either its end or a comment, which it
// returns (yaml.v3 keeps a comment's trailing spaces).
func (r *fastReader) lineComment() (comment string, ok bool) {
	start := r.pos
	for r.pos < len(r.src) && r.src[r.pos] == ' ' {
		r.pos++
	}
	if r.pos < len(r.src) && r.src[r.pos] == '#' {
		if r.pos == start {
			return "", false // "#" right after a value is part of it, not a comment
		}
		end := bytes.IndexByte(r.src[r.pos:], '\n')
		if end < 0 {
			end = len(r.src) - r.pos
		}
		comment = r.textOf(r.pos, r.pos+end)
		r.pos += end
	}
	return comment, r.endOfLine()
}

// block reads the block mapping or sequence whose first line is at the current position, indented
// by indent.
func (r *fastReader) block(indent, depth int) (*yaml.Node, bool) {
	if depth > r.maxDepth {
		return nil, false
	}
	if r.isSequenceEntry() {
		return r.sequence(indent, depth)
	}
	return r.mapping(indent, depth)
}

func (r *fastReader) isSequenceEntry() bool {
	return r.src[r.pos] == '-' && (r.pos+1 == len(r.src) || r.src[r.pos+1] == ' ' || r.src[r.pos+1] == '\n')
}

// mapping reads a block mapping whose keys are at column indent+1, the first one at the current
// position.
func (r *fastReader) mapping(indent, depth int) (*yaml.Node, bool) {
	m := r.node(yaml.MappingNode, "!!map", "")
	mark := len(r.stack)
	for {
		if r.isSequenceEntry() {
			return nil, false
		}
		k, ok := r.key()
		if !ok {
			return nil, false
		}
		k.HeadComment = r.takeHead()
		v, ok := r.value(k, indent, depth)
		if !ok || r.over {
			return nil, false
		}
		r.stack = append(r.stack, k, v)
		next, ok := r.contentLine()
		if !ok {
			return nil, false
		}
		switch {
		case next < indent:
			m.Content = r.children(mark)
			return m, true
		case next > indent:
			return nil, false // a continuation line, or something yaml.v3 refuses
		case indent == 0 && r.isDocumentStart():
			m.Content = r.children(mark)
			return m, true
		}
	}
}

// key reads a plain key and the ": " (or ":" and the line's end) after it.
func (r *fastReader) key() (*yaml.Node, bool) {
	start := r.pos
	if !plainStart(r.src, r.pos) {
		return nil, false
	}
	for r.pos < len(r.src) {
		switch c := r.src[r.pos]; c {
		case ':':
			if r.pos+1 == len(r.src) || r.src[r.pos+1] == ' ' || r.src[r.pos+1] == '\n' {
				end := r.pos
				for end > start && r.src[end-1] == ' ' {
					end--
				}
				if end-start > 1024 {
					return nil, false // yaml.v3 refuses implicit keys longer than 1024 characters
				}
				k := r.scalarNode(start, end)
				if k == nil {
					return nil, false
				}
				r.pos++
				return k, true
			}
		case '#':
			if r.src[r.pos-1] == ' ' {
				return nil, false
			}
		case '\n':
			return nil, false
		}
		r.pos++
	}
	return nil, false
}

// scalarNode makes the node of the plain scalar src[start:end].
func (r *fastReader) scalarNode(start, end int) *yaml.Node {
	s := r.textOf(start, end)
	if s == "<<" {
		return nil // a merge key
	}
	n := r.node(yaml.ScalarNode, ResolvedTag(s), s)
	n.Column = start - r.bol + 1
	return n
}

// plainStart reports whether a plain scalar may start at src[i] (and is one the fast reader reads).
func plainStart(src []byte, i int) bool {
	switch src[i] {
	case '-', '?', ':':
		return i+1 < len(src) && src[i+1] != ' ' && src[i+1] != '\n' && src[i] == '-'
	case ',', '[', ']', '{', '}', '#', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`', ' ', '\n':
		return false
	}
	return true
}

// value reads what follows "key:": on the same line a scalar, a flow collection or a literal
// block; or, below it, a block collection.
func (r *fastReader) value(k *yaml.Node, indent, depth int) (*yaml.Node, bool) {
	colon := r.pos
	r.spaces()
	if r.pos == len(r.src) || r.src[r.pos] == '\n' || r.src[r.pos] == '#' {
		r.pos = colon
		c, ok := r.lineComment()
		if !ok {
			return nil, false
		}
		k.LineComment = c
		next, ok := r.contentLine()
		if !ok || next < 0 {
			return nil, false // an empty value: left to yaml.v3
		}
		if next > indent {
			return r.block(next, depth+1)
		}
		if next == indent && r.isSequenceEntry() {
			return r.sequence(indent, depth+1) // a sequence not indented below its key
		}
		return nil, false
	}
	v, ok := r.inline(indent, depth)
	if !ok {
		return nil, false
	}
	return v, true
}

// inline reads a value that starts on the current line, and the rest of the line. A block
// scalar's value reaches below.
func (r *fastReader) inline(indent, depth int) (*yaml.Node, bool) {
	var n *yaml.Node
	switch r.src[r.pos] {
	case '[', '{':
		n = r.flow(depth)
	case '"', '\'':
		n = r.quoted()
	case '|':
		return r.literal(indent)
	default:
		n = r.plain()
	}
	if n == nil {
		return nil, false
	}
	c, ok := r.lineComment()
	if !ok {
		return nil, false
	}
	n.LineComment = c
	return n, true
}

// plain reads a plain scalar to the end of its line (or a comment), which must not be a key.
func (r *fastReader) plain() *yaml.Node {
	start := r.pos
	if !plainStart(r.src, r.pos) {
		return nil
	}
	end := start
	for r.pos < len(r.src) {
		c := r.src[r.pos]
		if c == '\n' {
			break
		}
		if c == ':' && (r.pos+1 == len(r.src) || r.src[r.pos+1] == ' ' || r.src[r.pos+1] == '\n') {
			return nil // a key where a value was expected
		}
		if c == '#' && r.src[r.pos-1] == ' ' {
			break
		}
		if c != ' ' {
			end = r.pos + 1
		}
		r.pos++
	}
	r.pos = end
	return r.scalarNode(start, end)
}

// quoted reads a quoted scalar on one line: in single quotes, with a quote doubled; in double
// quotes, with the escapes of quotes and backslashes only.
func (r *fastReader) quoted() *yaml.Node {
	q := r.src[r.pos]
	n := r.node(yaml.ScalarNode, "!!str", "")
	n.Style = yaml.SingleQuotedStyle
	if q == '"' {
		n.Style = yaml.DoubleQuotedStyle
	}
	r.pos++
	start := r.pos
	var buf []byte // the value, once an escape makes it differ from the text
	for r.pos < len(r.src) {
		c := r.src[r.pos]
		escaped := false // c and the byte after it stand for that byte
		switch {
		case c == '\n':
			return nil
		case q == '"' && c == '\\':
			if r.pos+1 == len(r.src) || r.src[r.pos+1] != '"' && r.src[r.pos+1] != '\\' {
				return nil
			}
			escaped = true
		case c == q:
			if q == '\'' && r.pos+1 < len(r.src) && r.src[r.pos+1] == '\'' {
				escaped = true
				break
			}
			if buf == nil {
				n.Value = r.textOf(start, r.pos)
			} else {
				n.Value = string(buf)
			}
			r.pos++
			return n
		}
		if escaped {
			if buf == nil {
				buf = append([]byte(nil), r.src[start:r.pos]...)
			}
			buf = append(buf, r.src[r.pos+1])
			r.pos += 2
			continue
		}
		if buf != nil {
			buf = append(buf, c)
		}
		r.pos++
	}
	return nil
}

// literal reads a literal block scalar ("|", "|-" or "|+", without an indentation indicator or a
// comment) whose lines are indented more than indent.
func (r *fastReader) literal(indent int) (*yaml.Node, bool) {
	n := r.node(yaml.ScalarNode, "!!str", "")
	n.Style = yaml.LiteralStyle
	r.pos++
	chomp := byte(0)
	if r.pos < len(r.src) && (r.src[r.pos] == '-' || r.src[r.pos] == '+') {
		chomp = r.src[r.pos]
		r.pos++
	}
	if r.pos < len(r.src) && r.src[r.pos] != '\n' {
		return nil, false
	}
	if !r.endOfLine() {
		return nil, false
	}
	// the first line sets the indentation; a blank line before it, or one of spaces only, is left
	// to yaml.v3
	body := -1
	var val []byte
	trailing := 0 // line breaks after the last line with content
	for r.pos < len(r.src) {
		lineEnd := bytes.IndexByte(r.src[r.pos:], '\n')
		if lineEnd < 0 {
			lineEnd = len(r.src) - r.pos
		}
		line := r.src[r.pos : r.pos+lineEnd]
		sp := 0
		for sp < len(line) && line[sp] == ' ' {
			sp++
		}
		if sp == len(line) {
			if sp > 0 || body < 0 {
				return nil, false
			}
			trailing++
		} else {
			if body < 0 {
				if sp <= indent {
					return nil, false // an empty block
				}
				body = sp
			}
			if sp < body {
				break
			}
			for range trailing {
				val = append(val, '\n')
			}
			trailing = 0
			if len(val) > 0 {
				val = append(val, '\n')
			}
			val = append(val, line[body:]...)
		}
		r.pos += lineEnd
		if r.pos == len(r.src) {
			return nil, false // no line break after the last line: left to yaml.v3
		}
		r.pos++
		r.line++
		r.bol = r.pos
	}
	if body < 0 {
		return nil, false
	}
	switch chomp {
	case 0:
		val = append(val, '\n')
	case '+':
		val = append(val, '\n')
		for range trailing {
			val = append(val, '\n')
		}
	}
	n.Value = string(val)
	// the blank lines after the block belong to it: contentLine finds the next line as it would
	return n, true
}

// flow reads a flow sequence or mapping on one line, of plain or quoted scalars and flow
// collections.
func (r *fastReader) flow(depth int) *yaml.Node {
	if depth > r.maxDepth {
		return nil
	}
	open := r.src[r.pos]
	var n *yaml.Node
	closing := byte(']')
	if open == '[' {
		n = r.node(yaml.SequenceNode, "!!seq", "")
	} else {
		n = r.node(yaml.MappingNode, "!!map", "")
		closing = '}'
	}
	n.Style = yaml.FlowStyle
	r.pos++
	first := true
	mark := len(r.stack)
	for {
		r.spaces()
		if r.pos == len(r.src) {
			return nil
		}
		if r.src[r.pos] == closing {
			r.pos++
			n.Content = r.children(mark)
			return n
		}
		if !first {
			if r.src[r.pos] != ',' {
				return nil
			}
			r.pos++
			r.spaces()
			if r.pos == len(r.src) || r.src[r.pos] == closing {
				return nil // a trailing comma
			}
		}
		first = false
		item := r.flowItem(depth)
		if item == nil || r.over {
			return nil
		}
		if open == '[' {
			r.stack = append(r.stack, item)
			continue
		}
		if item.Kind != yaml.ScalarNode || r.pos == len(r.src) || r.src[r.pos] != ':' {
			return nil
		}
		r.pos++
		if r.pos == len(r.src) || r.src[r.pos] != ' ' {
			return nil
		}
		r.spaces()
		v := r.flowItem(depth)
		if v == nil {
			return nil
		}
		r.stack = append(r.stack, item, v)
	}
}

func (r *fastReader) spaces() {
	for r.pos < len(r.src) && r.src[r.pos] == ' ' {
		r.pos++
	}
}

// flowItem reads one member of a flow collection.
func (r *fastReader) flowItem(depth int) *yaml.Node {
	if r.pos == len(r.src) {
		return nil
	}
	switch r.src[r.pos] {
	case '[', '{':
		return r.flow(depth + 1)
	case '"', '\'':
		return r.quoted()
	}
	start := r.pos
	if !plainStart(r.src, r.pos) {
		return nil
	}
	end := start
	for r.pos < len(r.src) {
		c := r.src[r.pos]
		if c == ',' || c == ']' || c == '}' || c == '\n' || c == ':' {
			break
		}
		switch c {
		case '[', '{', '#', '?':
			return nil
		}
		if c != ' ' {
			end = r.pos + 1
		}
		r.pos++
	}
	if end == start {
		return nil
	}
	r.pos = end
	n := r.scalarNode(start, end)
	if n == nil {
		return nil
	}
	return n
}

// sequence reads a block sequence whose "-" are at column indent+1, the first one at the current
// position.
func (r *fastReader) sequence(indent, depth int) (*yaml.Node, bool) {
	s := r.node(yaml.SequenceNode, "!!seq", "")
	mark := len(r.stack)
	for {
		if !r.isSequenceEntry() || r.over {
			return nil, false
		}
		r.pos++
		r.spaces()
		head := r.takeHead()
		if r.pos < len(r.src) && r.src[r.pos] == '#' && head == "" && !r.leadComment(indent) {
			return nil, false
		}
		if r.pos == len(r.src) || r.src[r.pos] == '\n' || r.src[r.pos] == '#' || r.isSequenceEntry() {
			return nil, false // an entry on the lines below, an empty one, or a nested sequence
		}
		next := 0
		if r.startsKey() {
			m, ok := r.mapping(r.pos-r.bol, depth+1)
			if !ok {
				return nil, false
			}
			m.HeadComment = head
			r.stack = append(r.stack, m)
			// the mapping stopped at the first line indented less than its keys, or at the end
			next = r.pos - r.bol
			if r.pos >= len(r.src) {
				next = -1
			}
		} else {
			v, ok := r.inline(indent, depth)
			if !ok {
				return nil, false
			}
			v.HeadComment = head
			r.stack = append(r.stack, v)
			if next, ok = r.contentLine(); !ok {
				return nil, false
			}
		}
		switch {
		case next < indent:
			s.Content = r.children(mark)
			return s, true
		case next > indent:
			return nil, false
		}
		if !r.isSequenceEntry() {
			s.Content = r.children(mark)
			return s, true // the next key of the mapping the sequence is the value of, or "---"
		}
	}
}

// leadComment reads a comment that follows an entry's "- " (at the current position), in the one
// shape taken here: the entry is a block mapping on the lines below, at two columns past the "-"
// (at column indent+1), right below the comment or below more comment lines at its column.
// yaml.v3 gives the comment lines to the mapping's first key as its head comment, and writes a
// first key's head comment so (a resource's head comment, in a ResourceList); the reader leaves
// that to takeHead. False for anything else.
func (r *fastReader) leadComment(indent int) bool {
	end := bytes.IndexByte(r.src[r.pos:], '\n')
	if end < 0 {
		return false // a comment on the last line
	}
	lead := r.textOf(r.pos, r.pos+end)
	if c := lead[len(lead)-1]; c == ' ' || c == '\t' || c == '\r' {
		return false
	}
	r.pos += end + 1
	r.line++
	r.bol = r.pos
	below := r.line
	next, ok := r.contentLine()
	if !ok || next != indent+2 || !r.startsKey() {
		return false
	}
	comments := 0
	if r.head != "" {
		comments = strings.Count(r.head, "\n") + 1
	}
	if r.line-below != comments {
		return false // a blank line (spaces alone, too) below the comment or among the lines below it
	}
	if r.head == "" {
		r.head, r.headAt = lead, r.pos
	} else {
		r.head = lead + "\n" + r.head
	}
	return true
}

// startsKey reports whether the current line continues with "key:" (a plain key).
func (r *fastReader) startsKey() bool {
	if !plainStart(r.src, r.pos) {
		return false
	}
	for i := r.pos; i < len(r.src); i++ {
		switch r.src[i] {
		case '\n':
			return false
		case ':':
			if i+1 == len(r.src) || r.src[i+1] == ' ' || r.src[i+1] == '\n' {
				return true
			}
		case '#':
			if r.src[i-1] == ' ' {
				return false
			}
		}
	}
	return false
}
