package docbudget

import "math"

// Shape is what Scan finds in a YAML stream (JSON is YAML).
type Shape struct {
	// Nodes is an upper bound of the nodes a YAML 1.2 parser (yaml.v3) builds for the stream:
	// documents, keys, values, list items, aliases, and the empty values it makes up for a key or
	// an entry written without one. It is exact for block YAML and for JSON, give or take the
	// documents; a construct Scan does not follow to its end counts as if it held a value (a key
	// followed by an anchor or a tag alone).
	Nodes int
	// Depth is how many collections are open at once, at most.
	Depth int
	// Aliases is how many aliases (*name) the stream holds.
	Aliases int
}

// maxScanDepth is the nesting past which Scan stops counting: no reader accepts it, and the
// stack of open collections stays small.
const maxScanDepth = 1 << 12

// Scan reads a YAML stream the way yaml.v3's scanner splits it into tokens, without building
// them: quoted, plain and block scalars, comments, flow collections, and the indentation that
// opens and closes block collections. It allocates nothing in proportion to the input and takes
// a few nanoseconds a byte.
//
// Where the stream is not valid YAML, a parser stops at the first error, having built at most
// what Scan counts up to there; Scan goes on to the end, which only raises the bound. Past
// maxScanDepth levels it stops and reports Depth above it, and Nodes unbounded.
func Scan(data []byte) Shape { return scan(data, 0).Shape }

// scanned is a Shape and, when depth went past the level asked about, where it first did.
type scanned struct {
	Shape
	deepAt int
}

// scan is Scan noting the offset where more than over collections were first open (over > 0).
func scan(data []byte, over int) scanned {
	s := scanner{src: data, over: over, deepAt: -1}
	s.run()
	out := scanned{Shape: Shape{Nodes: s.nodes, Depth: s.maxDepth, Aliases: s.aliases}, deepAt: s.deepAt}
	if s.tooDeep {
		out.Nodes = math.MaxInt
	}
	return out
}

// collection kinds on the block stack
const (
	blockMap = iota
	blockSeq
	blockSeqIndentless // a sequence at its mapping's indentation, the value of one of its keys
)

type level struct {
	col  int
	kind int
}

// flowLevel is an open flow collection and what the entry being read in it holds so far.
type flowLevel struct {
	mapping bool // {...}; else [...]
	key     bool // a node before its ':'
	colon   bool // a ':'
	value   bool // a node after the ':'
	props   bool // an anchor or a tag not yet followed by a node
	pair    bool // the entry of a list is a one-pair mapping ([a: b])

	// entryMax is the deepest nesting reached in the entry, maxInside in the whole collection
	entryMax, maxInside int
}

type scanner struct {
	src []byte
	pos int
	bol int // where the current line begins

	// the column of offset cpos, on the line that begins at cbol: columns count characters
	cpos, ccol, cbol int

	block []level
	flow  []flowLevel
	// flowDepth is the nesting of the open flow collections, their one-pair mappings included;
	// lastFlowMax the deepest nesting reached in the last outermost one
	flowDepth, lastFlowMax int

	// plainOpen: the last token before the line break was a plain scalar that the next line
	// may continue
	plainOpen bool
	// pending: a key or an entry ended its line without a value; the next line holding
	// something says whether a collection below is the value or the value is empty
	pending    bool
	pendingCol int
	pendingKey bool
	// props: an anchor or a tag was read, at propsCol, and no node followed it yet
	props    bool
	propsCol int
	// flowKeyCol is the column of the outermost flow collection, a key when a ':' follows it;
	// flowKey is set while that ':' is read
	flowKeyCol int
	flowKey    bool

	nodes, maxDepth, aliases int
	tooDeep                  bool
	// over is the depth past which deepAt notes where the input first went
	over, deepAt int
}

func (s *scanner) node() { s.nodes++ }

func (s *scanner) inFlow() bool { return len(s.flow) > 0 }

// depth notes the nesting of what is open now; it returns it.
func (s *scanner) depth() int {
	d := len(s.block) + s.flowDepth
	s.reached(d)
	return d
}

func (s *scanner) reached(d int) {
	if d > s.maxDepth {
		s.maxDepth = d
		if s.over > 0 && d > s.over && s.deepAt < 0 {
			s.deepAt = s.pos
		}
		if d > maxScanDepth {
			s.tooDeep = true
		}
	}
}

// col is the column (0-based, in characters) of offset i, on the current line, at or after the
// last position asked about.
func (s *scanner) col(i int) int {
	if s.cbol != s.bol || s.cpos > i {
		s.cbol, s.cpos, s.ccol = s.bol, s.bol, 0
	}
	for ; s.cpos < i; s.cpos++ {
		if s.src[s.cpos]&0xc0 != 0x80 {
			s.ccol++
		}
	}
	return s.ccol
}

func (s *scanner) top() (level, bool) {
	if len(s.block) == 0 {
		return level{col: -1}, false
	}
	return s.block[len(s.block)-1], true
}

func (s *scanner) push(col, kind int) {
	s.block = append(s.block, level{col: col, kind: kind})
	s.node()
	s.depth()
}

// breakLen is the length of the line break at i, or 0: \n, \r\n, \r, and U+0085, U+2028 and
// U+2029, which yaml.v3 reads as line breaks too.
func (s *scanner) breakLen(i int) int {
	if i >= len(s.src) || !mayBreak[s.src[i]] {
		return 0
	}
	return s.breakAt(i)
}

// mayBreak marks the bytes a line break starts with.
var mayBreak = [256]bool{'\n': true, '\r': true, 0xc2: true, 0xe2: true}

func (s *scanner) breakAt(i int) int {
	switch s.src[i] {
	case '\n':
		return 1
	case '\r':
		if i+1 < len(s.src) && s.src[i+1] == '\n' {
			return 2
		}
		return 1
	case 0xc2:
		if i+1 < len(s.src) && s.src[i+1] == 0x85 {
			return 2
		}
	case 0xe2:
		if i+2 < len(s.src) && s.src[i+1] == 0x80 && (s.src[i+2] == 0xa8 || s.src[i+2] == 0xa9) {
			return 3
		}
	}
	return 0
}

func (s *scanner) isBlank(i int) bool {
	return i < len(s.src) && (s.src[i] == ' ' || s.src[i] == '\t')
}

// isBlankz: a blank, a line break or the end of the input.
func (s *scanner) isBlankz(i int) bool {
	return i >= len(s.src) || s.isBlank(i) || s.breakLen(i) > 0
}

// newline moves past the line break at pos.
func (s *scanner) newline() {
	s.pos += s.breakLen(s.pos)
	s.bol = s.pos
}

// restOfLineEmpty reports whether only blanks and a comment follow i on its line. It looks no
// further than the first character that is not a blank.
func (s *scanner) restOfLineEmpty(i int) bool {
	for s.isBlank(i) {
		i++
	}
	return i >= len(s.src) || s.src[i] == '#' || s.breakLen(i) > 0
}

func (s *scanner) skipToBreak() {
	for s.pos < len(s.src) && s.breakLen(s.pos) == 0 {
		s.pos++
	}
}

func (s *scanner) isDocumentMarker(i int) bool {
	if i != s.bol || i+3 > len(s.src) {
		return false
	}
	m := s.src[i : i+3]
	return (string(m) == "---" || string(m) == "...") && s.isBlankz(i+3)
}

func (s *scanner) run() {
	if len(s.src) >= 3 && s.src[0] == 0xef && s.src[1] == 0xbb && s.src[2] == 0xbf {
		s.pos, s.bol = 3, 3
	}
	s.nodes += 2 // the first document, and the empty value an empty document is
	for s.pos < len(s.src) && !s.tooDeep {
		s.line()
	}
	s.endPending()
	if s.props {
		s.node()
	}
}

// line reads from pos, at the start of a line, to the start of the next line (or further, for
// the constructs that span lines).
func (s *scanner) line() {
	start := s.pos
	for s.pos < len(s.src) && s.src[s.pos] == ' ' {
		s.pos++
	}
	if s.pos == len(s.src) || s.breakLen(s.pos) > 0 {
		s.newline() // a blank line: it may be inside a plain scalar, and resolves nothing
		return
	}
	c := s.src[s.pos]
	indent := s.pos - start
	if s.isDocumentMarker(start) {
		s.endPending()
		if s.props {
			s.node()
			s.props = false
		}
		s.block, s.flow, s.flowDepth, s.plainOpen = s.block[:0], s.flow[:0], 0, false
		s.pos = start + 3
		if s.src[start] == '.' {
			s.skipToBreak()
			s.newline()
			return
		}
		s.nodes += 2 // a new document, and the empty value it may be
		s.tokens()
		return
	}
	if c == '#' {
		// a comment line ends a plain scalar
		s.plainOpen = false
		s.skipToBreak()
		s.newline()
		return
	}
	if s.plainOpen {
		s.plainOpen = false
		t, _ := s.top()
		if s.inFlow() || indent > t.col {
			// the line continues the plain scalar, to its end on this line
			if s.plain() {
				s.severalLines()
			}
			if s.pos >= len(s.src) || s.plainOpen {
				return
			}
			s.tokens()
			return
		}
	}
	if c == '%' && indent == 0 {
		s.skipToBreak() // a directive
		s.newline()
		return
	}
	if !s.inFlow() {
		for len(s.block) > 0 && s.block[len(s.block)-1].col > indent {
			s.block = s.block[:len(s.block)-1]
		}
		s.resolvePending(indent)
	}
	s.tokens()
}

// severalLines: a scalar of several lines ended at pos. It is no key (a key is on one line):
// a ':' after it is read as a value with an empty key, and the parser makes up an empty value
// for the scalar when it is in a flow mapping, counted here.
func (s *scanner) severalLines() {
	i := s.pos
	for s.isBlank(i) {
		i++
	}
	if i < len(s.src) && s.src[i] == ':' && (s.inFlow() || s.isBlankz(i+1)) {
		s.node()
	}
}

// resolvePending decides, on the next line holding something, whether the key or entry that
// ended a line without a value has a collection below it or an empty value.
func (s *scanner) resolvePending(indent int) {
	if !s.pending {
		return
	}
	s.pending = false
	switch {
	case indent > s.pendingCol:
		return // what follows, more indented, is the value
	case indent == s.pendingCol && s.pendingKey && s.src[s.pos] == '-' && s.isBlankz(s.pos+1):
		return // a sequence at the key's indentation is its value
	}
	s.node()
}

func (s *scanner) endPending() {
	if s.pending {
		s.pending = false
		s.node()
	}
}

// tokens reads the tokens of the rest of the line (and of the lines a token spans), up to and
// past the line break where the line ends.
func (s *scanner) tokens() {
	for !s.tooDeep {
		for s.isBlank(s.pos) {
			s.pos++
		}
		if s.pos >= len(s.src) {
			return
		}
		if s.breakLen(s.pos) > 0 {
			s.endOfLine()
			s.newline()
			return
		}
		c := s.src[s.pos]
		inFlow := s.inFlow()
		at := s.pos
		// columns matter to block collections only; a key starts with its properties (&anchor,
		// !tag)
		col, keyCol := 0, 0
		if !inFlow {
			col = s.col(at)
			keyCol = col
			if s.props {
				keyCol = s.propsCol
			}
		}
		switch {
		case c == '#':
			// a comment, wherever a token could start
			s.endOfLine()
			s.skipToBreak()
			s.newline()
			return
		case c == '[' || c == '{':
			s.flowOpen(c == '{', keyCol)
		case c == ']' || c == '}':
			if inFlow {
				s.flowClose()
			} else {
				s.pos++ // an error: the parser stops here
			}
		case c == ',':
			if inFlow {
				s.flowEntryEnd()
			}
			s.pos++
		case c == '-' && s.isBlankz(at+1):
			if !inFlow {
				s.blockEntry(col)
			}
			s.pos++
		case c == '?' && (inFlow || s.isBlankz(at+1)):
			s.explicitKey(col, inFlow)
			s.pos++
		case c == ':' && (inFlow || s.isBlankz(at+1)):
			// a ':' with no key before it: the key is empty, and has the properties read before
			// it, where it starts
			s.node()
			s.value(keyCol, inFlow, false)
		case c == '*':
			s.beforeNode(inFlow)
			s.node()
			s.aliases++
			s.skipAnchor()
			s.afterNode(keyCol, inFlow)
		case c == '&' || c == '!':
			if !s.props {
				s.propsCol = col
			}
			if c == '&' {
				s.skipAnchor()
			} else {
				s.skipTag()
			}
			s.props = true
			if inFlow {
				s.flow[len(s.flow)-1].props = true
			}
		case !inFlow && (c == '|' || c == '>'):
			s.beforeNode(inFlow)
			s.node()
			s.blockScalar()
			return
		case c == '\'' || c == '"':
			s.beforeNode(inFlow)
			s.node()
			s.quoted(c)
			if s.bol > at {
				s.severalLines()
				continue
			}
			s.afterNode(keyCol, inFlow)
		default:
			s.beforeNode(inFlow)
			s.node()
			if !s.plain() {
				return // the scalar went on to the line break; the next line may continue it
			}
			s.afterNode(keyCol, inFlow)
		}
	}
}

// beforeNode notes that a node starts: properties read before it are its own, and in a flow
// collection the entry has its key or its value.
func (s *scanner) beforeNode(inFlow bool) {
	s.props = false
	if inFlow {
		f := &s.flow[len(s.flow)-1]
		f.props = false
		if f.colon {
			f.value = true
		} else {
			f.key = true
		}
	}
}

// endOfLine: the line ends here. Properties with nothing after them in block context are an
// empty node's (or a collection's below; then counted once too often).
func (s *scanner) endOfLine() {
	if s.props && !s.inFlow() {
		s.props = false
		s.node()
	}
}

// afterNode: a node that started at col ended at pos. A ':' after it makes it a key.
func (s *scanner) afterNode(col int, inFlow bool) {
	i := s.pos
	for s.isBlank(i) {
		i++
	}
	if i >= len(s.src) || s.src[i] != ':' || !inFlow && !s.isBlankz(i+1) {
		return
	}
	s.pos = i
	s.value(col, inFlow, true)
}

// value reads the ':' at pos of a key that started at col (an empty key when hasKey is false).
func (s *scanner) value(col int, inFlow, hasKey bool) {
	s.pos++
	if inFlow {
		f := &s.flow[len(s.flow)-1]
		if !f.mapping && !f.colon && !f.pair {
			s.pairMapping(f) // [a: b] is a list of a one-pair mapping
		}
		f.colon = true
		if !hasKey {
			f.key = true // the empty key was counted
		}
		return
	}
	s.mappingAt(col)
	if s.flowKey {
		// the flow collection before the ':' is a key, inside the mapping
		s.reached(s.lastFlowMax + 1)
		s.flowKey = false
	}
	if s.restOfLineEmpty(s.pos) {
		s.pending, s.pendingCol, s.pendingKey = true, col, true
	}
}

// mappingAt opens a block mapping whose keys are at col, unless it is open.
func (s *scanner) mappingAt(col int) {
	for {
		t, ok := s.top()
		switch {
		case ok && t.col == col && t.kind == blockMap:
			return
		case ok && t.col == col && t.kind == blockSeqIndentless:
			s.block = s.block[:len(s.block)-1] // a key at the mapping's indentation ends the sequence
			continue
		case ok && t.col > col:
			s.block = s.block[:len(s.block)-1]
			continue
		}
		s.push(col, blockMap)
		return
	}
}

// blockEntry reads a "- " at col.
func (s *scanner) blockEntry(col int) {
	t, ok := s.top()
	switch {
	case ok && t.col == col && (t.kind == blockSeq || t.kind == blockSeqIndentless):
	case ok && t.col == col && t.kind == blockMap:
		s.push(col, blockSeqIndentless)
	default:
		s.push(col, blockSeq)
	}
	if s.restOfLineEmpty(s.pos + 1) {
		s.pending, s.pendingCol, s.pendingKey = true, col, false
	}
}

// explicitKey reads a "? ": a key and a value, both of which may be empty.
func (s *scanner) explicitKey(col int, inFlow bool) {
	s.node()
	s.node()
	if inFlow {
		f := &s.flow[len(s.flow)-1]
		f.key = true
		if !f.mapping && !f.pair {
			s.pairMapping(f) // [? a: b]
		}
		return
	}
	s.mappingAt(col)
}

// pairMapping opens the one-pair mapping of the entry being read in the flow list f, which holds
// the entry's key, read or not.
func (s *scanner) pairMapping(f *flowLevel) {
	s.node()
	f.pair = true
	s.flowDepth++
	d := max(f.entryMax, len(s.block)+s.flowDepth-1) + 1
	s.reached(d)
	f.entryMax, f.maxInside = max(f.entryMax, d), max(f.maxInside, d)
}

func (s *scanner) flowOpen(mapping bool, col int) {
	inFlow := s.inFlow()
	s.beforeNode(inFlow)
	s.node()
	if !inFlow {
		s.flowKeyCol = col
	}
	s.flowDepth++
	d := len(s.block) + s.flowDepth
	s.flow = append(s.flow, flowLevel{mapping: mapping, maxInside: d})
	s.reached(d)
	s.pos++
}

func (s *scanner) flowClose() {
	s.flowEntryEnd()
	s.pos++
	inside := s.flow[len(s.flow)-1].maxInside
	s.flow = s.flow[:len(s.flow)-1]
	s.flowDepth--
	if s.inFlow() {
		f := &s.flow[len(s.flow)-1]
		f.entryMax = max(f.entryMax, inside)
		f.maxInside = max(f.maxInside, inside)
		s.afterNode(0, true)
		return
	}
	s.lastFlowMax, s.flowKey = inside, true
	s.afterNode(s.flowKeyCol, false)
	s.flowKey = false
}

// flowEntryEnd: the entry being read in the innermost flow collection ends (at a ',' or its
// close). What it lacks, the parser makes up as empty values.
func (s *scanner) flowEntryEnd() {
	f := &s.flow[len(s.flow)-1]
	switch {
	case f.colon && !f.value:
		s.node()
	case f.mapping && f.key && !f.colon:
		s.node()
	}
	if f.props && !f.key && !f.value {
		s.node()
	}
	s.props = false
	if f.pair {
		s.flowDepth--
	}
	*f = flowLevel{mapping: f.mapping, maxInside: f.maxInside}
}

// skipAnchor moves past an anchor or an alias: its indicator, then letters, digits, '_' and '-'.
func (s *scanner) skipAnchor() {
	for s.pos++; s.pos < len(s.src) && isAlpha(s.src[s.pos]); s.pos++ {
	}
}

// skipTag moves past a tag: "!<uri>", or the characters of a handle and a URI, which include
// ',', '[' and ']' (the tag ends only at a blank: yaml.v3 refuses anything else after it).
func (s *scanner) skipTag() {
	s.pos++
	verbatim := s.pos < len(s.src) && s.src[s.pos] == '<'
	if verbatim {
		s.pos++
	}
	for s.pos < len(s.src) && isTagChar(s.src[s.pos]) {
		s.pos++
	}
	if verbatim && s.pos < len(s.src) && s.src[s.pos] == '>' {
		s.pos++
	}
}

func isAlpha(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c == '_' || c == '-'
}

func isTagChar(c byte) bool {
	if isAlpha(c) {
		return true
	}
	switch c {
	case ';', '/', '?', ':', '@', '&', '=', '+', '$', ',', '.', '!', '~', '*', '\'', '(', ')', '[', ']', '%':
		return true
	}
	return false
}

func isFlowIndicator(c byte) bool {
	return c == ',' || c == '[' || c == ']' || c == '{' || c == '}'
}

// quoted moves past the quoted scalar that starts at pos, across lines.
func (s *scanner) quoted(q byte) {
	s.pos++
	for s.pos < len(s.src) {
		c := s.src[s.pos]
		switch {
		case q == '\'' && c == '\'':
			if s.pos+1 < len(s.src) && s.src[s.pos+1] == '\'' {
				s.pos += 2
				continue
			}
			s.pos++
			return
		case q == '"' && c == '"':
			s.pos++
			return
		case q == '"' && c == '\\':
			s.pos++
			if s.breakLen(s.pos) == 0 && s.pos < len(s.src) {
				s.pos++
				continue
			}
		}
		if n := s.breakLen(s.pos); n > 0 {
			s.pos += n
			s.bol = s.pos
			continue
		}
		s.pos++
	}
}

// plain moves past a plain scalar from pos to its end on this line: a ':' and a blank, a blank
// and a '#', in a flow collection one of ",?[]{}", or the line break. It reports false when the
// scalar went on to the line break, which it moves past: the next line may continue it.
func (s *scanner) plain() bool {
	inFlow := s.inFlow()
	stop := &plainStops
	if inFlow {
		stop = &flowPlainStops
	}
	for s.pos < len(s.src) {
		if !stop[s.src[s.pos]] {
			s.pos++ // what no rule below looks at
			continue
		}
		if s.breakLen(s.pos) > 0 {
			s.plainOpen = true
			s.newline()
			return false
		}
		c := s.src[s.pos]
		switch {
		case c == ':' && s.isBlankz(s.pos+1):
			return true
		case inFlow && (isFlowIndicator(c) || c == '?'):
			return true
		case c == '#' && s.pos > 0 && s.isBlank(s.pos-1):
			return true
		}
		s.pos++
	}
	return true
}

// plainStops mark the bytes plain() looks at: where a line break, ": " or " #" may start, and
// in a flow collection ",?[]{}".
var plainStops, flowPlainStops = func() (block, flow [256]bool) {
	for _, c := range []byte{'\n', '\r', 0xc2, 0xe2, ':', '#'} {
		block[c], flow[c] = true, true
	}
	for _, c := range []byte{',', '?', '[', ']', '{', '}'} {
		flow[c] = true
	}
	return block, flow
}()

// blockScalar moves past a block scalar (| or >) whose header is at pos, and past the lines of
// its content, which are indented more than the collection it is in.
func (s *scanner) blockScalar() {
	s.pos++
	explicit := 0
	for ; s.pos < len(s.src); s.pos++ {
		c := s.src[s.pos]
		if c >= '1' && c <= '9' {
			explicit = int(c - '0')
		} else if c != '+' && c != '-' {
			break
		}
	}
	s.skipToBreak() // blanks and a comment (anything else is an error: the parser stops)
	if s.pos >= len(s.src) {
		return
	}
	s.newline()
	t, _ := s.top()
	indent := 0
	if explicit > 0 {
		indent = max(t.col, 0) + explicit
		if t.col < 0 {
			indent = explicit
		}
	}
	// the lines before the first that holds more than spaces, and the indentation they set
	maxIndent := 0
	for {
		start := s.pos
		for s.pos < len(s.src) && s.src[s.pos] == ' ' && (indent == 0 || s.pos-start < indent) {
			s.pos++
		}
		maxIndent = max(maxIndent, s.pos-start)
		if s.breakLen(s.pos) == 0 {
			break
		}
		s.newline()
	}
	if indent == 0 {
		indent = max(maxIndent, t.col+1, 1)
	}
	for s.pos < len(s.src) {
		if s.pos-s.bol < indent {
			s.pos = s.bol // the scalar ended: this line is the next token's
			return
		}
		s.skipToBreak()
		if s.pos >= len(s.src) {
			return
		}
		s.newline()
		for {
			start := s.pos
			for s.pos < len(s.src) && s.src[s.pos] == ' ' && s.pos-start < indent {
				s.pos++
			}
			if s.breakLen(s.pos) == 0 {
				break
			}
			s.newline()
		}
	}
}
