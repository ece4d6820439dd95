package gate

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/krm-catalog/krm-catalog/catalog"
	"github.com/krm-catalog/krm-catalog/schemas"
)

// Formats Write accepts.
func Formats() []string { return []string{"text", "json", "junit", "results"} }

// Write renders the report in format: text (one line per finding, as validate), json, junit (for
// CI test reports) or results (a ResourceList whose results follow the KRM Functions
// Specification, which `krm-catalog validate` accepts).
func (r Report) Write(w io.Writer, format string) error {
	switch format {
	case "text":
		return catalog.WriteText(w, r.Findings())
	case "json":
		return r.writeJSON(w)
	case "junit":
		return r.writeJUnit(w)
	case "results":
		return r.writeResults(w)
	}
	return fmt.Errorf("unknown format %q: expected one of %s", format, strings.Join(Formats(), ", "))
}

// Summary counts the findings and checks.
type Summary struct {
	catalog.Summary
	// Artifacts counts the artifacts checked, Failed those of them that failed, and Skipped those
	// not checked, by reason (Check.Skipped).
	Artifacts int            `json:"artifacts"`
	Failed    int            `json:"failedArtifacts"`
	Skipped   map[string]int `json:"skippedArtifacts,omitempty"`
}

// Summarize counts the report.
func (r Report) Summarize() Summary {
	s := Summary{Summary: catalog.Summarize(r.Inputs, r.Findings())}
	for _, c := range r.Checks {
		if c.Skipped != "" {
			if s.Skipped == nil {
				s.Skipped = map[string]int{}
			}
			s.Skipped[c.Skipped]++
			continue
		}
		s.Artifacts++
		if !c.OK {
			s.Failed++
		}
	}
	return s
}

// SkippedTotal is how many artifacts were not checked.
func (s Summary) SkippedTotal() int {
	n := 0
	for _, k := range s.Skipped {
		n += k
	}
	return n
}

// String reads like "1 error, 0 warnings in 2 files; 3 artifacts checked, 1 failed; 2 not
// checked (1 not pinned, 1 offline)".
func (s Summary) String() string {
	out := fmt.Sprintf("%s; %d artifacts checked, %d failed", s.Summary, s.Artifacts, s.Failed)
	if n := s.SkippedTotal(); n > 0 {
		out += fmt.Sprintf("; %d not checked (%s)", n, s.SkippedReasons())
	}
	return out
}

// SkippedReasons counts the artifacts not checked by reason: "1 not pinned, 2 offline".
func (s Summary) SkippedReasons() string {
	reasons := make([]string, 0, len(s.Skipped))
	for _, why := range slices.Sorted(maps.Keys(s.Skipped)) {
		reasons = append(reasons, fmt.Sprintf("%d %s", s.Skipped[why], why))
	}
	return strings.Join(reasons, ", ")
}

func (r Report) writeJSON(w io.Writer) error {
	findings := r.Findings()
	if findings == nil {
		findings = catalog.Findings{}
	}
	checks := r.Checks
	if checks == nil {
		checks = []Check{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(struct {
		Findings  catalog.Findings `json:"findings"`
		Artifacts []Check          `json:"artifacts"`
		Summary   Summary          `json:"summary"`
	}{findings, checks, r.Summarize()})
}

// The JUnit form has one test suite per file: a test case per document for validation, and one
// per artifact check, so a CI report shows which artifact failed.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	Skipped   *junitSkipped `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

func junitCaseOf(name, class string, fs catalog.Findings) junitCase {
	c := junitCase{Name: name, Classname: class}
	var errs, rest []string
	for _, f := range fs {
		if f.Severity == catalog.SeverityError {
			errs = append(errs, f.String())
		} else {
			rest = append(rest, f.String())
		}
	}
	if len(errs) > 0 {
		msg := errs[0]
		if len(errs) > 1 {
			msg = fmt.Sprintf("%s (and %d more)", msg, len(errs)-1)
		}
		c.Failure = &junitFailure{Message: msg, Type: "error", Text: strings.Join(errs, "\n")}
	}
	c.SystemOut = strings.Join(rest, "\n")
	return c
}

func (r Report) writeJUnit(w io.Writer) error {
	type docKey struct {
		file string
		doc  int
	}
	byDoc := map[docKey]catalog.Findings{}
	var order []docKey
	note := func(k docKey) {
		if _, ok := byDoc[k]; !ok {
			byDoc[k] = nil
			order = append(order, k)
		}
	}
	for _, f := range r.Validation {
		k := docKey{f.File, f.Document}
		note(k)
		byDoc[k] = append(byDoc[k], f)
	}
	for _, c := range r.Checks {
		note(docKey{c.File, c.Document})
	}
	suites := map[string]*junitSuite{}
	var files []string
	suite := func(file string) *junitSuite {
		if s, ok := suites[file]; ok {
			return s
		}
		s := &junitSuite{Name: file}
		suites[file] = s
		files = append(files, file)
		return s
	}
	for _, k := range order {
		s := suite(k.file)
		s.Cases = append(s.Cases, junitCaseOf(fmt.Sprintf("document %d: validate", k.doc), k.file, byDoc[k]))
	}
	for _, c := range r.Checks {
		s := suite(c.File)
		jc := junitCaseOf(fmt.Sprintf("document %d: %s %s (at %s)", c.Document, c.What, c.Reference, c.Pointer), c.File, c.Findings)
		if c.Skipped != "" {
			jc.Skipped = &junitSkipped{Message: "not checked: " + c.Skipped}
		}
		s.Cases = append(s.Cases, jc)
	}
	out := junitSuites{Name: "krm-catalog verify"}
	for _, f := range files {
		s := suites[f]
		s.Tests = len(s.Cases)
		for _, c := range s.Cases {
			if c.Failure != nil {
				s.Failures++
			}
		}
		out.Tests += s.Tests
		out.Failures += s.Failures
		out.Suites = append(out.Suites, *s)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// Result is one entry of a ResourceList's results (KRM Functions Specification v1).
type Result struct {
	Message  string            `yaml:"message" json:"message"`
	Severity string            `yaml:"severity" json:"severity"`
	Field    *ResultField      `yaml:"field,omitempty" json:"field,omitempty"`
	File     *ResultFile       `yaml:"file,omitempty" json:"file,omitempty"`
	Tags     map[string]string `yaml:"tags,omitempty" json:"tags,omitempty"`
}

// ResultField names the field a result is about, as a path (spec.krmFunctions[0].group).
type ResultField struct {
	Path string `yaml:"path" json:"path"`
}

// ResultFile names the file and the document in it.
type ResultFile struct {
	Path  string `yaml:"path" json:"path"`
	Index int    `yaml:"index" json:"index"`
}

type resourceList struct {
	APIVersion string   `yaml:"apiVersion"`
	Kind       string   `yaml:"kind"`
	Items      []any    `yaml:"items"`
	Results    []Result `yaml:"results"`
}

// Results converts findings into KRM function results.
func Results(fs catalog.Findings) []Result {
	out := []Result{}
	for _, f := range fs {
		r := Result{Message: f.Message, Severity: string(f.Severity), Tags: map[string]string{"tool": "krm-catalog verify"}}
		if f.File != "" {
			r.File = &ResultFile{Path: f.File, Index: f.Document}
		}
		if f.Pointer != "" {
			r.Field = &ResultField{Path: fieldPath(f.Pointer)}
		}
		if f.Line > 0 {
			r.Tags["line"] = strconv.Itoa(f.Line)
			r.Tags["column"] = strconv.Itoa(f.Column)
		}
		out = append(out, r)
	}
	return out
}

// fieldPath turns a JSON pointer into the path form KRM results use: a.b[0].c, with keys that are
// not plain identifiers quoted as ["key"].
func fieldPath(pointer string) string {
	var b strings.Builder
	for _, tok := range strings.Split(strings.TrimPrefix(pointer, "/"), "/") {
		tok = schemas.UnescapeToken(tok)
		if _, err := strconv.Atoi(tok); err == nil {
			b.WriteString("[" + tok + "]")
			continue
		}
		if isIdent(tok) {
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(tok)
			continue
		}
		b.WriteString("[" + strconv.Quote(tok) + "]")
	}
	return b.String()
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

func (r Report) writeResults(w io.Writer) error {
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(resourceList{APIVersion: "config.kubernetes.io/v1", Kind: "ResourceList", Items: []any{}, Results: Results(r.Findings())}); err != nil {
		return err
	}
	return enc.Close()
}
