package yamlfast

import (
	"strings"

	"go.yaml.in/yaml/v3"
)

// ResolvedTag is the tag yaml.v3 gives v as a plain scalar. yaml.v3 only looks further than the
// first character when it is a sign, a digit, a dot, or the first letter of a boolean or null word;
// other strings are strings, decided here without its regular expressions. Of those starting with a
// digit, decimal integers and strings with a letter that no number or timestamp can hold (the
// quantities 500m and 256Mi, durations) are decided here too: they are most of a resource's values.
func ResolvedTag(v string) string {
	if v == "" {
		return "!!null"
	}
	if !strings.ContainsRune("+-0123456789yYnNtTfFoO~.", rune(v[0])) {
		return "!!str"
	}
	switch v[0] {
	case 'y', 'Y', 'n', 'N', 't', 'T', 'f', 'F', 'o', 'O':
		// yaml.v3 looks these up in its table of words and nothing else
		switch v {
		case "true", "True", "TRUE", "false", "False", "FALSE":
			return "!!bool"
		case "null", "Null", "NULL":
			return "!!null"
		}
		return "!!str"
	}
	if (v[0] == '-' || v[0] == '+') && len(v) > 1 && (v[1] == '-' || IsLetter(v[1])) {
		return "!!str" // a sign before neither a number nor .inf: --port=8080
	}
	if v[0] >= '0' && v[0] <= '9' {
		decimal := len(v) <= 18 && (v[0] != '0' || len(v) == 1)
		for i := 0; i < len(v); i++ {
			c := v[i]
			if c < '0' || c > '9' {
				decimal = false
			}
			if NonNumberLetter(c) {
				return "!!str"
			}
		}
		if decimal {
			return "!!int"
		}
	}
	return (&yaml.Node{Kind: yaml.ScalarNode, Value: v}).ShortTag()
}

// IsLetter reports an ASCII letter.
func IsLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// NonNumberLetter reports whether c is a letter that no number or timestamp holds, in yaml.v3's
// resolution or a YAML 1.1 parser's: not a hex digit, nor x, o, p (0x, 0o, hex floats), t, z
// (timestamps).
func NonNumberLetter(c byte) bool {
	return IsLetter(c) && !strings.ContainsRune("abcdefABCDEFxXoOpPtTzZ", rune(c))
}
