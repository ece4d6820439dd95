package fn

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// JSON is the wire format the runner prefers (DESIGN §9): parsing and writing YAML dominates the
// cost of a function call, and going through yaml.v3 for JSON would pay that cost again. These two
// functions convert between JSON text and yaml.Node trees directly, keeping the order of fields.

// maxJSONDepth bounds nesting so that hostile input cannot exhaust the stack.
const maxJSONDepth = 1000

// DecodeJSONNode parses one JSON value into a yaml.Node tree (mappings, sequences, scalars tagged
// !!str, !!int, !!float, !!bool or !!null, in plain style). Object member order is kept. Trailing
// data other than white space is an error.
func DecodeJSONNode(data []byte) (*yaml.Node, error) {
	p := jsonParser{data: data, strs: make(map[string]string, 256)}
	p.skipSpace()
	n, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.pos != len(p.data) {
		return nil, p.errorf("unexpected %q after the JSON value", p.data[p.pos])
	}
	return n, nil
}

// jsonParser builds nodes with few allocations: nodes come from slabs, children are gathered on a
// shared stack and copied once into an exactly-sized slice, and repeated strings (keys above all)
// are shared. Decoding a ResourceList is on the path of every function call.
type jsonParser struct {
	data  []byte
	pos   int
	slab  []yaml.Node
	stack []*yaml.Node
	strs  map[string]string
}

func (p *jsonParser) node(kind yaml.Kind, tag, value string) *yaml.Node {
	if len(p.slab) == 0 {
		p.slab = make([]yaml.Node, 256)
	}
	n := &p.slab[0]
	p.slab = p.slab[1:]
	n.Kind, n.Tag, n.Value = kind, tag, value
	return n
}

// intern returns b as a string, shared with earlier equal short strings.
func (p *jsonParser) intern(b []byte) string {
	if len(b) > 64 {
		return string(b)
	}
	if s, ok := p.strs[string(b)]; ok {
		return s
	}
	s := string(b)
	p.strs[s] = s
	return s
}

// children moves the nodes pushed since mark off the stack into a slice of their own.
func (p *jsonParser) children(mark int) []*yaml.Node {
	c := make([]*yaml.Node, len(p.stack)-mark)
	copy(c, p.stack[mark:])
	p.stack = p.stack[:mark]
	return c
}

func (p *jsonParser) errorf(format string, args ...any) error {
	return fmt.Errorf("JSON at offset %d: %s", p.pos, fmt.Sprintf(format, args...))
}

func (p *jsonParser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *jsonParser) value(depth int) (*yaml.Node, error) {
	if depth > maxJSONDepth {
		return nil, p.errorf("nested more than %d levels deep", maxJSONDepth)
	}
	if p.pos >= len(p.data) {
		return nil, p.errorf("unexpected end of input")
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"':
		s, err := p.str()
		if err != nil {
			return nil, err
		}
		return p.node(yaml.ScalarNode, "!!str", s), nil
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	case c == 't':
		return p.literal("true", "!!bool")
	case c == 'f':
		return p.literal("false", "!!bool")
	case c == 'n':
		return p.literal("null", "!!null")
	default:
		return nil, p.errorf("unexpected %q", c)
	}
}

func (p *jsonParser) literal(word, tag string) (*yaml.Node, error) {
	if !strings.HasPrefix(string(p.data[p.pos:min(len(p.data), p.pos+len(word))]), word) {
		return nil, p.errorf("invalid literal")
	}
	p.pos += len(word)
	return p.node(yaml.ScalarNode, tag, word), nil
}

func (p *jsonParser) object(depth int) (*yaml.Node, error) {
	p.pos++ // {
	n := p.node(yaml.MappingNode, "!!map", "")
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return n, nil
	}
	mark := len(p.stack)
	for {
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return nil, p.errorf("expected a string key")
		}
		k, err := p.str()
		if err != nil {
			return nil, err
		}
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return nil, p.errorf("expected ':' after an object key")
		}
		p.pos++
		p.skipSpace()
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		p.stack = append(p.stack, p.node(yaml.ScalarNode, "!!str", k), v)
		p.skipSpace()
		if p.pos >= len(p.data) {
			return nil, p.errorf("unexpected end of input in an object")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			n.Content = p.children(mark)
			return n, nil
		default:
			return nil, p.errorf("expected ',' or '}' in an object")
		}
	}
}

func (p *jsonParser) array(depth int) (*yaml.Node, error) {
	p.pos++ // [
	n := p.node(yaml.SequenceNode, "!!seq", "")
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return n, nil
	}
	mark := len(p.stack)
	for {
		p.skipSpace()
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		p.stack = append(p.stack, v)
		p.skipSpace()
		if p.pos >= len(p.data) {
			return nil, p.errorf("unexpected end of input in an array")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			n.Content = p.children(mark)
			return n, nil
		default:
			return nil, p.errorf("expected ',' or ']' in an array")
		}
	}
}

func (p *jsonParser) number() (*yaml.Node, error) {
	start := p.pos
	tag, err := p.scanNumber()
	if err != nil {
		return nil, err
	}
	return p.node(yaml.ScalarNode, tag, p.intern(p.data[start:p.pos])), nil
}

// scanNumber moves past a JSON number and says whether it is an integer (!!int) or not (!!float).
func (p *jsonParser) scanNumber() (string, error) {
	d := p.data
	i := p.pos
	if i < len(d) && d[i] == '-' {
		i++
	}
	digits := func() int {
		s := i
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
		return i - s
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case digits() == 0:
		p.pos = i
		return "", p.errorf("invalid number")
	}
	tag := "!!int"
	if i < len(d) && d[i] == '.' {
		i++
		tag = "!!float"
		if digits() == 0 {
			p.pos = i
			return "", p.errorf("invalid number: no digits after '.'")
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		tag = "!!float"
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if digits() == 0 {
			p.pos = i
			return "", p.errorf("invalid number: no digits in the exponent")
		}
	}
	p.pos = i
	return tag, nil
}

// str reads a JSON string. Invalid UTF-8 becomes U+FFFD, as encoding/json does: YAML output must be
// valid UTF-8.
func (p *jsonParser) str() (string, error) {
	p.pos++ // opening quote
	start := p.pos
	// fast path: no escapes, ASCII or valid UTF-8
	for p.pos < len(p.data) {
		c := p.data[p.pos]
		if c == '"' {
			s := p.data[start:p.pos]
			p.pos++
			if utf8.Valid(s) {
				return p.intern(s), nil
			}
			return validUTF8(string(s)), nil
		}
		if c == '\\' {
			break
		}
		if c < 0x20 {
			return "", p.errorf("control character in a string")
		}
		p.pos++
	}
	var b strings.Builder
	b.Write(p.data[start:p.pos])
	for {
		if p.pos >= len(p.data) {
			return "", p.errorf("unterminated string")
		}
		c := p.data[p.pos]
		switch {
		case c == '"':
			p.pos++
			return validUTF8(b.String()), nil
		case c < 0x20:
			return "", p.errorf("control character in a string")
		case c != '\\':
			b.WriteByte(c)
			p.pos++
			continue
		}
		p.pos++
		if p.pos >= len(p.data) {
			return "", p.errorf("unterminated escape")
		}
		e := p.data[p.pos]
		p.pos++
		switch e {
		case '"', '\\', '/':
			b.WriteByte(e)
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			r, ok := p.hex4()
			if !ok {
				return "", p.errorf("invalid \\u escape")
			}
			if utf16.IsSurrogate(r) {
				// a surrogate pair is two escapes; a lone surrogate becomes U+FFFD
				save := p.pos
				if p.pos+1 < len(p.data) && p.data[p.pos] == '\\' && p.data[p.pos+1] == 'u' {
					p.pos += 2
					if r2, ok := p.hex4(); ok {
						if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
							b.WriteRune(dec)
							continue
						}
					}
				}
				p.pos = save
				r = utf8.RuneError
			}
			b.WriteRune(r)
		default:
			return "", p.errorf("invalid escape \\%c", e)
		}
	}
}

// validUTF8 replaces each invalid byte by U+FFFD, as encoding/json does.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

func (p *jsonParser) hex4() (rune, bool) {
	if p.pos+4 > len(p.data) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(p.data[p.pos:p.pos+4]), 16, 32)
	if err != nil {
		return 0, false
	}
	p.pos += 4
	return rune(v), true
}

// AppendJSON appends the JSON form of a yaml.Node tree to dst, keeping the order of mapping keys.
// Plain scalars are typed as YAML resolves them. Aliases are followed; a tree that expands beyond
// maxAliasExpansion nodes through aliases is refused.
func AppendJSON(dst []byte, n *yaml.Node) ([]byte, error) {
	w := jsonWriter{budget: maxAliasExpansion}
	return w.node(dst, n, 0)
}

// maxAliasExpansion bounds how many nodes aliases may add when a tree is written as JSON (a YAML
// alias bomb would otherwise expand exponentially).
const maxAliasExpansion = 1 << 20

type jsonWriter struct {
	budget int
}

func (w *jsonWriter) node(dst []byte, n *yaml.Node, depth int) ([]byte, error) {
	if depth > maxJSONDepth {
		return nil, fmt.Errorf("YAML nested more than %d levels deep", maxJSONDepth)
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return append(dst, "null"...), nil
		}
		return w.node(dst, n.Content[0], depth)
	case yaml.AliasNode:
		if n.Alias == nil {
			return nil, fmt.Errorf("line %d: alias without anchor", n.Line)
		}
		w.budget--
		if w.budget < 0 {
			return nil, fmt.Errorf("YAML aliases expand beyond %d nodes", maxAliasExpansion)
		}
		return w.node(dst, n.Alias, depth+1)
	case yaml.MappingNode:
		if hasMergeKey(n) {
			return appendDecoded(dst, n)
		}
		dst = append(dst, '{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			if i > 0 {
				dst = append(dst, ',')
			}
			k := n.Content[i]
			for k.Kind == yaml.AliasNode && k.Alias != nil {
				k = k.Alias
			}
			if k.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("line %d: a mapping key that is not a scalar cannot be written as JSON", k.Line)
			}
			dst = appendJSONString(dst, k.Value)
			dst = append(dst, ':')
			var err error
			if dst, err = w.node(dst, n.Content[i+1], depth+1); err != nil {
				return nil, err
			}
		}
		return append(dst, '}'), nil
	case yaml.SequenceNode:
		dst = append(dst, '[')
		for i, c := range n.Content {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = w.node(dst, c, depth+1); err != nil {
				return nil, err
			}
		}
		return append(dst, ']'), nil
	case yaml.ScalarNode:
		return appendScalar(dst, n)
	case 0:
		return append(dst, "null"...), nil
	}
	return nil, fmt.Errorf("line %d: unknown YAML node kind %d", n.Line, n.Kind)
}

func hasMergeKey(n *yaml.Node) bool {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i]; k.Kind == yaml.ScalarNode && k.Value == "<<" && k.ShortTag() == "!!merge" {
			return true
		}
	}
	return false
}

// appendDecoded handles what JSON cannot express in order (merge keys) by decoding with yaml.v3;
// key order is lost for that mapping only.
func appendDecoded(dst []byte, n *yaml.Node) ([]byte, error) {
	var v any
	if err := n.Decode(&v); err != nil {
		return nil, err
	}
	b, err := json.Marshal(jsonable(v))
	if err != nil {
		return nil, err
	}
	return append(dst, b...), nil
}

// jsonable turns yaml.v3's map[string]any / map[any]any values into what encoding/json accepts.
func jsonable(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = jsonable(e)
		}
		return t
	case map[any]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[fmt.Sprint(k)] = jsonable(e)
		}
		return m
	case []any:
		for i, e := range t {
			t[i] = jsonable(e)
		}
		return t
	case float64:
		if math.IsInf(t, 0) || math.IsNaN(t) {
			return strconv.FormatFloat(t, 'g', -1, 64)
		}
	}
	return v
}

func appendScalar(dst []byte, n *yaml.Node) ([]byte, error) {
	switch n.ShortTag() {
	case "!!null":
		return append(dst, "null"...), nil
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return appendJSONString(dst, n.Value), nil
		}
		return strconv.AppendBool(dst, b), nil
	case "!!int":
		if isJSONNumber(n.Value) {
			return append(dst, n.Value...), nil
		}
		var i int64
		if err := n.Decode(&i); err == nil {
			return strconv.AppendInt(dst, i, 10), nil
		}
		var u uint64
		if err := n.Decode(&u); err == nil {
			return strconv.AppendUint(dst, u, 10), nil
		}
		return appendJSONString(dst, n.Value), nil
	case "!!float":
		if isJSONNumber(n.Value) {
			return append(dst, n.Value...), nil
		}
		var f float64
		if err := n.Decode(&f); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
			return strconv.AppendFloat(dst, f, 'g', -1, 64), nil
		}
		// JSON has no infinities or NaN: keep the YAML spelling as a string
		return appendJSONString(dst, n.Value), nil
	}
	return appendJSONString(dst, n.Value), nil
}

func isJSONNumber(s string) bool {
	p := jsonParser{data: []byte(s)}
	if len(s) == 0 || (s[0] != '-' && (s[0] < '0' || s[0] > '9')) {
		return false
	}
	_, err := p.scanNumber()
	return err == nil && p.pos == len(s)
}

const hexDigits = "0123456789abcdef"

// appendJSONString writes s as a JSON string. Like encoding/json it escapes <, > and & so that the
// output can be embedded anywhere, and U+2028/U+2029.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
