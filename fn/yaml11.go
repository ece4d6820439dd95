package fn

import (
	"os"
	"regexp"
	"strings"
	"sync"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/internal/yaml11"
)

// YAML 1.2 (yaml.v3, kyaml) reads `enabled: yes` as the string "yes"; YAML 1.1 (sigs.k8s.io/yaml,
// hence kubectl and the API server's YAML path) reads it as the boolean true. A string written plain
// would therefore change meaning on its way to a cluster. yaml.v3's Marshal quotes such strings
// (isOldBool, isBase60Float), and kyaml quotes what a YAML 1.1 parser reads as another type
// (IsValueNonString); a node encoder writes a node's style as it is, so the strings a function adds
// or changes are given that quoting here, before any writer sees them. Strings a function left as
// they were keep the style they were read with, so untouched files keep their bytes.

// NoFastPathsEnv names the environment variable that, set to a non-empty value other than "0",
// turns every fast path of this package off: every document is then read and written by yaml.v3
// itself.
// Differential tests and the fuzz seed corpora run with and without it.
const NoFastPathsEnv = "KRM_CATALOG_NO_FAST_PATHS"

// FastPathsEnabled reports whether the fast YAML reader and writer may be used (see NoFastPathsEnv).
func FastPathsEnabled() bool {
	v := os.Getenv(NoFastPathsEnv)
	return v == "" || v == "0"
}

// base60Float is yaml.v3's pattern for YAML 1.1 sexagesimal numbers (12:30, 1:20:00.5), compiled
// on first use: most runs never meet a colon in a changed value, and every start would pay it.
var base60Float = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$`)
})

// IsYAML11LookAlike reports whether a string, written plain, would be read as something other than a
// string by a YAML 1.1 parser or by yaml.v3: the strings yaml.v3's Marshal writes quoted (y, Yes,
// NO, on, Off..., and base-60 numbers such as 12:30), those kyaml quotes (anything a YAML 1.1 parser
// reads as a non-string), and those yaml.v3 itself resolves to another type (true, 1, null, ~).
func IsYAML11LookAlike(v string) bool {
	if v == "" || !strings.ContainsRune("+-0123456789yYnNtTfFoO~.<=", rune(v[0])) {
		return false // neither parser gives such a plain scalar a type other than string
	}
	if yaml11.OnlyBool(v) {
		return true
	}
	if strings.IndexByte(v, ':') >= 0 && base60Float().MatchString(v) {
		return true
	}
	if resolvedTag(v) != "!!str" {
		return true
	}
	if plainWord(v) {
		return false
	}
	return yaml.IsValueNonString(v)
}

// plainWord reports whether a YAML 1.1 parser reads v, a string to yaml.v3 that is none of the
// words above, as a string too, decided without parsing it as yaml.IsValueNonString does (which
// costs a parser per value): v holds only letters, digits and . _ / -, and starts with a letter,
// with one or two signs followed by a letter, or with a digit while holding a letter that no
// number or timestamp holds (500m, 256Mi, 30s).
func plainWord(v string) bool {
	numberLetters := true
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case isLetter(c):
			numberLetters = numberLetters && !nonNumberLetter(c)
		case '0' <= c && c <= '9', c == '.', c == '_', c == '/', c == '-':
		default:
			return false
		}
	}
	switch c := v[0]; {
	case isLetter(c):
		return true
	case c == '-' || c == '+':
		// a letter after one or two signs: "---" alone is a document start, "- x" a sequence
		i := 1
		if len(v) > 2 && v[1] == '-' {
			i = 2
		}
		return len(v) > i && isLetter(v[i])
	case '0' <= c && c <= '9':
		return !numberLetters
	}
	return false
}

// quoteLookAlike gives a plain string scalar that is a YAML 1.1 look-alike the double-quoted style,
// as yaml.v3's Marshal writes it. A string that yaml.v3 reads as a string and its emitter cannot
// write plain (one that reads as a sequence or a document marker: "- x", "---") is left to the
// emitter, which quotes it (single quotes where it can), as it does in yaml.v3's Marshal.
func quoteLookAlike(n *yaml.Node) {
	if n.Kind != yaml.ScalarNode || n.Style&(yaml.TaggedStyle|yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		return
	}
	if n.ShortTag() == "!!str" && IsYAML11LookAlike(n.Value) && !(marshalPlain(n.Value) && emitterQuotes(n.Value)) {
		n.Style = yaml.DoubleQuotedStyle
	}
}

// marshalPlain reports whether yaml.v3's Marshal asks for v to be written plain: v reads as a
// string and is neither a YAML 1.1 boolean nor a base-60 number (its stringv).
func marshalPlain(v string) bool {
	return !strings.Contains(v, "\n") && resolvedTag(v) == "!!str" && !yaml11.OnlyBool(v) &&
		(strings.IndexByte(v, ':') < 0 || !base60Float().MatchString(v))
}

// emitterQuotes reports whether yaml.v3's emitter writes the string v quoted though asked for the
// plain style.
func emitterQuotes(v string) bool {
	var b strings.Builder
	enc := yaml.NewEncoder(&b)
	if err := enc.Encode(&yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v}); err != nil {
		return false
	}
	out := b.String()
	return strings.HasPrefix(out, "'") || strings.HasPrefix(out, "\"")
}

// QuoteLookAlikes quotes every plain string scalar of n (keys included) that is a YAML 1.1
// look-alike, in place. The pipeline applies it to what functions add or change; a writer of new
// content (a generator outside the pipeline) applies it to what it generates.
func QuoteLookAlikes(n *yaml.Node) { quoteNew(n, 0) }

func quoteNew(n *yaml.Node, depth int) {
	if n == nil || depth > maxJSONDepth {
		return
	}
	switch n.Kind {
	case yaml.ScalarNode:
		quoteLookAlike(n)
	case yaml.DocumentNode, yaml.SequenceNode, yaml.MappingNode:
		for _, c := range n.Content {
			quoteNew(c, depth+1)
		}
	}
}
