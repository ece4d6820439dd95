package fn

import (
	"bytes"
	"io"

	"encoding/json"
	"errors"
	"fmt"
	"github.com/go-json-experiment/json/jsontext"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/internal/docbudget"
)

// JSON is the wire format the runner prefers: parsing and writing YAML dominates the
// cost of a function call, and going through yaml.v3 for JSON would pay that cost again. These two
// functions convert between JSON text and yaml.Node trees directly, keeping the order of fields.

// maxJSONDepth bounds nesting so that hostile input cannot exhaust the stack.
const maxJSONDepth = 1000

// DecodeJSONNode parses one JSON value into a yaml.Node tree (mappings, sequences, scalars tagged
// !!str, !!int, !!float, !!bool or !!null, in plain style). Object member order is kept, and so are
// duplicate names; invalid UTF-8 and lone surrogates become U+FFFD, as encoding/json reads them.
// Trailing data other than white space is an error.
func DecodeJSONNode(data []byte) (*yaml.Node, error) {
	return newJSONParser().decode(data)
}

func newJSONParser() *jsonParser { return &jsonParser{strs: make(map[string]string, 256)} }

// decode is DecodeJSONNode with p's slab, stack and shared strings, which a caller reading
// resources one by one keeps for the next.
func (p *jsonParser) decode(data []byte) (*yaml.Node, error) {
	// a bytes.Buffer is read in place, without a copy
	d := jsontext.NewDecoder(bytes.NewBuffer(data), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	n, err := p.value(d)
	if err == nil {
		err = p.err
	}
	if err != nil {
		return nil, jsonError(err)
	}
	if _, err := d.ReadToken(); err != io.EOF {
		if err == nil {
			return nil, fmt.Errorf("JSON at offset %d: unexpected data after the JSON value", d.InputOffset())
		}
		return nil, jsonError(err)
	}
	return n, nil
}

// jsonError says where the JSON is wrong, in the words the other decoders use.
func jsonError(err error) error {
	var se *jsontext.SyntacticError
	if !errors.As(err, &se) {
		return err // ours (the depth bound), or an I/O error a bytes.Buffer never returns
	}
	if se.JSONPointer != "" {
		return fmt.Errorf("JSON at offset %d (%s): %w", se.ByteOffset, se.JSONPointer, se.Err)
	}
	return fmt.Errorf("JSON at offset %d: %w", se.ByteOffset, se.Err)
}

// jsonParser builds nodes from jsontext's tokens with few allocations: nodes come from slabs,
// children are gathered on a shared stack and copied once into an exactly-sized slice, and repeated
// strings (keys above all) are shared. Decoding a ResourceList is on the path of every function
// call.
type jsonParser struct {
	slab    nodeSlab
	stack   []*yaml.Node
	strs    map[string]string
	unquote []byte
	// meter, when set, counts the nodes read; err is its error that stops the read
	meter *docbudget.Meter
	err   error
}

func (p *jsonParser) node(kind yaml.Kind, tag, value string) *yaml.Node {
	if p.meter != nil && p.err == nil {
		p.err = p.meter.Node(0)
	}
	n := p.slab.Next()
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

// value reads the next JSON value. jsontext checks the syntax; the depth bound is ours, lower than
// its own, so that hostile input cannot exhaust the stack of this recursion.
func (p *jsonParser) value(d *jsontext.Decoder) (*yaml.Node, error) {
	if d.StackDepth() > maxJSONDepth {
		return nil, fmt.Errorf("JSON at offset %d: nested more than %d levels deep", d.InputOffset(), maxJSONDepth)
	}
	if p.meter != nil {
		if lim := p.meter.Limits().Depth; lim > 0 && d.StackDepth() > lim {
			return nil, &docbudget.Error{Limit: "depth", Max: lim}
		}
	}
	var n *yaml.Node
	var end jsontext.Kind
	switch d.PeekKind() {
	case '{':
		n, end = p.node(yaml.MappingNode, "!!map", ""), '}'
	case '[':
		n, end = p.node(yaml.SequenceNode, "!!seq", ""), ']'
	default:
		return p.scalar(d)
	}
	if _, err := d.ReadToken(); err != nil {
		return nil, err
	}
	mark := len(p.stack)
	// an object's names are strings, read as scalars; jsontext refuses anything else there
	for d.PeekKind() != end {
		v, err := p.value(d)
		if err != nil {
			return nil, err
		}
		if p.err != nil {
			return nil, p.err
		}
		p.stack = append(p.stack, v)
	}
	if _, err := d.ReadToken(); err != nil {
		return nil, err
	}
	n.Content = p.children(mark)
	return n, nil
}

func (p *jsonParser) scalar(d *jsontext.Decoder) (*yaml.Node, error) {
	v, err := d.ReadValue()
	if err != nil {
		return nil, err
	}
	switch v.Kind() {
	case '"':
		raw := v[1 : len(v)-1]
		if bytes.IndexByte(raw, '\\') < 0 {
			if utf8.Valid(raw) {
				return p.node(yaml.ScalarNode, "!!str", p.intern(raw)), nil
			}
			return p.node(yaml.ScalarNode, "!!str", validUTF8(string(raw))), nil
		}
		// the only error left once jsontext has read the value is invalid UTF-8, replaced by U+FFFD
		p.unquote, _ = jsontext.AppendUnquote(p.unquote[:0], v)
		return p.node(yaml.ScalarNode, "!!str", string(p.unquote)), nil
	case '0':
		tag := "!!int"
		if bytes.ContainsAny(v, ".eE") {
			tag = "!!float"
		}
		return p.node(yaml.ScalarNode, tag, p.intern(v)), nil
	case 't':
		return p.node(yaml.ScalarNode, "!!bool", "true"), nil
	case 'f':
		return p.node(yaml.ScalarNode, "!!bool", "false"), nil
	default: // 'n': ReadValue returns nothing else
		return p.node(yaml.ScalarNode, "!!null", "null"), nil
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
		start := len(dst)
		for i, c := range n.Content {
			if i == sizingItems && len(n.Content) > 2*sizingItems {
				dst = growFor(dst, len(dst)-start, i, len(n.Content))
			}
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

// isJSONNumber reports whether a YAML number is spelled as JSON spells numbers (not 0x10, +1, 1.,
// .5, 1_000 or 007).
func isJSONNumber(s string) bool {
	// most are small integers: no need for a decoder
	digits := strings.TrimPrefix(s, "-")
	if len(digits) > 0 && len(digits) < 19 && (digits[0] != '0' || len(digits) == 1) && strings.Trim(digits, "0123456789") == "" {
		return true
	}
	v := jsontext.Value(s)
	return v.Kind() == '0' && v.IsValid()
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
