package fn

import (
	"bytes"
	"fmt"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// InsertScalar adds the key Key with the string Value as the first entry of the mapping at
// e.Path (e.Value is the value; e.Within is not used), the way EditScalars edits: one line is
// added before the mapping's first key, at its indentation (in a flow mapping, "key: value, "
// before the first key), and the result is proved to be the document it was with that entry
// added, every other node, comment and style unchanged. A key the mapping has already is an
// error, as is an empty mapping (nothing to take the indentation from); both wrap ErrNotEditable.
func InsertScalar(src []byte, e ScalarEdit, key string) ([]byte, error) {
	docs, err := DecodeDocuments(src)
	if err != nil {
		return nil, err
	}
	m, flow, err := locateNode(docs, e)
	if err != nil {
		return nil, err
	}
	switch {
	case m.Kind != yaml.MappingNode:
		return nil, fmt.Errorf("%w: %s is not a mapping", ErrNotEditable, pathString(e))
	case len(m.Content) == 0:
		return nil, fmt.Errorf("%w: %s is an empty mapping", ErrNotEditable, pathString(e))
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return nil, fmt.Errorf("%w: %s has %s already", ErrNotEditable, pathString(e), key)
		}
	}
	first := m.Content[0]
	lines := lineStarts(src)
	at, ok := offsetOf(src, lines, first.Line, first.Column)
	if !ok {
		return nil, fmt.Errorf("%w: no line %d column %d", ErrNotEditable, first.Line, first.Column)
	}
	flow = flow || m.Style&yaml.FlowStyle != 0
	text := plainOrQuoted(key, flow) + ": " + plainOrQuoted(e.Value, flow)
	if flow {
		text += ", "
	} else {
		eol := "\n"
		if end := lineEnd(src, lines, first.Line-1); end < len(src) && src[end] == '\r' {
			eol = "\r\n"
		}
		text += eol + strings.Repeat(" ", first.Column-1)
	}
	var out bytes.Buffer
	out.Grow(len(src) + len(text))
	out.Write(src[:at])
	out.WriteString(text)
	out.Write(src[at:])

	// the proof: the original with the entry added is what the new bytes read as
	k := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}
	v := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: e.Value}
	m.Content = append([]*yaml.Node{k, v}, m.Content...)
	got, err := decodeYAMLv3(out.Bytes())
	if err != nil {
		return nil, fmt.Errorf("%w: the edited file does not read back: %v", ErrNotEditable, err)
	}
	if len(got) != len(docs) {
		return nil, fmt.Errorf("%w: the edited file has %d documents, not %d", ErrNotEditable, len(got), len(docs))
	}
	added := map[*yaml.Node]bool{k: true, v: true}
	for i := range docs {
		if where := sameTree(docs[i], got[i], added, 0); where != "" {
			return nil, fmt.Errorf("%w: adding %s to %s would change %s", ErrNotEditable, key, pathString(e), where)
		}
	}
	return out.Bytes(), nil
}
