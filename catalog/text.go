package catalog

import (
	"fmt"
	"unicode"
)

// The rule for the text of tags and descriptions, which the website shows and search matches:
//
//   - no Unicode format characters (category Cf): every bidirectional control (U+202A–U+202E,
//     U+2066–U+2069, U+200E, U+200F, U+061C) is one, as are the zero-width characters; they make
//     text display other than it reads, or two texts look alike that differ;
//   - no control characters, but for line breaks and tabs in a description;
//   - a tag's letters from one script: "mutаtor" with a Cyrillic а is a lookalike of "mutator".
//     Descriptions may mix scripts (a name, a symbol); they are not identifiers.

// lookalikeScripts are the scripts a tag's letters are told apart by: those whose letters look
// like Latin ones, and the large scripts besides.
var lookalikeScripts = []struct {
	name  string
	table *unicode.RangeTable
}{
	{"Latin", unicode.Latin}, {"Cyrillic", unicode.Cyrillic}, {"Greek", unicode.Greek},
	{"Armenian", unicode.Armenian}, {"Cherokee", unicode.Cherokee}, {"Han", unicode.Han},
	{"Hiragana", unicode.Hiragana}, {"Katakana", unicode.Katakana}, {"Hangul", unicode.Hangul},
	{"Arabic", unicode.Arabic}, {"Hebrew", unicode.Hebrew}, {"Devanagari", unicode.Devanagari},
}

// checkText says what is wrong with a description or tag under the rule above, or "".
func checkText(s string, tag bool) string {
	script := ""
	for i, r := range s {
		switch {
		case unicode.Is(unicode.Cf, r):
			return fmt.Sprintf("has the invisible format character U+%04X at byte %d (bidirectional controls and zero-width characters are refused)", r, i)
		case unicode.IsControl(r) && (tag || r != '\n' && r != '\t' && r != '\r'):
			return fmt.Sprintf("has the control character U+%04X at byte %d", r, i)
		case tag && unicode.IsLetter(r):
			for _, sc := range lookalikeScripts {
				if !unicode.Is(sc.table, r) {
					continue
				}
				if script != "" && script != sc.name {
					return fmt.Sprintf("mixes %s and %s letters (%q at byte %d), as lookalikes do", script, sc.name, r, i)
				}
				script = sc.name
			}
		}
	}
	return ""
}
