package catalog

import (
	"strings"
	"testing"
)

func TestCheckText(t *testing.T) {
	t.Parallel()
	tests := []struct {
		text string
		tag  bool
		want string // a fragment of the complaint; "" for none
	}{
		{"mutator", true, ""},
		{"k8s-labels", true, ""},
		{"ネットワーク", true, ""},
		{"Adds labels.\nSee the README.", false, ""},
		{"Sets α and Ω in Ελληνικά and English", false, ""},
		{"mutаtor", true, "mixes Latin and Cyrillic"},
		{"ορtion", true, "mixes Greek and Latin"},
		{"a\u202Eb", false, "U+202E"},
		{"a\u2066b", true, "U+2066"},
		{"a\u200Fb", false, "U+200F"},
		{"a\u200Bb", false, "U+200B"},
		{"a\ufeffb", true, "U+FEFF"},
		{"a\x1bb", false, "control character U+001B"},
		{"a\tb", true, "control character U+0009"},
	}
	for _, tc := range tests {
		got := checkText(tc.text, tc.tag)
		if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("checkText(%q, tag %v) = %q, want %q", tc.text, tc.tag, got, tc.want)
		}
	}
}
