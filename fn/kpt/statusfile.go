package kpt

import (
	"bytes"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/fn"
)

// Writing the render status changes the root Kptfile's status and nothing else (docs/kpt.md). The
// package writer encodes the Kptfile whole, which keeps its comments, order and quoting but cannot
// keep every layout a person writes: yaml.v3's emitter quotes a plain scalar holding ':' in a flow
// mapping (`- {image: host:5000/fn:v1}`), and re-indents what it re-encodes. So when the render left
// the rest of the Kptfile as it was read, the file is written as read with only its status lines
// replaced (or added) by the encoder's, and the result is proved: read again, it must be the document
// the writer wrote.

// keepKptfileLayout rewrites the root Kptfile's change among changes, in place, as described above.
func keepKptfileLayout(pkg *fn.Package, changes []fn.FileChange) {
	read, ok := pkg.Read(KptfileName)
	if !ok {
		return
	}
	for i, c := range changes {
		if c.Path == KptfileName && !c.Delete {
			changes[i].Data = withStatusOf(read, c.Data)
		}
	}
}

// withStatusOf returns read with its top-level status replaced by that of written, when the two
// documents are the same but for their status; otherwise, or when the splice cannot be proved,
// written.
func withStatusOf(read, written []byte) []byte {
	was, wasOK := rootMapping(read)
	now, nowOK := rootMapping(written)
	if !wasOK || !nowOK || canonical(without(was, "status")) != canonical(without(now, "status")) {
		return written
	}
	start, end, ok := fieldLines(written, now, "status")
	if !ok {
		return written
	}
	block := written[start:end]
	var out []byte
	if s, e, ok := fieldLines(read, was, "status"); ok {
		out = append(append(append(out, read[:s]...), block...), read[e:]...)
	} else if keyOf(was, "status") == nil {
		out = append(out, read...)
		if len(out) > 0 && out[len(out)-1] != '\n' {
			out = append(out, '\n')
		}
		out = append(out, block...)
	} else {
		return written
	}
	got, ok := rootMapping(out)
	if !ok || canonical(got) != canonical(now) {
		return written
	}
	return out
}

// rootMapping is the block mapping of a stream's one document.
func rootMapping(data []byte) (*yaml.Node, bool) {
	docs, err := fn.DecodeDocuments(data)
	if err != nil || len(docs) != 1 {
		return nil, false
	}
	d := docs[0]
	if d.Kind != yaml.DocumentNode || len(d.Content) != 1 || d.Content[0].Kind != yaml.MappingNode || d.Content[0].Style&yaml.FlowStyle != 0 {
		return nil, false
	}
	return d, true
}

func keyOf(doc *yaml.Node, key string) *yaml.Node {
	m := doc.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i]
		}
	}
	return nil
}

// without is the document with the mapping's field key left out (a copy).
func without(doc *yaml.Node, key string) *yaml.Node {
	m := *doc.Content[0]
	m.Content = nil
	for i := 0; i+1 < len(doc.Content[0].Content); i += 2 {
		if k := doc.Content[0].Content[i]; k.Value != key {
			m.Content = append(m.Content, k, doc.Content[0].Content[i+1])
		}
	}
	d := *doc
	d.Content = []*yaml.Node{&m}
	return &d
}

// canonical is a document as yaml.v3 writes it: comments, order, styles and values, not layout.
func canonical(doc *yaml.Node) string {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return "\x00" + err.Error()
	}
	return b.String()
}

// fieldLines is the byte range of a top-level field's lines: from the start of its key's line to the
// end of the last line before the next line at column 1 (another field, a comment, a document
// marker), trailing blank lines left out.
func fieldLines(data []byte, doc *yaml.Node, key string) (int, int, bool) {
	k := keyOf(doc, key)
	if k == nil || k.Column != 1 || k.Line < 1 {
		return 0, 0, false
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	if k.Line > len(lines) {
		return 0, 0, false
	}
	start := 0
	for _, l := range lines[:k.Line-1] {
		start += len(l)
	}
	end, last := start+len(lines[k.Line-1]), start+len(lines[k.Line-1])
	for _, l := range lines[k.Line:] {
		if len(bytes.TrimSpace(l)) == 0 {
			end += len(l)
			continue
		}
		if l[0] != ' ' && l[0] != '\t' {
			break
		}
		end += len(l)
		last = end
	}
	if last < len(data) && data[last-1] != '\n' {
		return 0, 0, false
	}
	return start, last, true
}
