package catalog

import (
	"strings"
	"unicode"
)

// KebabName is the name KEP-2299 gives a transformer whose metadata.name is left out: its kind in
// kebab case, an acronym kept as one word (HTTPRoute → http-route, JavaApplication →
// java-application, S3Bucket → s3-bucket). Composition consolidation, validation and the website's
// snippets all default names with it, so that a name one of them writes is the one the others
// expect.
func KebabName(kind string) string {
	var b strings.Builder
	rs := []rune(kind)
	for i, r := range rs {
		// a word starts at an upper-case letter after a lower-case letter or digit, or at the last
		// upper-case letter of an acronym when a lower-case letter follows it
		if unicode.IsUpper(r) && i > 0 && (unicode.IsLower(rs[i-1]) || unicode.IsDigit(rs[i-1]) ||
			unicode.IsUpper(rs[i-1]) && i+1 < len(rs) && unicode.IsLower(rs[i+1])) {
			b.WriteByte('-')
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}
