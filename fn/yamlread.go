package fn

import (
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/pkg/krmfn/yamlfast"
)

// Reading YAML with yaml.v3 is most of what a run costs besides the function: every input is read
// once and every function's output once more. The fast reader (pkg/krmfn/yamlfast) reads the common
// shape of Kubernetes resources into the nodes yaml.v3 builds, several times faster, and declines
// the rest, which yaml.v3 then reads (docs/yaml.md). Its differential tests and fuzz targets are
// here, with the test data.

// nodeSlab hands out nodes from blocks (yamlfast.Slab), for the fast reader and the JSON parser.
type nodeSlab = yamlfast.Slab

// readYAMLFast returns the non-empty documents of data, as decodeYAMLDocuments would, or ok=false.
func readYAMLFast(data []byte) (docs []*yaml.Node, ok bool) {
	var slab nodeSlab
	return readYAMLFastFrom(data, 1, &slab)
}

// readYAMLFastFrom is readYAMLFast for data that starts on the given line of what it is part of,
// taking its nodes from slab and leaving there those it did not take: a caller reading resources
// one by one shares one slab between them.
func readYAMLFastFrom(data []byte, line int, slab *nodeSlab) (docs []*yaml.Node, ok bool) {
	docs, _, ok = readYAMLFastWithin(data, line, slab, -1)
	return docs, ok
}

// readYAMLFastWithin is readYAMLFastFrom reading at most budget nodes (unbounded when
// negative): it reports how many it read, and stops with ok=false past the budget.
func readYAMLFastWithin(data []byte, line int, slab *nodeSlab, budget int) (docs []*yaml.Node, nodes int, ok bool) {
	return yamlfast.Read(data, yamlfast.Options{Line: line, Budget: budget}, slab)
}
