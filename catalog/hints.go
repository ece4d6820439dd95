package catalog

import (
	"regexp"

	"github.com/krm-catalog/krm-catalog/internal/lazyre"
)

// hints explain unknown fields that are known mistakes, most of them copied from the KEP's own
// examples: fields put at the wrong level, or under an older or misspelt name.
var hints = []struct {
	at   func() *regexp.Regexp
	hint string
}{
	{lazyre.New(`^/spec(/krmFunctions/\d+)?/(runtime|schema|idempotent|usage|examples|license|conformWithSpecVersions)$`),
		"it belongs to each entry of versions"},
	{lazyre.New(`^/spec(/krmFunctions/\d+)?/kind$`), "write it under names (names: {kind: ...})"},
	{lazyre.New(`/runtime/container/requireFilesystem$`), "the field is requireStorageMount"},
	{lazyre.New(`/runtime/exec/platform$`), "the field is platforms"},
	{lazyre.New(`/runtime/(docker|image)$`), "write container: {image: ...}"},
}

// hintFor returns advice for an unknown field at pointer, or "".
func hintFor(pointer string) string {
	for _, h := range hints {
		if h.at().MatchString(pointer) {
			return h.hint
		}
	}
	return ""
}
