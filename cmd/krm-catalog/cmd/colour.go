package cmd

import (
	"fmt"
	"io"
	"os"

	"github.com/krm-catalog/krm-catalog/catalog"
)

// colour paints the few words a reader looks for first (the severity of a finding, the
// "krm-catalog:" that starts an error) when it writes to a terminal, unless NO_COLOR is set
// (no-color.org) or TERM is dumb. Files, pipes and CI logs get plain text.
type colour bool

func colourFor(w io.Writer) colour { return colour(colourOn(isTerminal(w), os.Getenv)) }

func colourOn(tty bool, getenv func(string) string) bool {
	return tty && getenv("NO_COLOR") == "" && getenv("TERM") != "dumb"
}

func (c colour) paint(sgr, s string) string {
	if !c {
		return s
	}
	return "\x1b[" + sgr + "m" + s + "\x1b[0m"
}

// errorPrefix is the "krm-catalog:" an error line starts with: bold red.
func (c colour) errorPrefix() string { return c.paint("1;31", "krm-catalog:") }

// severity is a finding's severity word: errors bold red, warnings yellow.
func (c colour) severity(s catalog.Severity) string {
	switch s {
	case catalog.SeverityError:
		return c.paint("1;31", string(s))
	case catalog.SeverityWarning:
		return c.paint("33", string(s))
	}
	return string(s)
}

// writeFindings is catalog.WriteText with the severities painted on a terminal.
func writeFindings(w io.Writer, fs catalog.Findings) error {
	c := colourFor(w)
	if !c {
		return catalog.WriteText(w, fs)
	}
	for _, f := range fs {
		if _, err := io.WriteString(w, paintFinding(c, f)+"\n"); err != nil {
			return err
		}
	}
	return nil
}

// paintFinding is f.String() with its severity painted.
func paintFinding(c colour, f catalog.Finding) string {
	prefix := fmt.Sprintf("%s:%d:%d: ", f.File, f.Line, f.Column)
	return prefix + c.severity(f.Severity) + f.String()[len(prefix)+len(f.Severity):]
}
