package fn

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// Editing a file a person wrote (a Kptfile's step, a function config's apiVersion, an image inside
// the config.kubernetes.io/function annotation) should change that value and nothing else: not the
// indentation of sequences, not blank lines, not a flow mapping, not the quoting of other values.
// Re-encoding the document keeps comments but not all of that, so EditScalars replaces the bytes of
// the edited scalars in place, and then proves the result: read again, it must be the document it
// was with the new values, every other node, comment and style unchanged.

// ErrNotEditable: a scalar cannot be replaced in place (a tag, an anchor, a folded or multi-line
// plain scalar), or the edit would change more than the scalar.
var ErrNotEditable = errors.New("cannot edit in place")

// ScalarEdit replaces the value of one scalar of a YAML stream.
type ScalarEdit struct {
	// Doc is the document of the stream, counting from 0 and passing over empty ones (only
	// comments, or "---" alone), as the package reader counts them.
	Doc int
	// Path leads from the document's root to the scalar: mapping keys, and sequence indices in
	// decimal.
	Path []string
	// Value is the new value, a string.
	Value string
	// Within makes the scalar at Path YAML text itself (the config.kubernetes.io/function
	// annotation, an inline resource of a Kustomization's transformers): the edit is made inside
	// that text, which is then written back in the scalar's own style. Value is then not used.
	Within *ScalarEdit
}

// DecodeDocuments reads the documents of a YAML stream with yaml.v3's nodes and positions (through
// the fast reader where it can), counted as ScalarEdit.Doc counts them: empty ones (only comments,
// or "---" alone) passed over.
func DecodeDocuments(data []byte) ([]*yaml.Node, error) {
	if FastPathsEnabled() {
		// the nodes of a small file, not the fast reader's block of 256: a tool reading thousands
		// of Kptfiles would allocate mostly unused nodes
		slab := make(nodeSlab, 2*bytes.Count(data, []byte{'\n'})+8)
		if docs, ok := readYAMLFastFrom(data, 1, &slab); ok {
			return docs, nil
		}
	}
	return decodeYAMLv3(data)
}

// maxEditDepth bounds how deep a Path or a chain of Within goes.
const maxEditDepth = 64

// EditScalars applies the edits to src and returns the new bytes; src is not changed. Only the
// bytes of the edited scalars change: a plain scalar stays plain unless the new value would read
// as something else (then it is double-quoted), a quoted one keeps its quotes, and a literal block
// keeps its header and indentation, only its changed lines rewritten. An edit to a value it
// already has changes nothing. The error wraps ErrNotEditable when a scalar cannot be edited so.
func EditScalars(src []byte, edits ...ScalarEdit) ([]byte, error) {
	return editScalars(src, edits, 0)
}

// splice replaces src[start:end].
type splice struct {
	start, end int
	text       string
}

func editScalars(src []byte, edits []ScalarEdit, depth int) ([]byte, error) {
	if depth > maxEditDepth {
		return nil, fmt.Errorf("%w: edits nested more than %d deep", ErrNotEditable, maxEditDepth)
	}
	docs, err := DecodeDocuments(src)
	if err != nil {
		return nil, err
	}
	lines := lineStarts(src)
	// the edits by the scalar they change, in the order first named: edits inside one scalar's text
	// are made together
	type target struct {
		n      *yaml.Node
		first  ScalarEdit // where it is
		flow   bool
		plain  []ScalarEdit
		within []ScalarEdit
	}
	var targets []*target
	byNode := map[*yaml.Node]*target{}
	for _, e := range edits {
		n, flow, err := locate(docs, e)
		if err != nil {
			return nil, err
		}
		t := byNode[n]
		if t == nil {
			t = &target{n: n, first: e, flow: flow}
			byNode[n] = t
			targets = append(targets, t)
		}
		if e.Within != nil {
			t.within = append(t.within, *e.Within)
		} else {
			t.plain = append(t.plain, e)
		}
	}
	var splices []splice
	var check []ScalarEdit // one edit per scalar, with its final value
	for _, t := range targets {
		e := t.first
		var value string
		switch {
		case len(t.plain) > 0 && len(t.within) > 0:
			return nil, fmt.Errorf("%w: %s is edited both as a value and as YAML", ErrNotEditable, pathString(e))
		case len(t.plain) > 0:
			value = t.plain[0].Value
			for _, o := range t.plain[1:] {
				if o.Value != value {
					return nil, fmt.Errorf("%w: %s is given two values", ErrNotEditable, pathString(e))
				}
			}
		default:
			inner, err := editScalars([]byte(t.n.Value), t.within, depth+1)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", t.n.Line, err)
			}
			value = string(inner)
		}
		e.Within, e.Value = nil, value
		check = append(check, e)
		if value == t.n.Value {
			continue
		}
		s, err := scalarSplices(src, lines, t.n, t.flow, value)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", pathString(e), err)
		}
		splices = append(splices, s...)
	}
	if len(splices) == 0 {
		return src, nil
	}
	sort.Slice(splices, func(a, b int) bool { return splices[a].start < splices[b].start })
	var out bytes.Buffer
	out.Grow(len(src) + 64)
	at := 0
	for _, s := range splices {
		if s.start < at {
			return nil, fmt.Errorf("%w: two edits overlap", ErrNotEditable)
		}
		out.Write(src[at:s.start])
		out.WriteString(s.text)
		at = s.end
	}
	out.Write(src[at:])
	if err := verifyEdits(docs, out.Bytes(), check); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

func pathString(e ScalarEdit) string {
	s := strconv.Itoa(e.Doc) + ":" + strings.Join(e.Path, ".")
	if e.Within != nil {
		s += " > " + strings.Join(e.Within.Path, ".")
	}
	return s
}

// locate finds the scalar an edit names, and whether it is inside a flow collection.
func locate(docs []*yaml.Node, e ScalarEdit) (*yaml.Node, bool, error) {
	n, flow, err := locateNode(docs, e)
	if err != nil {
		return nil, false, err
	}
	switch {
	case n.Kind != yaml.ScalarNode:
		return nil, false, fmt.Errorf("%w: %s is not a scalar", ErrNotEditable, pathString(e))
	case n.Anchor != "" || n.Style&yaml.TaggedStyle != 0:
		return nil, false, fmt.Errorf("%w: %s carries an anchor or a tag", ErrNotEditable, pathString(e))
	case n.ShortTag() != "!!str":
		return nil, false, fmt.Errorf("%w: %s is a %s, not a string", ErrNotEditable, pathString(e), n.ShortTag())
	}
	return n, flow, nil
}

// locateNode finds the node at an edit's path, and whether it is inside a flow collection.
func locateNode(docs []*yaml.Node, e ScalarEdit) (*yaml.Node, bool, error) {
	if e.Doc < 0 || e.Doc >= len(docs) {
		return nil, false, fmt.Errorf("%w: document %d: the stream has %d", ErrNotEditable, e.Doc, len(docs))
	}
	if len(e.Path) > maxEditDepth {
		return nil, false, fmt.Errorf("%w: a path of %d steps", ErrNotEditable, len(e.Path))
	}
	n := docs[e.Doc].Content[0]
	flow := false
	for i, key := range e.Path {
		flow = flow || n.Style&yaml.FlowStyle != 0
		var next *yaml.Node
		switch n.Kind {
		case yaml.MappingNode:
			for j := 0; j+1 < len(n.Content); j += 2 {
				if k := n.Content[j]; k.Kind == yaml.ScalarNode && k.Value == key {
					next = n.Content[j+1]
					break
				}
			}
		case yaml.SequenceNode:
			if idx, err := strconv.Atoi(key); err == nil && idx >= 0 && idx < len(n.Content) {
				next = n.Content[idx]
			}
		}
		if next == nil {
			return nil, false, fmt.Errorf("%w: %s: nothing at %s", ErrNotEditable, pathString(e), strings.Join(e.Path[:i+1], "."))
		}
		n = next
	}
	return n, flow, nil
}

// lineStarts are the offsets at which the lines of src begin.
func lineStarts(src []byte) []int {
	starts := []int{0}
	for i, c := range src {
		if c == '\n' {
			starts = append(starts, i+1)
		}
	}
	return starts
}

// lineEnd is the offset of the end of line l (0-based), before its line break.
func lineEnd(src []byte, lines []int, l int) int {
	end := len(src)
	if l+1 < len(lines) {
		end = lines[l+1] - 1
	}
	if end > lines[l] && src[end-1] == '\r' {
		end--
	}
	return end
}

// offsetOf turns yaml.v3's line and column (1-based, the column counted in characters) into an
// offset of src.
func offsetOf(src []byte, lines []int, line, column int) (int, bool) {
	if line < 1 || line > len(lines) {
		return 0, false
	}
	off := lines[line-1]
	end := lineEnd(src, lines, line-1)
	for c := 1; c < column; c++ {
		if off >= end {
			return 0, false
		}
		_, size := utf8.DecodeRune(src[off:end])
		off += size
	}
	return off, true
}

// scalarSplices replaces the scalar n of src with value, in n's style.
func scalarSplices(src []byte, lines []int, n *yaml.Node, flow bool, value string) ([]splice, error) {
	start, ok := offsetOf(src, lines, n.Line, n.Column)
	if !ok {
		return nil, fmt.Errorf("%w: no line %d column %d", ErrNotEditable, n.Line, n.Column)
	}
	switch {
	case n.Style&yaml.LiteralStyle != 0:
		return literalSplices(src, lines, n, start, value)
	case n.Style&yaml.FoldedStyle != 0:
		return nil, fmt.Errorf("%w: a folded block scalar (>) at line %d", ErrNotEditable, n.Line)
	case n.Style&yaml.DoubleQuotedStyle != 0:
		end, ok := quotedEnd(src, start, '"')
		if !ok {
			return nil, fmt.Errorf("%w: no closing quote for line %d", ErrNotEditable, n.Line)
		}
		return []splice{{start, end, doubleQuote(value)}}, nil
	case n.Style&yaml.SingleQuotedStyle != 0:
		end, ok := quotedEnd(src, start, '\'')
		if !ok {
			return nil, fmt.Errorf("%w: no closing quote for line %d", ErrNotEditable, n.Line)
		}
		if !printable(value) {
			return []splice{{start, end, doubleQuote(value)}}, nil
		}
		return []splice{{start, end, "'" + strings.ReplaceAll(value, "'", "''") + "'"}}, nil
	}
	// plain: one line, its text the value itself (a plain scalar continued on further lines is
	// folded, and its text is not its value)
	end := start + len(n.Value)
	if end > lineEnd(src, lines, n.Line-1) || string(src[start:end]) != n.Value {
		return nil, fmt.Errorf("%w: the plain scalar at line %d goes on over several lines", ErrNotEditable, n.Line)
	}
	return []splice{{start, end, plainOrQuoted(value, flow)}}, nil
}

// plainOrQuoted writes value plain when it reads back as the same string, double-quoted otherwise.
func plainOrQuoted(value string, flow bool) string {
	if value != "" && printable(value) && plainAllowed(value) && (!flow || plainInFlow(value)) &&
		resolvedTag(value) == "!!str" && !IsYAML11LookAlike(value) {
		return value
	}
	return doubleQuote(value)
}

// plainInFlow reports whether a plain scalar that plainAllowed accepts also reads whole inside a
// flow collection: no flow indicator, and no colon at its end (yaml.v3's writer is stricter, and
// would quote every image reference there).
func plainInFlow(v string) bool {
	return !strings.ContainsAny(v, ",[]{}") && !strings.HasSuffix(v, ":") && v[0] != '?'
}

// printable reports whether v is printable ASCII.
func printable(v string) bool {
	for i := 0; i < len(v); i++ {
		if v[i] < 0x20 || v[i] > 0x7e {
			return false
		}
	}
	return true
}

// doubleQuote writes v as a YAML double-quoted scalar on one line.
func doubleQuote(v string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range v {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f || r == utf8.RuneError:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// quotedEnd finds the end (after the closing quote) of the quoted scalar at start.
func quotedEnd(src []byte, start int, quote byte) (int, bool) {
	if start >= len(src) || src[start] != quote {
		return 0, false
	}
	for i := start + 1; i < len(src); i++ {
		switch {
		case quote == '"' && src[i] == '\\':
			i++
		case src[i] == quote:
			if quote == '\'' && i+1 < len(src) && src[i+1] == '\'' {
				i++
				continue
			}
			return i + 1, true
		}
	}
	return 0, false
}

// literalSplices rewrites the changed lines of a literal block scalar (|) whose header is at start.
// The block's content lines are found in src as its indentation followed by the value's lines;
// when old and new value have as many lines, only the lines that differ are replaced.
func literalSplices(src []byte, lines []int, n *yaml.Node, start int, value string) ([]splice, error) {
	if start >= len(src) || src[start] != '|' {
		return nil, fmt.Errorf("%w: no literal block header at line %d", ErrNotEditable, n.Line)
	}
	oldLines := strings.Split(strings.TrimSuffix(n.Value, "\n"), "\n")
	newLines := strings.Split(strings.TrimSuffix(value, "\n"), "\n")
	if strings.HasSuffix(n.Value, "\n") != strings.HasSuffix(value, "\n") || strings.HasSuffix(n.Value, "\n\n") || strings.HasSuffix(value, "\n\n") {
		return nil, fmt.Errorf("%w: the literal block at line %d would change how it ends", ErrNotEditable, n.Line)
	}
	first := n.Line // 0-based index of the first content line: the line after the header
	indent := ""
	found := false
	for j, l := range oldLines {
		if l == "" {
			continue
		}
		at := first + j
		if at >= len(lines) {
			break
		}
		text := string(src[lines[at]:lineEnd(src, lines, at)])
		if !strings.HasSuffix(text, l) || strings.Trim(text[:len(text)-len(l)], " ") != "" {
			break
		}
		indent, found = text[:len(text)-len(l)], true
		break
	}
	if !found || indent == "" {
		return nil, fmt.Errorf("%w: the literal block at line %d is not laid out as its value", ErrNotEditable, n.Line)
	}
	for j, l := range oldLines {
		at := first + j
		if at >= len(lines) {
			return nil, fmt.Errorf("%w: the literal block at line %d ends early", ErrNotEditable, n.Line)
		}
		text := string(src[lines[at]:lineEnd(src, lines, at)])
		if l == "" && strings.Trim(text, " ") != "" || l != "" && text != indent+l {
			return nil, fmt.Errorf("%w: the literal block at line %d is not laid out as its value", ErrNotEditable, n.Line)
		}
	}
	for _, l := range newLines {
		if strings.ContainsAny(l, "\r") {
			return nil, fmt.Errorf("%w: a carriage return in a literal block", ErrNotEditable)
		}
	}
	if len(newLines) == len(oldLines) {
		var out []splice
		for j := range oldLines {
			if oldLines[j] == newLines[j] {
				continue
			}
			at := first + j
			text := indent + newLines[j]
			if newLines[j] == "" {
				text = ""
			}
			out = append(out, splice{lines[at], lineEnd(src, lines, at), text})
		}
		return out, nil
	}
	var b strings.Builder
	for j, l := range newLines {
		if j > 0 {
			b.WriteByte('\n')
		}
		if l != "" {
			b.WriteString(indent + l)
		}
	}
	last := first + len(oldLines) - 1
	return []splice{{lines[first], lineEnd(src, lines, last), b.String()}}, nil
}

// verifyEdits reads the edited stream and compares it with the original one (want, its documents
// as read, which it changes), the edited values set: anything else that differs (a node, a
// comment, a style) means the splice went wrong, and nothing is returned.
func verifyEdits(want []*yaml.Node, out []byte, edits []ScalarEdit) error {
	// yaml.v3 itself, whichever reader read the original
	got, err := decodeYAMLv3(out)
	if err != nil {
		return fmt.Errorf("%w: the edited file does not read back: %v", ErrNotEditable, err)
	}
	edited := map[*yaml.Node]bool{}
	for _, e := range edits {
		n, _, err := locate(want, e)
		if err != nil {
			return err
		}
		n.Value = e.Value
		edited[n] = true
	}
	if len(got) != len(want) {
		return fmt.Errorf("%w: the edited file has %d documents, not %d", ErrNotEditable, len(got), len(want))
	}
	for i := range want {
		if where := sameTree(want[i], got[i], edited, 0); where != "" {
			return fmt.Errorf("%w: the edit would change %s", ErrNotEditable, where)
		}
	}
	return nil
}

// sameTree compares two trees, every field but positions; an edited node's style may differ. It
// returns where they differ, or "".
func sameTree(a, b *yaml.Node, edited map[*yaml.Node]bool, depth int) string {
	where := fmt.Sprintf("line %d", b.Line)
	switch {
	case depth > maxJSONDepth*4:
		return where + ": nested too deep to compare"
	case a.Kind != b.Kind || a.ShortTag() != b.ShortTag() || a.Value != b.Value || a.Anchor != b.Anchor:
		return where + ": a value"
	case !edited[a] && a.Style != b.Style:
		return where + ": a style"
	case a.HeadComment != b.HeadComment || a.LineComment != b.LineComment || a.FootComment != b.FootComment:
		return where + ": a comment"
	case len(a.Content) != len(b.Content):
		return where + ": a collection"
	}
	if a.Kind == yaml.AliasNode {
		return ""
	}
	for i := range a.Content {
		if w := sameTree(a.Content[i], b.Content[i], edited, depth+1); w != "" {
			return w
		}
	}
	return ""
}
