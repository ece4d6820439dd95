package fn

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// the hand-written parser DecodeJSONNode replaced, kept for the benchmark only (temporary)

var DecodeJSONNodeHand = decodeJSONNodeHand

// DecodeJSONNode parses one JSON value into a yaml.Node tree (mappings, sequences, scalars tagged
// !!str, !!int, !!float, !!bool or !!null, in plain style). Object member order is kept. Trailing
// data other than white space is an error.
func decodeJSONNodeHand(data []byte) (*yaml.Node, error) {
	p := handParser{data: data, strs: make(map[string]string, 256)}
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

// handParser builds nodes with few allocations: nodes come from slabs, children are gathered on a
// shared stack and copied once into an exactly-sized slice, and repeated strings (keys above all)
// are shared. Decoding a ResourceList is on the path of every function call.
type handParser struct {
	data  []byte
	pos   int
	slab  []yaml.Node
	stack []*yaml.Node
	strs  map[string]string
}

func (p *handParser) node(kind yaml.Kind, tag, value string) *yaml.Node {
	if len(p.slab) == 0 {
		p.slab = make([]yaml.Node, 256)
	}
	n := &p.slab[0]
	p.slab = p.slab[1:]
	n.Kind, n.Tag, n.Value = kind, tag, value
	return n
}

// intern returns b as a string, shared with earlier equal short strings.
func (p *handParser) intern(b []byte) string {
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
func (p *handParser) children(mark int) []*yaml.Node {
	c := make([]*yaml.Node, len(p.stack)-mark)
	copy(c, p.stack[mark:])
	p.stack = p.stack[:mark]
	return c
}

func (p *handParser) errorf(format string, args ...any) error {
	return fmt.Errorf("JSON at offset %d: %s", p.pos, fmt.Sprintf(format, args...))
}

func (p *handParser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *handParser) value(depth int) (*yaml.Node, error) {
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

func (p *handParser) literal(word, tag string) (*yaml.Node, error) {
	if !strings.HasPrefix(string(p.data[p.pos:min(len(p.data), p.pos+len(word))]), word) {
		return nil, p.errorf("invalid literal")
	}
	p.pos += len(word)
	return p.node(yaml.ScalarNode, tag, word), nil
}

func (p *handParser) object(depth int) (*yaml.Node, error) {
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

func (p *handParser) array(depth int) (*yaml.Node, error) {
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

func (p *handParser) number() (*yaml.Node, error) {
	start := p.pos
	tag, err := p.scanNumber()
	if err != nil {
		return nil, err
	}
	return p.node(yaml.ScalarNode, tag, p.intern(p.data[start:p.pos])), nil
}

// scanNumber moves past a JSON number and says whether it is an integer (!!int) or not (!!float).
func (p *handParser) scanNumber() (string, error) {
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
func (p *handParser) str() (string, error) {
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

func (p *handParser) hex4() (rune, bool) {
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
