package fn

import (
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/pkg/krmfn/yamlfast"
)

// The fast YAML writer is yamlfast's (pkg/krmfn/yamlfast), which the function SDK writes with too;
// these are its names in this package.

// appendYAML appends one document, yaml.v3 writing the nested mappings the fast writer cannot
// (yamlfast.Append); ok is false when the document's top level needs yaml.v3.
func appendYAML(dst []byte, n *yaml.Node, wide bool) ([]byte, bool) {
	return yamlfast.Append(dst, n, wide)
}

// appendFast is the fast writer alone (yamlfast.AppendFast), which the tests hold to yaml.v3 on
// its own.
func appendFast(dst []byte, n *yaml.Node, wide bool) ([]byte, bool) {
	return yamlfast.AppendFast(dst, n, wide)
}

// sizingItems is how many items of a long sequence or stream are written before the output is
// grown for the rest (yamlfast.SizingItems).
const sizingItems = yamlfast.SizingItems

// growFor grows buf once for the items still to write (yamlfast.GrowFor).
func growFor(buf []byte, written, n, total int) []byte {
	return yamlfast.GrowFor(buf, written, n, total)
}

// plainAllowed is yaml.v3's block_plain_allowed for printable ASCII (yamlfast.PlainAllowed).
func plainAllowed(v string) bool { return yamlfast.PlainAllowed(v) }

// resolvedTag is the tag yaml.v3 gives v as a plain scalar (yamlfast.ResolvedTag).
func resolvedTag(v string) string { return yamlfast.ResolvedTag(v) }

func isLetter(c byte) bool { return yamlfast.IsLetter(c) }

// nonNumberLetter reports whether c is a letter that no number or timestamp holds
// (yamlfast.NonNumberLetter).
func nonNumberLetter(c byte) bool { return yamlfast.NonNumberLetter(c) }
