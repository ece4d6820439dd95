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
	"strings"
	"testing"
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

// TestDocsIndex holds docs/README.md to the documents: it links every one, and nothing else.
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
	docs, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		if name := filepath.Base(d); name != "README.md" && !linked[name] {
			t.Errorf("docs/%s is not in the index, docs/README.md: add a line for it", name)
		}
	}
}
