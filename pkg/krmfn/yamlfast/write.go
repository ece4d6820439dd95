package yamlfast

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Writing YAML with yaml.v3 costs about twice parsing it, and a run (or a function built on
// pkg/krmfn) writes every resource at least once. Append writes the common shape of Kubernetes
// resources directly: block mappings and sequences of printable-ASCII scalars, with the comments
// people put on keys and values. It produces exactly what yaml.v3 (two-space indent) would, which
// the differential tests and the fuzz targets hold it to, and reports ok=false for anything else
// (flow style, anchors, tags, multi-line or non-ASCII strings, foot comments...), which the caller
// then gives to yaml.v3 (EncodeV3).

type fastYAML struct {
	buf  []byte
	wide bool // sequences inside mappings indented ("wide"), rather than kyaml's compact style
	// partial lets yaml.v3 write a nested mapping the fast writer cannot (see v3Part), instead of
	// refusing the whole document: one ConfigMap with a script in a ResourceList of thousands
	partial bool
}

// Append appends one document: the fast writer's, with yaml.v3 writing the nested mappings it
// cannot write, each on its own (v3Part). ok is false when the document's top level needs yaml.v3.
func Append(dst []byte, n *yaml.Node, wide bool) ([]byte, bool) {
	return appendDocument(dst, n, wide, true)
}

// AppendFast is Append without yaml.v3 for parts: the fast writer alone, which the tests hold
// to yaml.v3 on its own.
func AppendFast(dst []byte, n *yaml.Node, wide bool) ([]byte, bool) {
	return appendDocument(dst, n, wide, false)
}

func appendDocument(dst []byte, n *yaml.Node, wide, partial bool) ([]byte, bool) {
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) != 1 || n.HeadComment != "" || n.LineComment != "" || n.FootComment != "" || n.Anchor != "" {
			return dst, false
		}
		n = n.Content[0]
	}
	if n.Kind != yaml.MappingNode || n.Style != 0 || n.Anchor != "" || n.HeadComment != "" || n.LineComment != "" || n.FootComment != "" || !plainTag(n, "!!map") {
		return dst, false
	}
	f := fastYAML{buf: dst, wide: wide, partial: partial}
	if len(n.Content) == 0 {
		return dst, false
	}
	if !f.mapping(n, 0, false) {
		return dst, false
	}
	return f.buf, true
}

func plainTag(n *yaml.Node, want string) bool {
	return n.Style&yaml.TaggedStyle == 0 && (n.Tag == "" || n.Tag == want)
}

func (f *fastYAML) indent(n int) {
	for range n {
		f.buf = append(f.buf, ' ')
	}
}

// mapping writes the pairs of a non-empty block mapping at indent. inItem is set when the first
// key follows a sequence item's "- " on the same line.
func (f *fastYAML) mapping(m *yaml.Node, indent int, inItem bool) bool {
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.Anchor != "" || k.FootComment != "" || !plainTag(k, "!!str") || len(k.Value) > 128 {
			return false
		}
		// an item's first key with a head comment: yaml.v3 writes the comment's first line after the
		// item's "- " and the key below it (a resource's head comment, in a ResourceList)
		lead := i == 0 && inItem
		if k.HeadComment != "" {
			if !f.commentFrom(k.HeadComment, indent, lead) {
				return false
			}
			lead = false
		}
		if !lead {
			f.indent(indent)
		}
		if !f.scalar(k, true) {
			return false
		}
		f.buf = append(f.buf, ':')
		if !f.value(k, v, indent) {
			return false
		}
	}
	return true
}

// value writes what follows "key:" on its line and below.
func (f *fastYAML) value(k, v *yaml.Node, indent int) bool {
	if v.Anchor != "" || v.HeadComment != "" || v.FootComment != "" {
		return false
	}
	switch v.Kind {
	case yaml.ScalarNode:
		if k.LineComment != "" {
			return false
		}
		f.buf = append(f.buf, ' ')
		at := len(f.buf)
		if !f.scalar(v, false) {
			return false
		}
		if len(f.buf) == at {
			// an empty plain scalar (null): yaml.v3 writes nothing after the colon
			if v.LineComment != "" {
				return false
			}
			f.buf = f.buf[:at-1]
		}
		return f.lineComment(v.LineComment)
	case yaml.MappingNode, yaml.SequenceNode:
		if v.Style == yaml.FlowStyle && len(v.Content) > 0 {
			if k.LineComment != "" {
				return false
			}
			f.buf = append(f.buf, ' ')
			if !f.flow(v, 0) {
				return false
			}
			return f.lineComment(v.LineComment)
		}
		if v.LineComment != "" || v.Style&^yaml.FlowStyle != 0 || v.Style != 0 && len(v.Content) > 0 {
			return false
		}
		if len(v.Content) == 0 {
			if k.LineComment != "" || !plainTag(v, "!!map") && !plainTag(v, "!!seq") {
				return false
			}
			if v.Kind == yaml.MappingNode {
				f.buf = append(f.buf, " {}\n"...)
			} else {
				f.buf = append(f.buf, " []\n"...)
			}
			return true
		}
		if !f.lineComment(k.LineComment) {
			return false
		}
		if v.Kind == yaml.MappingNode {
			return plainTag(v, "!!map") && f.block(v, indent+2, false)
		}
		seqIndent := indent
		if f.wide {
			seqIndent += 2
		}
		return plainTag(v, "!!seq") && f.sequence(v, seqIndent)
	}
	return false
}

// SizingItems is how many items of a long sequence (a ResourceList's) or stream are written before
// the output is grown to the size they promise for the rest.
const SizingItems = 8

// GrowFor grows buf once, when n items of total took written bytes, by what the other items
// promise and an eighth: appending alone would copy a large output several times as it doubles,
// and each copy lands on memory the process has not touched yet, which costs more than the copying.
func GrowFor(buf []byte, written, n, total int) []byte {
	need := written / n * (total - n)
	need += need / 8
	if cap(buf)-len(buf) < need {
		buf = slices.Grow(buf, need)
	}
	return buf
}

// block writes a non-empty block mapping, itself without comments, anchor or tag, at indent (its
// first key on the line of a sequence item's "- " when inItem). When the fast writer cannot, and
// the writer is partial, yaml.v3 writes it (v3Part).
func (f *fastYAML) block(m *yaml.Node, indent int, inItem bool) bool {
	mark := len(f.buf)
	if f.mapping(m, indent, inItem) {
		return true
	}
	if !f.partial {
		return false
	}
	f.buf = f.buf[:mark]
	return f.v3Part(m, indent, inItem)
}

// v3Part writes m with yaml.v3, as a document of its own, each line but empty ones indented by
// indent (but the first, when inItem). That is what yaml.v3 writes for m in place: its
// indentation, block scalars' included, is relative, and it never folds long lines. What could
// read otherwise is refused (v3Unsafe), and an output yaml.v3 ends with "..." or starts with "---".
func (f *fastYAML) v3Part(m *yaml.Node, indent int, inItem bool) bool {
	if v3Unsafe(m, 0) {
		return false
	}
	b, err := EncodeV3(m, f.wide)
	if err != nil || len(b) == 0 || b[len(b)-1] != '\n' || bytes.HasPrefix(b, []byte("---")) || bytes.HasSuffix(b, []byte("\n...\n")) {
		return false
	}
	for first := true; len(b) > 0; first = false {
		end := bytes.IndexByte(b, '\n') + 1
		if end > 1 && (!first || !inItem) {
			f.indent(indent)
		}
		f.buf = append(f.buf, b[:end]...)
		b = b[end:]
	}
	return true
}

// v3Unsafe reports whether yaml.v3 may write n differently on its own than within a document (or
// n nests too deep to look): n or a node below it has a comment, an anchor or an alias. yaml.v3
// places some comments by what comes before or after them (a key's line comment may move to a
// later line, as far as the next item), and anchors belong to the whole document. What is left
// to yaml.v3 here is strings: multi-line, non-ASCII, tagged.
func v3Unsafe(n *yaml.Node, depth int) bool {
	if n.HeadComment != "" || n.LineComment != "" || n.FootComment != "" || n.Anchor != "" || n.Kind == yaml.AliasNode || depth > 1000 {
		return true
	}
	for _, c := range n.Content {
		if v3Unsafe(c, depth+1) {
			return true
		}
	}
	return false
}

func (f *fastYAML) sequence(s *yaml.Node, indent int) bool {
	start := len(f.buf)
	for i, it := range s.Content {
		if i == SizingItems && len(s.Content) > 2*SizingItems {
			f.buf = GrowFor(f.buf, len(f.buf)-start, i, len(s.Content))
		}
		if it.Anchor != "" || it.FootComment != "" {
			return false
		}
		if it.HeadComment != "" && !f.comment(it.HeadComment, indent) {
			return false // an item's head comment goes above its "- " (a resource's, in a list)
		}
		f.indent(indent)
		f.buf = append(f.buf, "- "...)
		switch it.Kind {
		case yaml.ScalarNode:
			at := len(f.buf)
			if !f.scalar(it, false) {
				return false
			}
			if len(f.buf) == at {
				if it.LineComment != "" {
					return false
				}
				f.buf = f.buf[:at-1] // "-" alone for an empty plain scalar, as yaml.v3 writes it
			}
			if !f.lineComment(it.LineComment) {
				return false
			}
		case yaml.MappingNode:
			if it.LineComment != "" || !plainTag(it, "!!map") || it.Style&^yaml.FlowStyle != 0 || it.Style != 0 && len(it.Content) > 0 {
				return false
			}
			if len(it.Content) == 0 {
				f.buf = append(f.buf, "{}\n"...)
				continue
			}
			if !f.block(it, indent+2, true) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// flow writes a flow sequence or mapping ([a, b] or {k: v}) whose members are scalars or flow
// collections themselves, without comments.
func (f *fastYAML) flow(n *yaml.Node, depth int) bool {
	if depth > 32 || n.Anchor != "" || n.HeadComment != "" || n.FootComment != "" || (depth > 0 && n.LineComment != "") {
		return false
	}
	switch n.Kind {
	case yaml.ScalarNode:
		return f.flowScalar(n, false)
	case yaml.SequenceNode:
		if !plainTag(n, "!!seq") {
			return false
		}
		f.buf = append(f.buf, '[')
		for i, c := range n.Content {
			if i > 0 {
				f.buf = append(f.buf, ", "...)
			}
			if !f.flow(c, depth+1) {
				return false
			}
		}
		f.buf = append(f.buf, ']')
		return true
	case yaml.MappingNode:
		if !plainTag(n, "!!map") {
			return false
		}
		f.buf = append(f.buf, '{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			if i > 0 {
				f.buf = append(f.buf, ", "...)
			}
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode || k.Anchor != "" || k.HeadComment != "" || k.LineComment != "" || k.FootComment != "" || !plainTag(k, "!!str") || len(k.Value) > 128 {
				return false
			}
			if !f.flowScalar(k, true) {
				return false
			}
			f.buf = append(f.buf, ": "...)
			if !f.flow(n.Content[i+1], depth+1) {
				return false
			}
		}
		f.buf = append(f.buf, '}')
		return true
	}
	return false
}

func (f *fastYAML) flowScalar(n *yaml.Node, key bool) bool {
	if n.LineComment != "" || n.HeadComment != "" || n.FootComment != "" {
		return false
	}
	at := len(f.buf)
	ok := f.scalarIn(n, key, true)
	if ok && len(f.buf) == at {
		return false // an empty plain scalar in a flow collection: left to yaml.v3
	}
	return ok
}

func (f *fastYAML) lineComment(c string) bool {
	if c == "" {
		f.buf = append(f.buf, '\n')
		return true
	}
	if strings.ContainsAny(c, "\n\r") || !strings.HasPrefix(c, "#") {
		return false
	}
	f.buf = append(f.buf, ' ')
	f.buf = append(f.buf, c...)
	f.buf = append(f.buf, '\n')
	return true
}

// comment writes a head comment, a line at a time at indent. Blank lines within it, and lines that
// are not comments, are left to yaml.v3.
func (f *fastYAML) comment(c string, indent int) bool { return f.commentFrom(c, indent, false) }

// commentFrom is comment, its first line written where the output is (after "- ") when inLine.
func (f *fastYAML) commentFrom(c string, indent int, inLine bool) bool {
	for i, line := range strings.Split(c, "\n") {
		if !strings.HasPrefix(line, "#") || strings.ContainsRune(line, '\r') {
			return false
		}
		if i > 0 || !inLine {
			f.indent(indent)
		}
		f.buf = append(f.buf, line...)
		f.buf = append(f.buf, '\n')
	}
	return true
}

// scalar writes a scalar of block context in the style yaml.v3 would choose.
func (f *fastYAML) scalar(n *yaml.Node, key bool) bool { return f.scalarIn(n, key, false) }

// scalarIn writes a scalar in the style yaml.v3 would choose, in block or flow context.
func (f *fastYAML) scalarIn(n *yaml.Node, key, flow bool) bool {
	if n.Kind != yaml.ScalarNode || n.Style&(yaml.TaggedStyle|yaml.LiteralStyle|yaml.FoldedStyle|yaml.FlowStyle) != 0 {
		return false
	}
	v := n.Value
	for i := 0; i < len(v); i++ {
		if v[i] < 0x20 || v[i] > 0x7e {
			return false
		}
	}
	tag := n.Tag
	resolved := ResolvedTag(v)
	if tag == "" {
		tag = resolved
	}
	quoted := n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0
	switch {
	case tag == "!!str":
	case quoted || resolved != tag:
		// yaml.v3 would write an explicit tag
		return false
	case tag != "!!int" && tag != "!!float" && tag != "!!bool" && tag != "!!null":
		return false
	}
	switch {
	case n.Style&yaml.DoubleQuotedStyle != 0:
		f.doubleQuoted(v)
	case n.Style&yaml.SingleQuotedStyle != 0:
		f.singleQuoted(v)
	case tag == "!!str" && resolved != "!!str":
		f.doubleQuoted(v) // a string that would read back as another type
	case len(v) == 0 && (key || flow):
		f.singleQuoted(v)
	case !PlainAllowed(v) || flow && !flowPlainAllowed(v):
		if tag != "!!str" {
			return false
		}
		f.singleQuoted(v)
	default:
		f.buf = append(f.buf, v...)
	}
	return true
}

func (f *fastYAML) doubleQuoted(v string) {
	f.buf = append(f.buf, '"')
	for i := 0; i < len(v); i++ {
		if v[i] == '"' || v[i] == '\\' {
			f.buf = append(f.buf, '\\')
		}
		f.buf = append(f.buf, v[i])
	}
	f.buf = append(f.buf, '"')
}

func (f *fastYAML) singleQuoted(v string) {
	f.buf = append(f.buf, '\'')
	for i := 0; i < len(v); i++ {
		if v[i] == '\'' {
			f.buf = append(f.buf, '\'')
		}
		f.buf = append(f.buf, v[i])
	}
	f.buf = append(f.buf, '\'')
}

// PlainAllowed is yaml.v3's block_plain_allowed for printable ASCII without tabs or line breaks.
func PlainAllowed(v string) bool {
	if v == "" {
		return true
	}
	if v[0] == ' ' || v[len(v)-1] == ' ' {
		return false
	}
	if strings.HasPrefix(v, "---") || strings.HasPrefix(v, "...") {
		return false
	}
	blankAfter := func(i int) bool { return i+1 >= len(v) || v[i+1] == ' ' }
	switch v[0] {
	case '#', ',', '[', ']', '{', '}', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`':
		return false
	case '?', ':', '-':
		if blankAfter(0) {
			return false
		}
	}
	for i := 1; i < len(v); i++ {
		switch v[i] {
		case ':':
			if blankAfter(i) {
				return false
			}
		case '#':
			if v[i-1] == ' ' {
				return false
			}
		}
	}
	return true
}

// flowPlainAllowed is yaml.v3's flow_plain_allowed for printable ASCII without tabs or line breaks
// (PlainAllowed must hold too).
func flowPlainAllowed(v string) bool {
	if v == "" {
		return false
	}
	switch v[0] {
	case '?', ':':
		return false
	}
	for i := 1; i < len(v); i++ {
		switch v[i] {
		case ',', '?', '[', ']', '{', '}', ':':
			return false
		}
	}
	return true
}

// EncodeV3 writes n with yaml.v3 alone, as Append does: two-space indentation, and sequences
// inside mappings indented (wide) or not (kyaml's compact style).
func EncodeV3(n *yaml.Node, wide bool) ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if wide {
		enc.DefaultSeqIndent()
	} else {
		enc.CompactSeqIndent()
	}
	if err := enc.Encode(n); err != nil {
		return nil, fmt.Errorf("encode YAML: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("encode YAML: %w", err)
	}
	return buf.Bytes(), nil
}
