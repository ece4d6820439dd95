package oci

import (
	"fmt"
	"slices"
	"strings"
)

// Layer media types of the four artifact kinds (docs/design.md §4). Each is also the manifest's
// artifactType.
const (
	MediaTypeCatalog    = "application/vnd.cncf.kubernetes.krm-func-catalog.layer.v1+yaml"
	MediaTypeDefinition = "application/vnd.cncf.kubernetes.krm-func-definition.layer.v1+yaml"
	MediaTypeStarlark   = "application/vnd.cncf.kubernetes.krm-func-runtime-starlark.layer.v1"
	MediaTypeExec       = "application/vnd.cncf.kubernetes.krm-func-runtime-exec.layer.v1"
)

// Kind is an artifact kind.
type Kind string

// Artifact kinds.
const (
	KindCatalog    Kind = "catalog"
	KindDefinition Kind = "definition"
	KindStarlark   Kind = "starlark"
	KindExec       Kind = "exec"
)

// Kinds lists every artifact kind, in the order of docs/design.md §4.
var kinds = []Kind{KindCatalog, KindDefinition, KindStarlark, KindExec}

// MediaType returns the layer media type (and manifest artifactType) of the kind.
func (k Kind) MediaType() string {
	switch k {
	case KindCatalog:
		return MediaTypeCatalog
	case KindDefinition:
		return MediaTypeDefinition
	case KindStarlark:
		return MediaTypeStarlark
	case KindExec:
		return MediaTypeExec
	}
	return ""
}

// ParseKind parses "catalog", "definition", "starlark" or "exec".
func ParseKind(s string) (Kind, error) {
	k := Kind(s)
	if !slices.Contains(kinds, k) {
		names := make([]string, len(kinds))
		for i, k := range kinds {
			names[i] = string(k)
		}
		return "", fmt.Errorf("unknown artifact type %q: expected one of %s", s, strings.Join(names, ", "))
	}
	return k, nil
}

// KindOf returns the kind whose media type is mediaType.
func KindOf(mediaType string) (Kind, bool) {
	for _, k := range kinds {
		if k.MediaType() == mediaType {
			return k, true
		}
	}
	return "", false
}
