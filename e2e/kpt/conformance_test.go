package kpt_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/cmd/krm-catalog/cmd"
	"github.com/krm-catalog/krm-catalog/fn"
	"github.com/krm-catalog/krm-catalog/fn/fntest"
	"github.com/krm-catalog/krm-catalog/fn/runtime/container"
	"github.com/krm-catalog/krm-catalog/internal/testenv"
)

// The conformance cases are kpt's own end-to-end cases for `kpt fn render` (kptdev/kpt,
// e2e/testdata/fn-render), recreated under fn/kpt/testdata/conformance/NAME:
//
//   - pkg/: the package as the case has it (registry hosts renamed to example.com, which is all
//     that differs);
//   - diff.patch: the case's .expected/diff.patch (renamed the same way): what `git diff` shows
//     after kpt rendered the package;
//   - case.yaml: the case's .expected/config.yaml fields that matter here (exitCode, allowExec,
//     args), the results of its .expected/results.yaml or renderStatus where a case is about them,
//     and, for a documented difference, what krm-catalog does instead and why.
//
// Each case renders a copy of pkg/ with `krm-catalog fn render` and compares every file with pkg/
// patched by diff.patch, byte for byte; a Kptfile's status (kpt's renderStatus, which krm-catalog
// does not write) is left out of the comparison. Images the cases name run as stand-ins
// (fn/kpt/testdata/standin): by default through a docker shim (the runner's container path, with the
// function run as a process: a container per step costs seconds on a loaded machine), and with
// KRM_CATALOG_KPT_DOCKER=1 in FROM scratch images tagged with the cases' names on the Docker engine.
// Nothing is pulled either way.
//
// They drive the command line, so they live here, among the end-to-end tests; the cases stay
// beside fn/kpt, whose Kptfile fuzz target takes its seeds from them.
const kptTestdata = "../../fn/kpt/testdata"

type caseSpec struct {
	ExitCode  int      `yaml:"exitCode"`
	AllowExec bool     `yaml:"allowExec"`
	Args      []string `yaml:"args"`
	// StdoutFile names a file of the case holding what kpt prints on stdout (--output stdout).
	StdoutFile string `yaml:"stdoutFile"`
	// RenderVia names a symbolic link to the package, made in it ("ln -s ./ NAME", as the case's
	// exec.sh does), that render is given instead of the package's directory.
	RenderVia string `yaml:"renderVia"`
	// ResultsContains are parts of the results.yaml render writes with --results-dir (what kpt's
	// .expected/results.yaml checks, in krm-catalog's FunctionResultList).
	ResultsContains []string `yaml:"resultsContains"`
	// StderrContains is a part of krm-catalog's message that a failing case must print.
	StderrContains string `yaml:"stderrContains"`
	// Results are results kpt's .expected/results.yaml lists, as they must appear (message and
	// severity, in order) in the results krm-catalog writes with --results-dir.
	Results []fn.Result `yaml:"results"`
	// Difference, when set, says how and why krm-catalog departs from kpt here; the case then
	// checks krm-catalog's own behaviour (OurExitCode, and files left unchanged unless OurPatch).
	Difference    string `yaml:"difference"`
	OurExitCode   *int   `yaml:"ourExitCode"`
	OurPatch      string `yaml:"ourPatch"`
	OurStdoutFile string `yaml:"ourStdoutFile"`
}

var standin struct {
	// bin is the stand-in executable; shim is set when it also serves as the container engine.
	bin  string
	shim bool

	mu     sync.Mutex
	images map[string]error
}

// EnvRealDocker makes the conformance cases run their stand-ins in FROM scratch images on the
// Docker engine instead of through the docker shim.
const EnvRealDocker = "KRM_CATALOG_KPT_DOCKER"

func TestMain(m *testing.M) {
	if sandboxed, code := cmd.ServeSandbox(); sandboxed {
		os.Exit(code)
	}
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "krm-catalog-kpt-standin-*")
	if err != nil {
		log.Print(err)
		return 1
	}
	defer os.RemoveAll(dir)
	standin.bin = filepath.Join(dir, "standin")
	cmd := exec.Command("go", "build", "-trimpath", "-o", standin.bin, filepath.Join(kptTestdata, "standin"))
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		log.Printf("go build %s: %v\n%s", filepath.Join(kptTestdata, "standin"), err, out)
		return 1
	}
	standin.images = map[string]error{}
	defer func() {
		for image := range standin.images {
			_ = exec.Command("docker", "rmi", "-f", image).Run()
		}
	}()
	if os.Getenv(EnvRealDocker) == "" {
		// the stand-in is the engine: image steps take the container path of the runner, and the
		// function runs as a process
		shimDir := filepath.Join(dir, "shim")
		if err := os.Mkdir(shimDir, 0o755); err != nil {
			log.Print(err)
			return 1
		}
		if err := os.Symlink(standin.bin, filepath.Join(shimDir, "docker")); err != nil {
			log.Print(err)
			return 1
		}
		os.Setenv("PATH", shimDir+string(os.PathListSeparator)+os.Getenv("PATH"))
		// the engine is the default one (docker, found first on PATH), as kpt's default-runtime
		// case runs it
		os.Unsetenv(container.EnvEngine)
		standin.shim = true
	}
	return m.Run()
}

// standinImage builds (once per test binary) a FROM scratch image named image whose entrypoint runs
// the stand-in for the function the image's last path element names, told the image's tag; with the
// shim there is none to build.
func standinImage(t *testing.T, image string) {
	t.Helper()
	if standin.shim {
		return
	}
	engine := fntest.Docker(t)
	standin.mu.Lock()
	defer standin.mu.Unlock()
	err, done := standin.images[image]
	if !done {
		err = buildImage(engine, image)
		standin.images[image] = err
	}
	if err != nil {
		t.Fatal(err)
	}
}

func buildImage(engine, image string) error {
	repo, tag := image, ""
	if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
		repo, tag = repo[:i], repo[i+1:]
	}
	name := path.Base(repo)
	dir, err := os.MkdirTemp("", "krm-catalog-kpt-image-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin, err := os.ReadFile(standin.bin)
	if err != nil {
		return err
	}
	files := map[string]string{
		"standin":    string(bin),
		"passwd":     "root:x:0:0:root:/:/sbin/nologin\nnobody:x:65534:65534:nobody:/:/sbin/nologin\n",
		"Dockerfile": fmt.Sprintf("FROM scratch\nCOPY passwd /etc/passwd\nCOPY standin /standin\nUSER nobody\nENTRYPOINT [\"/standin\", %q, %q]\n", name, tag),
	}
	for n, c := range files {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(c), 0o755); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, engine, "build", "-q", "-t", image, dir)
	cmd.Env = append(os.Environ(), "DOCKER_BUILDKIT=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s build %s: %v\n%s", engine, image, err, out)
	}
	return nil
}

var imageLine = regexp.MustCompile(`(?m)^\s*-?\s*image:\s*"?([^"\s]+)"?\s*$`)

// images lists the images the Kptfiles of a package name, except kpt's starlark function (run
// in-process).
func images(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Name() != "Kptfile" {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range imageLine.FindAllStringSubmatch(string(data), -1) {
			repo := m[1]
			if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
				repo = repo[:i]
			}
			if path.Base(repo) != "starlark" {
				out = append(out, m[1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestKptConformance(t *testing.T) {
	root := filepath.Join(kptTestdata, "conformance")
	var names []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && d.Name() == "case.yaml" {
			rel, _ := filepath.Rel(root, filepath.Dir(p))
			names = append(names, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	if len(names) == 0 {
		t.Fatal("no conformance cases")
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			runCase(t, filepath.Join(root, filepath.FromSlash(name)))
		})
	}
}

func runCase(t *testing.T, dir string) {
	var spec caseSpec
	data, err := os.ReadFile(filepath.Join(dir, "case.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &spec); err != nil {
		t.Fatalf("case.yaml: %v", err)
	}
	pkg := filepath.Join(dir, "pkg")
	for _, image := range images(t, pkg) {
		standinImage(t, image)
	}
	work := t.TempDir()
	got := filepath.Join(work, "got")
	want := filepath.Join(work, "want")
	testenv.CopyTree(t, pkg, got)
	testenv.CopyTree(t, pkg, want)

	patch := "diff.patch"
	wantExit := spec.ExitCode
	if spec.Difference != "" {
		t.Logf("documented difference from kpt: %s", spec.Difference)
		patch = spec.OurPatch
		if spec.OurStdoutFile != "" {
			spec.StdoutFile = spec.OurStdoutFile
		}
		if spec.OurExitCode != nil {
			wantExit = *spec.OurExitCode
		}
	}
	if patch != "" {
		abs, err := filepath.Abs(filepath.Join(dir, patch))
		if err != nil {
			t.Fatal(err)
		}
		if st, err := os.Stat(abs); err == nil && st.Size() > 0 {
			cmd := exec.Command("git", "apply", "--whitespace=nowarn", abs)
			cmd.Dir = want
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("git apply %s: %v\n%s", patch, err, out)
			}
		}
	}

	target := got
	if spec.RenderVia != "" {
		target = filepath.Join(got, spec.RenderVia)
		if err := os.Symlink("./", target); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"fn", "render", target, "--cache-dir", filepath.Join(work, "cache")}
	if spec.AllowExec {
		args = append(args, "--allow-exec")
	}
	resultsDir := filepath.Join(work, "results")
	if len(spec.Results) > 0 || len(spec.ResultsContains) > 0 {
		args = append(args, "--results-dir", resultsDir)
	}
	args = append(args, spec.Args...)
	var stdout, stderr bytes.Buffer
	code := cmd.Main(context.Background(), args, cmd.IO{In: strings.NewReader(""), Out: &stdout, Err: &stderr})
	t.Logf("krm-catalog %s: exit %d\n%s", strings.Join(args, " "), code, stderr.String())
	if (code == 0) != (wantExit == 0) {
		t.Fatalf("exit status %d, kpt's is %d", code, wantExit)
	}
	if spec.StderrContains != "" && !strings.Contains(stderr.String(), spec.StderrContains) {
		t.Errorf("stderr does not say %q", spec.StderrContains)
	}
	if len(spec.ResultsContains) > 0 {
		results, err := os.ReadFile(filepath.Join(resultsDir, "results.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range spec.ResultsContains {
			if !strings.Contains(string(results), want) {
				t.Errorf("results.yaml does not say %q:\n%s", want, results)
			}
		}
	}
	if spec.StdoutFile != "" {
		wantOut, err := os.ReadFile(filepath.Join(dir, spec.StdoutFile))
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(string(wantOut), stdout.String()); d != "" {
			t.Errorf("stdout (-kpt +krm-catalog):\n%s", d)
		}
	}
	if len(spec.Results) > 0 {
		checkResults(t, filepath.Join(resultsDir, "results.yaml"), spec.Results)
	}
	wantFiles, gotFiles := readTree(t, want), readTree(t, got)
	if d := cmp.Diff(wantFiles, gotFiles); d != "" {
		t.Errorf("package after render (-kpt +krm-catalog):\n%s", d)
	}
}

// checkResults compares the message and severity of every result of every function in a results
// file with want.
func checkResults(t *testing.T, file string, want []fn.Result) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Items []struct {
			Results []fn.Result `yaml:"results"`
		} `yaml:"items"`
	}
	if err := yaml.Unmarshal(data, &list); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	var got []fn.Result
	for _, it := range list.Items {
		for _, r := range it.Results {
			got = append(got, fn.Result{Message: r.Message, Severity: r.Severity})
		}
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("results (-kpt +krm-catalog):\n%s", d)
	}
}

// readTree reads every regular file under dir, the Kptfiles without their status.
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if d.Name() == "Kptfile" {
			data = withoutStatus(data)
		}
		out[filepath.ToSlash(rel)] = string(data)
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return out
}

// withoutStatus drops a top-level status field (kpt's render status) from a Kptfile.
func withoutStatus(data []byte) []byte {
	lines := strings.SplitAfter(string(data), "\n")
	var b strings.Builder
	in := false
	for _, l := range lines {
		top := l != "" && l[0] != ' ' && l[0] != '\t' && l[0] != '#' && l[0] != '\n'
		if top {
			in = strings.HasPrefix(l, "status:")
		}
		if !in {
			b.WriteString(l)
		}
	}
	return []byte(b.String())
}
