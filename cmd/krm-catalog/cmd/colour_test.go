package cmd

import (
	"bytes"
	"testing"

	"github.com/krm-catalog/krm-catalog/catalog"
)

func TestColourOn(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		tty  bool
		env  map[string]string
		want bool
	}{
		{"terminal", true, nil, true},
		{"NO_COLOR", true, map[string]string{"NO_COLOR": "1"}, false},
		{"NO_COLOR empty counts as unset", true, map[string]string{"NO_COLOR": ""}, true},
		{"dumb terminal", true, map[string]string{"TERM": "dumb"}, false},
		{"pipe or file", false, nil, false},
	}
	for _, tc := range tests {
		if got := colourOn(tc.tty, func(k string) string { return tc.env[k] }); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// On a terminal the severity word is painted and nothing else changes; elsewhere the text is plain.
func TestPaintFinding(t *testing.T) {
	t.Parallel()
	f := catalog.Finding{Severity: catalog.SeverityError, File: "c.yaml", Line: 3, Column: 5, Message: "bad: error: here", Pointer: "/spec"}
	if got, want := paintFinding(colour(true), f), "c.yaml:3:5: \x1b[1;31merror\x1b[0m: bad: error: here (at /spec)"; got != want {
		t.Errorf("painted %q, want %q", got, want)
	}
	w := catalog.Finding{Severity: catalog.SeverityWarning, File: "c.yaml", Line: 1, Column: 1, Message: "m"}
	if got, want := paintFinding(colour(true), w), "c.yaml:1:1: \x1b[33mwarning\x1b[0m: m"; got != want {
		t.Errorf("painted %q, want %q", got, want)
	}
	var b bytes.Buffer
	if err := writeFindings(&b, catalog.Findings{f}); err != nil || b.String() != f.String()+"\n" {
		t.Errorf("to a buffer: %q, %v; want the plain text", b.String(), err)
	}
	if got := colour(false).errorPrefix(); got != "krm-catalog:" {
		t.Errorf("plain prefix %q", got)
	}
}
