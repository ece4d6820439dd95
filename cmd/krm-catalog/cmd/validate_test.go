package cmd

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// run runs the command line in-process and returns its exit code and output.
func run(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = Main(context.Background(), args, IO{In: strings.NewReader(stdin), Out: &out, Err: &errOut})
	return code, out.String(), errOut.String()
}

// goldenWriters maps each golden file to the test that compares with it: two tests sharing one
// file would, under -update, leave it holding whichever wrote last.
var goldenWriters sync.Map

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if other, loaded := goldenWriters.LoadOrStore(path, t.Name()); loaded && other != t.Name() {
		t.Fatalf("%s and %s both use %s: give each its own name", other, t.Name(), path)
	}
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/krm-catalog/cmd -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s (-want +got):\n%s", path, diff)
	}
}

func TestValidateGolden(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		args     []string
		wantCode int
	}{
		{"validate-text", []string{"validate", "testdata/validate/mixed.yaml"}, ExitFailure},
		{"validate-json", []string{"validate", "--format", "json", "testdata/validate/mixed.yaml"}, ExitFailure},
		{"validate-strict", []string{"validate", "--strict", "testdata/validate/mixed.yaml"}, ExitFailure},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, stdout, stderr := run(t, "", tc.args...)
			if code != tc.wantCode {
				t.Errorf("exit code %d, want %d; stderr: %s", code, tc.wantCode, stderr)
			}
			golden(t, tc.name, stdout)
		})
	}
}

func TestValidateExitCodes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		stdin      string
		args       []string
		wantCode   int
		wantStderr string
	}{
		// The example catalog names its functions' container images by tag only: no image is built
		// for them (they name the functions for fn serve); its exec runtimes are what runs.
		{"examples are valid", "", []string{"validate", "../../../examples"}, ExitOK, "0 errors, 3 warnings"},
		{"other kinds in a directory are skipped quietly", "", []string{"validate", "../../../examples"}, ExitOK, "documents of other kinds skipped; -v lists them"},
		{"stdin", "kind: Nope\n", []string{"validate", "-"}, ExitFailure, "1 error"},
		{"empty stdin", "", []string{"validate", "-"}, ExitFailure, "1 error"},
		{"missing file", "", []string{"validate", "does-not-exist.yaml"}, ExitUsage, "read does-not-exist.yaml: no such file or directory"},
		{"no arguments", "", []string{"validate"}, ExitUsage, "requires at least 1 arg"},
		{"bad output format", "", []string{"validate", "--format", "xml", "-"}, ExitUsage, "--format must be text or json"},
		{"-o is not a format", "", []string{"validate", "-o", "json", "-"}, ExitUsage, "unknown shorthand flag: 'o'"},
		{"unknown flag", "", []string{"validate", "--nope", "-"}, ExitUsage, "unknown flag: --nope"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, _, stderr := run(t, tc.stdin, tc.args...)
			if code != tc.wantCode || !strings.Contains(stderr, tc.wantStderr) {
				t.Errorf("exit %d, stderr %q; want exit %d and stderr containing %q", code, stderr, tc.wantCode, tc.wantStderr)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	code, stdout, _ := run(t, "", "version")
	if code != 0 || !strings.HasPrefix(stdout, "krm-catalog ") {
		t.Errorf("version: exit %d, output %q", code, stdout)
	}
}

// TestValidateInvalidCorpus runs the command on every invalid document of the validation corpus:
// each exits 1, and prints each of its expected errors as file:line:col with the JSON pointer.
func TestValidateInvalidCorpus(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("../../../catalog/testdata/invalid/*")
	if err != nil || len(files) < 40 {
		t.Fatalf("corpus: %d files, %v", len(files), err)
	}
	want := regexp.MustCompile(`(?m)^# want: (\d+) (\S+) `)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			code, stdout, stderr := run(t, "", "validate", f)
			if code != ExitFailure {
				t.Fatalf("exit %d, want %d; %s", code, ExitFailure, stderr)
			}
			for _, m := range want.FindAllStringSubmatch(string(data), -1) {
				line, pointer := m[1], m[2]
				prefix := f + ":" + line + ":"
				found := false
				for _, l := range strings.Split(stdout, "\n") {
					if strings.HasPrefix(l, prefix) && strings.Contains(l, ": error: ") &&
						(pointer == "-" || strings.HasSuffix(l, "(at "+pointer+")")) {
						found = true
					}
				}
				if !found {
					t.Errorf("no error line %s… (at %s) in:\n%s", prefix, pointer, stdout)
				}
			}
		})
	}
}
