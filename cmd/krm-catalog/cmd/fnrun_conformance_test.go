package cmd_test

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/cmd/krm-catalog/cmd"
	"github.com/krm-catalog/krm-catalog/internal/testenv"
)

// TestConformance runs the cases of fn/testdata/conformance through `krm-catalog fn run`, as a user
// would. (It lives here rather than in fn so that fn's tests and fuzz targets do not build the whole
// command line.) Each case is a directory:
//
//	README.md      what the case pins, citing the kpt or kyaml behaviour (required)
//	package/       the package the run works on (copied; modes and symbolic links kept)
//	fn-config.yaml the function config (default args: fn run $PKG --fn-config $CASE/fn-config.yaml)
//	args           other arguments, one per line ($PKG, $CASE are replaced; $LINK is a symbolic
//	               link to the package, made beside it)
//	stdin          standard input
//	expected/      the package after the run; when absent, the package must be unchanged
//	stdout         the expected standard output
//	exit           the expected exit status (default 0)
//	error          lines that must each appear in standard error
//
// --results-dir is always given; a run that exits non-zero must say so in results.yaml (a non-zero
// exitCode and an error result carrying the first line of `error`).
func TestConformance(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..", "..", "fn", "testdata", "conformance")
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		n++
		caseDir, err := filepath.Abs(filepath.Join(root, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		t.Run(e.Name(), func(t *testing.T) {
			t.Parallel()
			runConformanceCase(t, caseDir)
		})
	}
	if n == 0 {
		t.Fatal("no conformance cases")
	}
}

// TestRejectionPrintedOnce: a run rejected after its functions ran (the write rule, two resources at
// one path and index, path annotations that disagree), dry runs included, says why once on standard
// error; results.yaml records it as well (checked by runConformanceCase).
func TestRejectionPrintedOnce(t *testing.T) {
	t.Parallel()
	for _, name := range []string{
		"write-rule-markdown", "write-rule-hidden-dir", "write-rule-symlink", "write-rule-skipped-file",
		"results-rejected-duplicate", "annotations-mismatch",
		"dry-run-write-rule-markdown", "dry-run-write-rule-outside",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			caseDir, err := filepath.Abs(filepath.Join("..", "..", "..", "fn", "testdata", "conformance", name))
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(filepath.Join(caseDir, "error"))
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			why := lines[len(lines)-1]
			if n := strings.Count(runConformanceCase(t, caseDir), why); n != 1 {
				t.Errorf("standard error says %q %d times, want once", why, n)
			}
		})
	}
}

// runConformanceCase runs the case and checks what it did; it returns standard error.
func runConformanceCase(t *testing.T, caseDir string) string {
	if _, err := os.Stat(filepath.Join(caseDir, "README.md")); err != nil {
		t.Fatal("every case cites the behaviour it pins in README.md")
	}
	tmp := t.TempDir()
	pkg := filepath.Join(tmp, "pkg")
	if _, err := os.Stat(filepath.Join(caseDir, "package")); err == nil {
		testenv.CopyTree(t, filepath.Join(caseDir, "package"), pkg)
	} else if err := os.Mkdir(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(tmp, "link")
	if err := os.Symlink(pkg, link); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, pkg)
	args := []string{"fn", "run", "$PKG", "--fn-config", "$CASE/fn-config.yaml"}
	if b, err := os.ReadFile(filepath.Join(caseDir, "args")); err == nil {
		args = strings.Fields(string(b))
	}
	for i, a := range args {
		args[i] = strings.NewReplacer("$PKG", pkg, "$CASE", caseDir, "$LINK", link).Replace(a)
	}
	results := filepath.Join(tmp, "results")
	args = append(args, "--results-dir", results)
	var stdin []byte
	if b, err := os.ReadFile(filepath.Join(caseDir, "stdin")); err == nil {
		stdin = b
	}
	var stdout, stderr bytes.Buffer
	code := cmd.Main(context.Background(), args, cmd.IO{In: bytes.NewReader(stdin), Out: &stdout, Err: &stderr})

	wantCode := 0
	if b, err := os.ReadFile(filepath.Join(caseDir, "exit")); err == nil {
		if wantCode, err = strconv.Atoi(strings.TrimSpace(string(b))); err != nil {
			t.Fatal(err)
		}
	}
	if code != wantCode {
		t.Errorf("exit status %d, want %d; stderr:\n%s", code, wantCode, stderr.String())
	}
	var errLines []string
	if b, err := os.ReadFile(filepath.Join(caseDir, "error")); err == nil {
		errLines = strings.Split(strings.TrimSpace(string(b)), "\n")
		for _, l := range errLines {
			if !strings.Contains(stderr.String(), l) {
				t.Errorf("standard error lacks %q:\n%s", l, stderr.String())
			}
		}
	}
	if b, err := os.ReadFile(filepath.Join(caseDir, "stdout")); err == nil {
		if diff := cmp.Diff(string(b), stdout.String()); diff != "" {
			t.Errorf("standard output (-want +got):\n%s", diff)
		}
	}
	if os.Getenv("KRM_CATALOG_UPDATE_CONFORMANCE") != "" {
		// writes what the run did as the case's expectation, for review before it is committed
		if _, err := os.Stat(filepath.Join(caseDir, "expected")); err == nil || !cmp.Equal(before, snapshot(t, pkg)) {
			_ = os.RemoveAll(filepath.Join(caseDir, "expected"))
			testenv.CopyTree(t, pkg, filepath.Join(caseDir, "expected"))
		}
		if stdout.Len() > 0 {
			_ = os.WriteFile(filepath.Join(caseDir, "stdout"), stdout.Bytes(), 0o644)
		}
	}
	want := before
	if _, err := os.Stat(filepath.Join(caseDir, "expected")); err == nil {
		want = snapshot(t, filepath.Join(caseDir, "expected"))
	}
	if diff := cmp.Diff(want, snapshot(t, pkg)); diff != "" {
		t.Errorf("package after the run (-want +got):\n%s", diff)
	}
	if wantCode != 0 {
		checkRejectedResults(t, filepath.Join(results, "results.yaml"), errLines)
	}
	return stderr.String()
}

// checkRejectedResults: results.yaml of a failed run has a non-zero exitCode and an error result
// carrying the error.
func checkRejectedResults(t *testing.T, file string, errLines []string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Errorf("a failed run wrote no results: %v", err)
		return
	}
	var doc struct {
		ExitCode int `yaml:"exitCode"`
		Items    []struct {
			ExitCode int `yaml:"exitCode"`
			Results  []struct {
				Message  string `yaml:"message"`
				Severity string `yaml:"severity"`
			} `yaml:"results"`
		} `yaml:"items"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.ExitCode == 0 {
		t.Errorf("results.yaml says exitCode 0 for a failed run:\n%s", b)
	}
	for _, it := range doc.Items {
		for _, r := range it.Results {
			if (r.Severity == "error" || r.Severity == "") && it.ExitCode != 0 && (len(errLines) == 0 || strings.Contains(r.Message, strings.TrimPrefix(errLines[0], "[error]: "))) {
				return
			}
		}
	}
	t.Errorf("results.yaml has no error result for the failure (%q):\n%s", errLines, b)
}

// snapshot maps each entry of a tree to its content: files to their bytes (and "(executable)"
// when any x bit is set), links to "-> target".
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out[rel] = "-> " + target
		case d.Type().IsRegular():
			b, perm, err := readRegular(p, d)
			if err != nil {
				return err
			}
			s := string(b)
			if perm&0o111 != 0 {
				s += " (executable)"
			}
			out[rel] = s
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func readRegular(p string, d fs.DirEntry) ([]byte, fs.FileMode, error) {
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, 0, err
	}
	info, err := d.Info()
	if err != nil {
		return nil, 0, err
	}
	return b, info.Mode().Perm(), nil
}

// TestFunctionFailurePrintedOnce: a function that fails with an error result (a starlark fail())
// has its message said once on standard error by every command that runs functions, with exit
// status 1 and the result kept in results.yaml.
func TestFunctionFailurePrintedOnce(t *testing.T) {
	t.Parallel()
	const (
		script  = "fail(\"namespace is required\")\n"
		message = "[error]: fail: namespace is required"
		config  = "apiVersion: fn.kpt.dev/v1alpha1\nkind: StarlarkRun\nmetadata:\n  name: fn\nsource: |\n  " + script
		cm      = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\ndata:\n  a: b\n"
	)
	tests := []struct {
		name  string
		files map[string]string
		args  []string // DIR is replaced by the directory holding files
	}{
		{"fn run", map[string]string{"fn-config.yaml": config, "pkg/cm.yaml": cm},
			[]string{"fn", "run", "DIR/pkg", "--fn-config", "DIR/fn-config.yaml"}},
		{"fn run --dry-run", map[string]string{"fn-config.yaml": config, "pkg/cm.yaml": cm},
			[]string{"fn", "run", "--dry-run", "DIR/pkg", "--fn-config", "DIR/fn-config.yaml"}},
		{"fn render", map[string]string{
			"pkg/Kptfile":        "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: pkg\npipeline:\n  mutators:\n  - image: example.com/kpt-fn/starlark:v0.5\n    configPath: fn-config.yaml\n",
			"pkg/fn-config.yaml": config, "pkg/cm.yaml": cm},
			[]string{"fn", "render", "DIR/pkg"}},
		{"build", map[string]string{
			"pkg/composition.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Composition\nmetadata:\n  name: pkg\ntransformers:\n- " +
				strings.ReplaceAll(strings.TrimSuffix(config, "\n"), "\n", "\n  ") + "\n"},
			[]string{"build", "DIR/pkg"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			for name, content := range tc.files {
				p := filepath.Join(dir, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var args []string
			for _, a := range tc.args {
				args = append(args, strings.ReplaceAll(a, "DIR", dir))
			}
			results := filepath.Join(dir, "results")
			args = append(args, "--results-dir", results)
			var stdout, stderr bytes.Buffer
			code := cmd.Main(context.Background(), args, cmd.IO{In: strings.NewReader(""), Out: &stdout, Err: &stderr})
			if code != cmd.ExitFailure {
				t.Errorf("exit status %d, want %d; stderr:\n%s", code, cmd.ExitFailure, stderr.String())
			}
			if n := strings.Count(stderr.String(), message); n != 1 {
				t.Errorf("standard error says %q %d times, want once:\n%s", message, n, stderr.String())
			}
			checkRejectedResults(t, filepath.Join(results, "results.yaml"), []string{message})
		})
	}
}
