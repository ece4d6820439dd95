package catalog

import (
	"encoding/json"
	"fmt"
	"io"
)

// Summary counts what a validation run looked at and found.
type Summary struct {
	Files    int `json:"files"`
	Errors   int `json:"errors"`
	Warnings int `json:"warnings"`
}

// Summarize counts findings by severity.
func Summarize(files int, fs Findings) Summary {
	return Summary{Files: files, Errors: fs.Count(SeverityError), Warnings: fs.Count(SeverityWarning)}
}

// String reads like "2 errors, 1 warning in 3 files".
func (s Summary) String() string {
	return fmt.Sprintf("%s, %s in %s", plural(s.Errors, "error"), plural(s.Warnings, "warning"), plural(s.Files, "file"))
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// WriteText writes one line per finding: file:line:col: severity: message (at /pointer).
func WriteText(w io.Writer, fs Findings) error {
	for _, f := range fs {
		if _, err := fmt.Fprintln(w, f.String()); err != nil {
			return err
		}
	}
	return nil
}

// Report is the JSON form of a validation run.
type Report struct {
	Findings Findings `json:"findings"`
	Summary  Summary  `json:"summary"`
}

// WriteJSON writes the findings and their summary as one indented JSON object.
func WriteJSON(w io.Writer, files int, fs Findings) error {
	if fs == nil {
		fs = Findings{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(Report{Findings: fs, Summary: Summarize(files, fs)})
}
