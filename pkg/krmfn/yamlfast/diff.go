package yamlfast

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"go.yaml.in/yaml/v3"
)

// Diff says where two node trees differ in anything yaml.v3 records (kind, style, tag, value,
// anchor, comments, line and column, children), or "": what the differential tests hold the reader
// to. path names the roots in the answer.
func Diff(path string, a, b *yaml.Node) string {
	fa := fmt.Sprintf("kind=%v style=%v tag=%q value=%q anchor=%q head=%q line=%q foot=%q at %d:%d children=%d",
		a.Kind, a.Style, a.Tag, a.Value, a.Anchor, a.HeadComment, a.LineComment, a.FootComment, a.Line, a.Column, len(a.Content))
	fb := fmt.Sprintf("kind=%v style=%v tag=%q value=%q anchor=%q head=%q line=%q foot=%q at %d:%d children=%d",
		b.Kind, b.Style, b.Tag, b.Value, b.Anchor, b.HeadComment, b.LineComment, b.FootComment, b.Line, b.Column, len(b.Content))
	if fa != fb {
		return fmt.Sprintf("%s:\n  yaml.v3: %s\n  fast:    %s", path, fa, fb)
	}
	for i := range a.Content {
		if d := Diff(fmt.Sprintf("%s/%d", path, i), a.Content[i], b.Content[i]); d != "" {
			return d
		}
	}
	return ""
}

// ReadV3 is what Read stands for, through yaml.v3 alone: the documents of data, those that are
// empty (only comments, or "---" alone) left out.
func ReadV3(data []byte) ([]*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []*yaml.Node
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		if len(doc.Content) == 0 || (doc.Content[0].Kind == yaml.ScalarNode && doc.Content[0].ShortTag() == "!!null") {
			continue // empty document: only comments, or "---" alone
		}
		docs = append(docs, &doc)
	}
}
