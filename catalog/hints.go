package catalog

import "regexp"

// hints explain unknown fields that are known mistakes, most of them copied from the KEP's own
// examples: fields put at the wrong level, or under an older or misspelt name.
var hints = []struct {
	at   *regexp.Regexp
	hint string
}{
	{regexp.MustCompile(`^/spec(/krmFunctions/\d+)?/(runtime|schema|idempotent|usage|examples|license|conformWithSpecVersions)$`),
		"it belongs to each entry of versions"},
	{regexp.MustCompile(`^/spec(/krmFunctions/\d+)?/kind$`), "write it under names (names: {kind: ...})"},
	{regexp.MustCompile(`/runtime/container/requireFilesystem$`), "the field is requireStorageMount"},
	{regexp.MustCompile(`/runtime/exec/platform$`), "the field is platforms"},
	{regexp.MustCompile(`/runtime/(docker|image)$`), "write container: {image: ...}"},
}

// hintFor returns advice for an unknown field at pointer, or "".
func hintFor(pointer string) string {
	for _, h := range hints {
		if h.at.MatchString(pointer) {
			return h.hint
		}
	}
	return ""
}
