package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	yaml2 "go.yaml.in/yaml/v2"
	"go.yaml.in/yaml/v3"

	"github.com/krm-catalog/krm-catalog/internal/yaml11"
	"github.com/krm-catalog/krm-catalog/schemas"
)

// Portable reports every construct of the document on which YAML readers disagree, as errors
// with their line and column. A published document is read by the service (YAML 1.2, yaml.v3) and
// by whoever fetches it: kustomize and Kubernetes tools read YAML 1.1 (yaml.v2 behind
// sigs.k8s.io/yaml). When they could read different values, the service could check one document
// and its users run another, so such a document is not publishable. The rule:
//
//   - no merge keys (<<), anchors (&a) or aliases (*a): readers expand merges differently (which
//     key wins, whether merging is done at all), and the rest serve merges;
//   - no explicit tags (!!str, !custom): readers resolve tags differently;
//   - every key a string, and no duplicate key (Decode reports duplicates);
//   - every plain (unquoted) scalar reads as the same value in YAML 1.1 as in YAML 1.2: `on`,
//     `yes`, `n` are strings in 1.2 and booleans in 1.1; quote them.
//
// JSON documents meet the rule by construction.
func (d *Document) Portable() Findings {
	fs, _ := d.portable(context.Background())
	return fs
}

// portable is Portable stopped when ctx ends.
func (d *Document) portable(ctx context.Context) (Findings, error) {
	if d.root == nil {
		return nil, nil
	}
	p := portability{doc: d, ctx: ctx, seen: map[string]portableScalar{}}
	p.walk(d.root, "", 0)
	return p.out, p.err
}

type portability struct {
	doc *Document
	out Findings
	// ctx ends the walk; err is why it ended, and tick counts nodes between two looks at ctx
	ctx  context.Context
	err  error
	tick int
	// seen holds what yaml11Differs said of short plain scalars already asked about: a document
	// of a million "0" asks a YAML 1.1 parser once
	seen map[string]portableScalar
}

type portableScalar struct {
	v1 string
	ok bool
}

// maxSeenScalars bounds the memory of portability.seen.
const maxSeenScalars = 4096

// differs is yaml11Differs, remembered for short plain scalars of one tag.
func (p *portability) differs(n *yaml.Node) (string, bool) {
	if len(n.Value) > 32 {
		return yaml11Differs(n)
	}
	key := n.Tag + " " + n.Value
	if r, ok := p.seen[key]; ok {
		return r.v1, r.ok
	}
	v1, ok := yaml11Differs(n)
	if len(p.seen) < maxSeenScalars {
		p.seen[key] = portableScalar{v1, ok}
	}
	return v1, ok
}

func (p *portability) add(n *yaml.Node, pointer, format string, args ...any) {
	p.out = append(p.out, Finding{Severity: SeverityError, File: p.doc.File, Document: p.doc.Index, Pointer: pointer,
		Line: n.Line + p.doc.lineShift, Column: n.Column, Message: fmt.Sprintf(format, args...)})
}

func (p *portability) walk(n *yaml.Node, pointer string, depth int) {
	if depth > maxDepth || p.err != nil {
		return // Decode refused it already, or the walk was stopped
	}
	if p.tick++; p.tick >= 4096 {
		p.tick = 0
		if p.err = p.ctx.Err(); p.err != nil {
			return
		}
	}
	switch {
	case n.Kind == yaml.AliasNode:
		p.add(n, pointer, "alias *%s: YAML readers expand aliases and merges differently; write the value out", n.Value)
		return
	case n.Anchor != "":
		p.add(n, pointer, "anchor &%s: YAML readers expand aliases and merges differently; write values out instead", n.Anchor)
	}
	if n.Style&yaml.TaggedStyle != 0 {
		p.add(n, pointer, "explicit tag %s: YAML readers resolve tags differently; remove it (quote a string)", n.Tag)
	}
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if isMergeKey(k) {
				p.add(k, pointer, "merge key <<: YAML readers disagree on merges (YAML 1.2 has none); write the keys out")
				continue
			}
			child := pointer + "/" + schemas.EscapeToken(k.Value)
			switch {
			case k.Kind != yaml.ScalarNode:
				p.add(k, pointer, "a key must be a string")
				continue
			case k.Style&yaml.TaggedStyle == 0 && k.ShortTag() != "!!str":
				p.add(k, child, "key %s is %s, not a string, to YAML readers: quote it", k.Value, tagWord(k.ShortTag()))
			default:
				p.walk(k, child, depth+1)
			}
			p.walk(v, child, depth+1)
		}
	case yaml.SequenceNode:
		for i, item := range n.Content {
			p.walk(item, pointer+"/"+strconv.Itoa(i), depth+1)
		}
	case yaml.ScalarNode:
		if n.Style == 0 {
			if v1, ok := p.differs(n); ok {
				p.add(n, pointer, "%s reads as %s in YAML 1.1 (kustomize, Kubernetes tools) but as %s here: quote it", n.Value, v1, p.value(n))
			}
		}
	}
}

// value is what the service reads a scalar as, in JSON.
func (p *portability) value(n *yaml.Node) string {
	c := converter{}
	v, ok := c.scalar(n)
	if !ok {
		return strconv.Quote(n.Value)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// yaml11Differs reports whether a plain scalar reads as another value in YAML 1.1, and that value
// in JSON. Only scalars YAML 1.1 may resolve to something other than a string are asked: those
// that start like a number, null or a merge, and short words (the booleans are at most 5 letters).
// Of the words that start with a letter, YAML 1.1 resolves only its booleans and null (its
// numbers and timestamps start with a sign, a digit or a dot), and it reads true, false and null
// as YAML 1.2 does: only its other booleans can differ, and the rest need no parser.
func yaml11Differs(n *yaml.Node) (string, bool) {
	v := n.Value
	if v == "" || !(len(v) <= 5 || bytes.IndexByte([]byte("+-.0123456789~<"), v[0]) >= 0) {
		return "", false
	}
	if c := v[0] | 0x20; 'a' <= c && c <= 'z' && !yaml11.OnlyBool(v) {
		return "", false
	}
	return yaml11DiffersParsed(n)
}

// yaml11DiffersParsed is yaml11Differs asking a YAML 1.1 parser.
func yaml11DiffersParsed(n *yaml.Node) (string, bool) {
	v := n.Value
	var v1 any
	if err := yaml2.Unmarshal([]byte(v), &v1); err != nil {
		return "", false // not a scalar YAML 1.1 reads on its own; the document parses in both
	}
	c := converter{}
	v2, ok := c.scalar(n)
	if !ok {
		return "", false // Decode refused it already
	}
	a, errA := json.Marshal(normalize11(v1))
	b, errB := json.Marshal(v2)
	if errA != nil || errB != nil || bytes.Equal(a, b) {
		return "", false
	}
	return string(a), true
}

// normalize11 makes a yaml.v2 scalar comparable in JSON with the converter's values.
func normalize11(v any) any {
	switch x := v.(type) {
	case int:
		return int64(x)
	case uint64:
		return json.Number(strconv.FormatUint(x, 10))
	}
	return v
}

func tagWord(tag string) string {
	switch tag {
	case "!!int":
		return "an integer"
	case "!!float":
		return "a number"
	case "!!bool":
		return "a boolean"
	case "!!null":
		return "null"
	case "!!timestamp":
		return "a timestamp"
	}
	return tag
}
