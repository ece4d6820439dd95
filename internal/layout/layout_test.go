package layout

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

const module = "github.com/krm-catalog/krm-catalog"

// rule is one row of the table in docs/design.md §2: the packages it names, and what they may
// import of ours (nil with any set: anything). testSupport marks the row of the test-support
// packages, which any package's tests may import.
type rule struct {
	packages    []string
	allowed     []string
	any         bool
	testSupport bool
}

var backticked = regexp.MustCompile("`([^`]+)`")

// readRules reads the table of docs/design.md §2.
func readRules(t *testing.T) []rule {
	t.Helper()
	data, err := os.ReadFile("../../docs/design.md")
	if err != nil {
		t.Fatal(err)
	}
	var rules []rule
	inSection := false
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			inSection = strings.HasPrefix(line, "## 2.")
			continue
		}
		if !inSection || !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		if len(cells) != 3 {
			t.Fatalf("docs/design.md §2: a row of %d cells: %s", len(cells), line)
		}
		r := rule{testSupport: strings.HasPrefix(strings.TrimSpace(cells[1]), "test support")}
		for _, m := range backticked.FindAllStringSubmatch(cells[0], -1) {
			r.packages = append(r.packages, m[1])
		}
		may := strings.TrimSpace(cells[2])
		switch ms := backticked.FindAllStringSubmatch(may, -1); {
		case may == "—":
		case len(ms) == 0:
			r.any = true // "anything above", "what they support"
		default:
			for _, m := range ms {
				r.allowed = append(r.allowed, m[1])
			}
		}
		rules = append(rules, r)
	}
	if len(rules) < 10 {
		t.Fatalf("docs/design.md §2 lists %d rows; the table was not found", len(rules))
	}
	return rules
}

// matches reports whether pkg (relative to the module) is named by pattern: a path, a path
// ending in /... (it and everything under it) or a path.Match pattern.
func matches(pattern, pkg string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return pkg == base || strings.HasPrefix(pkg, base+"/")
	}
	ok, _ := path.Match(pattern, pkg)
	return ok
}

func TestImportsFollowDesign(t *testing.T) {
	rules := readRules(t)
	var testSupport []string
	for _, r := range rules {
		if r.testSupport {
			testSupport = append(testSupport, r.packages...)
		}
	}
	if len(testSupport) == 0 {
		t.Fatal("docs/design.md §2 has no row of test support")
	}
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports,TestImports,XTestImports,Name", module+"/...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p struct {
			ImportPath, Name          string
			Imports                   []string
			TestImports, XTestImports []string
		}
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkg := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		if p.Name == "main" {
			continue // commands and examples sit on top of everything
		}
		var r *rule
		for i := range rules {
			for _, name := range rules[i].packages {
				if matches(name, pkg) {
					r = &rules[i]
				}
			}
		}
		if r == nil {
			t.Errorf("package %s is not in docs/design.md §2: add its row (its job, what it may import)", pkg)
			continue
		}
		if r.any {
			continue
		}
		check := func(imports []string, where string, extra []string) {
			for _, imp := range imports {
				dep, ok := strings.CutPrefix(imp, module+"/")
				if !ok {
					continue
				}
				allowed := false
				for _, a := range append(r.allowed, extra...) {
					allowed = allowed || matches(a, dep)
				}
				if !allowed {
					t.Errorf("%s imports %s%s, which docs/design.md §2 does not allow it", pkg, dep, where)
				}
			}
		}
		check(p.Imports, "", nil)
		// A package's tests may import what the package may, the test support, and (package
		// x_test) the package itself.
		check(p.TestImports, " in its tests", testSupport)
		check(p.XTestImports, " in its tests", append([]string{pkg}, testSupport...))
	}
}

var mdLink = regexp.MustCompile(`\]\(([^)#]+)(#[^)]*)?\)`)

// TestDocsIndex holds docs/README.md to the documents: it links every one (the user guide's
// pages under guide/ too), and nothing that does not exist.
func TestDocsIndex(t *testing.T) {
	index, err := os.ReadFile("../../docs/README.md")
	if err != nil {
		t.Fatal(err)
	}
	linked := map[string]bool{}
	for _, m := range mdLink.FindAllStringSubmatch(string(index), -1) {
		linked[m[1]] = true
		if _, err := os.Stat(path.Join("../../docs", m[1])); err != nil {
			t.Errorf("docs/README.md links %s, which does not exist", m[1])
		}
	}
	var docs []string
	for _, pattern := range []string{"../../docs/*.md", "../../docs/guide/*.md"} {
		found, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, found...)
	}
	for _, d := range docs {
		name, err := filepath.Rel("../../docs", d)
		if err != nil {
			t.Fatal(err)
		}
		if name = filepath.ToSlash(name); name != "README.md" && !linked[name] {
			t.Errorf("docs/%s is not in the index, docs/README.md: add a line for it", name)
		}
	}
}

// docLink is a Markdown link or image: its target, up to an optional #fragment.
var docLink = regexp.MustCompile(`\]\(([^)\s#]*)(?:#([^)\s]*))?\)`)

// TestDocLinks holds the links of README.md and of every page under docs/ to what they name: a
// relative link names a file or directory of the repository, and a #fragment into a Markdown page
// names one of its headings, as GitHub spells their anchors. Links in code blocks and to other
// sites are not followed.
func TestDocLinks(t *testing.T) {
	t.Parallel()
	pages := []string{"README.md"}
	err := filepath.WalkDir("../../docs", func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, _ := filepath.Rel("../..", p)
			pages = append(pages, filepath.ToSlash(rel))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	anchorsOf := map[string]map[string]bool{}
	anchors := func(page string) map[string]bool {
		if a, ok := anchorsOf[page]; ok {
			return a
		}
		data, err := os.ReadFile(path.Join("../..", page))
		if err != nil {
			t.Fatal(err)
		}
		a := headingAnchors(string(data))
		anchorsOf[page] = a
		return a
	}
	for _, page := range pages {
		data, err := os.ReadFile(path.Join("../..", page))
		if err != nil {
			t.Fatal(err)
		}
		for n, line := range proseLines(string(data)) {
			if line == "" {
				continue
			}
			for _, m := range docLink.FindAllStringSubmatch(line, -1) {
				target, fragment := m[1], m[2]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				name := page
				if target != "" {
					name = path.Clean(path.Join(path.Dir(page), target))
					if strings.HasPrefix(name, "../") {
						t.Errorf("%s:%d: %s leaves the repository", page, n+1, target)
						continue
					}
					if _, err := os.Stat(path.Join("../..", name)); err != nil {
						t.Errorf("%s:%d: %s does not exist", page, n+1, target)
						continue
					}
				}
				if fragment != "" && strings.HasSuffix(name, ".md") && !anchors(name)[fragment] {
					t.Errorf("%s:%d: %s has no heading #%s", page, n+1, name, fragment)
				}
			}
		}
	}
}

// proseLines returns the lines of a Markdown page with those of fenced code blocks emptied, so
// that line numbers stay those of the file.
func proseLines(s string) []string {
	lines := strings.Split(s, "\n")
	inCode := false
	for i, l := range lines {
		fence := strings.HasPrefix(strings.TrimSpace(l), "```")
		if inCode || fence {
			lines[i] = ""
		}
		if fence {
			inCode = !inCode
		}
	}
	return lines
}

// headingAnchors returns the anchors GitHub gives a page's headings: lower case, punctuation
// dropped, spaces as hyphens, and -1, -2... after a repeated one.
func headingAnchors(s string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	for _, l := range proseLines(s) {
		text, ok := strings.CutPrefix(l, "#")
		if !ok {
			continue
		}
		text = strings.TrimLeft(text, "#")
		if !strings.HasPrefix(text, " ") {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(text)) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			anchors[a+"-"+strconv.Itoa(n)] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
	}
	return anchors
}
