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
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/kio/kioutil"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/cmd/krm-catalog/cmd"
	"github.com/krm-catalog/krm-catalog/fn"
	"github.com/krm-catalog/krm-catalog/fn/fntest"
	"github.com/krm-catalog/krm-catalog/fn/kpt"
	"github.com/krm-catalog/krm-catalog/fn/runtime/container"
	"github.com/krm-catalog/krm-catalog/internal/testenv"
)

// The conformance cases are kpt's own end-to-end cases for `kpt fn render`, taken whole from
// kptdev/kpt's e2e/testdata/fn-render (fn/kpt/testdata/fn-render, by fn/kpt/testdata/retake.sh; registry hosts
// renamed example.com). Each case runs as kpt's e2e runner runs it: `kpt fn render` of a copy of the
// case (or the case's .expected/exec.sh, with a kpt on PATH that is this test binary running
// krm-catalog), and is checked against the case's .expected: the exit status (zero or not), stdout
// where config.yaml has stdOut, the results where results.yaml is there, and every file against the
// case patched by diff.patch. Files other than Kptfiles are compared byte for byte; a Kptfile by its
// content (kpt re-encodes the whole Kptfile to write its status, krm-catalog keeps its comments and
// layout), its status in full except the text of error messages (conditions' message,
// executionError, and errorSummary lines built from them), which is each tool's own wording.
//
// Images run as stand-ins (fn/kpt/testdata/standin): by default through a docker shim (the runner's
// container path, with the function run as a process), with KRM_CATALOG_KPT_DOCKER=1 in FROM scratch
// images tagged with the cases' names on the Docker engine. Nothing is pulled either way.
type kptConfig struct {
	ExitCode       int    `yaml:"exitCode"`
	StdOut         string `yaml:"stdOut"`
	AllowExec      bool   `yaml:"allowExec"`
	DiffStripRegEx string `yaml:"diffStripRegEx"`
	Skip           bool   `yaml:"skip"`
}

// difference is a documented departure from kpt (fn/kpt/testdata/differences.yaml): the case is not
// compared, and docs/kpt.md gives the reason.
type difference struct {
	Reason string `yaml:"reason"`
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

// They drive the command line, so they live among the end-to-end tests; the cases stay beside
// fn/kpt, whose Kptfile fuzz target takes its seeds from them. testdata here links to them, since
// a case's exec step names its script relative to the working directory, as kpt's runner has it.
const kptTestdata = "../../fn/kpt/testdata"

func TestMain(m *testing.M) {
	if sandboxed, code := cmd.ServeSandbox(); sandboxed {
		os.Exit(code)
	}
	if filepath.Base(os.Args[0]) == "kpt" {
		os.Exit(kptShim(os.Args[1:]))
	}
	os.Exit(testMain(m))
}

// kptShim is the kpt that a case's exec.sh runs: `kpt fn render ...` is `krm-catalog fn render
// ...`. kpt's other commands are not krm-catalog's.
func kptShim(args []string) int {
	if len(args) >= 3 && args[0] == "fn" && args[1] == "eval" && args[2] == "-" {
		return evalShim(args[3:])
	}
	if len(args) < 2 || args[0] != "fn" || args[1] != "render" {
		fmt.Fprintf(os.Stderr, "kpt shim: %q is not krm-catalog's\n", args)
		return 2
	}
	return cmd.Main(context.Background(), args, cmd.IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
}

// evalShim is `kpt fn eval - --image IMAGE [--results-dir DIR] [-o unwrap] -- KEY=VALUE...` (the
// next command of a pipe from render's -o stdout) as `krm-catalog fn run -` with a ConfigMap
// config naming the image in its config.kubernetes.io/function annotation; unwrap is kyaml's.
func evalShim(args []string) int {
	var image, unwrap string
	run := []string{"fn", "run", "-"}
	data := map[string]string{}
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--image" && i+1 < len(args):
			i++
			image = args[i]
		case a == "--results-dir" && i+1 < len(args):
			i++
			run = append(run, "--results-dir", args[i])
		case a == "-o" && i+1 < len(args):
			i++
			unwrap = args[i]
		case a == "--":
			for _, kv := range args[i+1:] {
				k, v, _ := strings.Cut(kv, "=")
				data[k] = v
			}
			i = len(args)
		default:
			fmt.Fprintf(os.Stderr, "kpt shim: fn eval %s is not supported\n", a)
			return 2
		}
	}
	cm := yaml.NewMapRNode(nil)
	if err := cm.PipeE(yaml.SetField("apiVersion", yaml.NewStringRNode("v1"))); err != nil {
		log.Print(err)
		return 2
	}
	if err := cm.PipeE(yaml.SetField("kind", yaml.NewStringRNode("ConfigMap"))); err != nil {
		log.Print(err)
		return 2
	}
	if err := cm.SetName("function-input"); err != nil {
		log.Print(err)
		return 2
	}
	if err := cm.SetAnnotations(map[string]string{"config.kubernetes.io/function": "container:\n  image: " + image + "\n"}); err != nil {
		log.Print(err)
		return 2
	}
	cm.SetDataMap(data)
	f, err := os.CreateTemp("", "kpt-shim-*.yaml")
	if err != nil {
		log.Print(err)
		return 2
	}
	defer os.Remove(f.Name())
	if _, err := f.WriteString(cm.MustString()); err != nil {
		log.Print(err)
		return 2
	}
	f.Close()
	run = append(run, "--fn-config", f.Name())
	var out bytes.Buffer
	code := cmd.Main(context.Background(), run, cmd.IO{In: os.Stdin, Out: &out, Err: os.Stderr})
	if code != 0 || unwrap != "unwrap" {
		os.Stdout.Write(out.Bytes())
		return code
	}
	err = kio.Pipeline{
		Inputs: []kio.Reader{&kio.ByteReader{Reader: &out, PreserveSeqIndent: true, WrapBareSeqNode: true}},
		Outputs: []kio.Writer{&kio.ByteWriter{Writer: os.Stdout, ClearAnnotations: []string{kioutil.IndexAnnotation,
			kioutil.PathAnnotation, kioutil.LegacyIndexAnnotation, kioutil.LegacyPathAnnotation}}},
	}.Execute()
	if err != nil {
		log.Print(err)
		return 1
	}
	return 0
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
	// a case's exec.sh runs kpt: this binary, by that name
	self, err := os.Executable()
	if err != nil {
		log.Print(err)
		return 1
	}
	kptDir := filepath.Join(dir, "kpt")
	if err := os.Mkdir(kptDir, 0o755); err != nil {
		log.Print(err)
		return 1
	}
	if err := os.Symlink(self, filepath.Join(kptDir, "kpt")); err != nil {
		log.Print(err)
		return 1
	}
	os.Setenv("PATH", kptDir+string(os.PathListSeparator)+os.Getenv("PATH"))
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
	root := filepath.Join(kptTestdata, "fn-render")
	names := caseNames(t, root)
	diffs := map[string]difference{}
	data, err := os.ReadFile(filepath.Join(kptTestdata, "differences.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, &diffs); err != nil {
		t.Fatalf("differences.yaml: %v", err)
	}
	for name := range diffs {
		if !slices.Contains(names, name) {
			t.Errorf("differences.yaml: no case %s", name)
		}
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if d, ok := diffs[name]; ok {
				t.Skipf("documented difference from kpt: %s", d.Reason)
			}
			runCase(t, root, name)
		})
	}
}

// TestKptMainCases runs cases written here in kpt's layout and recorded with kpt main itself
// (testdata/kpt-main/README.md): what kpt's own cases do not hold, each as kpt main renders it.
func TestKptMainCases(t *testing.T) {
	root := filepath.Join(kptTestdata, "kpt-main")
	for _, name := range caseNames(t, root) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			runCase(t, root, name)
		})
	}
}

// caseNames lists the cases under root: the directories holding an .expected directory.
func caseNames(t *testing.T, root string) []string {
	t.Helper()
	var names []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".expected" {
			rel, _ := filepath.Rel(root, filepath.Dir(p))
			names = append(names, filepath.ToSlash(rel))
			return filepath.SkipDir
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	if len(names) == 0 {
		t.Fatalf("no cases under %s", root)
	}
	return names
}

func runCase(t *testing.T, root, name string) {
	src := filepath.Join(root, filepath.FromSlash(name))
	expected := filepath.Join(src, ".expected")
	var cfg kptConfig
	if data, err := os.ReadFile(filepath.Join(expected, "config.yaml")); err == nil {
		if err := yaml.Unmarshal(data, &cfg); err != nil {
			t.Fatalf("config.yaml: %v", err)
		}
	}
	if cfg.Skip {
		t.Skip("kpt skips this case (config.yaml: skip)")
	}
	for _, image := range images(t, src) {
		standinImage(t, image)
	}
	work := t.TempDir()
	got := filepath.Join(work, path.Base(name))
	want := filepath.Join(work, "want")
	copyCase(t, src, got)
	copyCase(t, src, want)
	if st, err := os.Stat(filepath.Join(expected, "diff.patch")); err == nil && st.Size() > 0 {
		abs, err := filepath.Abs(filepath.Join(expected, "diff.patch"))
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("git", "apply", "--whitespace=nowarn", abs)
		cmd.Dir = want
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git apply diff.patch: %v\n%s", err, out)
		}
	}
	resultsDir := ""
	if _, err := os.Stat(filepath.Join(expected, "results.yaml")); err == nil {
		resultsDir = filepath.Join(work, "results")
	}
	var stdout, stderr bytes.Buffer
	var code int
	if script, err := filepath.Abs(filepath.Join(expected, "exec.sh")); err == nil && fileExists(script) {
		cmd := exec.Command("bash", script)
		cmd.Dir = got
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				t.Fatal(err)
			}
			code = ee.ExitCode()
		}
		t.Logf("bash .expected/exec.sh: exit %d\n%s", code, stderr.String())
	} else {
		// the versions a tag constraint chooses among come from a trusted catalog
		catalog, err := filepath.Abs(filepath.Join(kptTestdata, "catalog.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		args := []string{"fn", "render", got, "--catalog", catalog, "--trusted-catalog", catalog, "--cache-dir", filepath.Join(work, "cache")}
		if resultsDir != "" {
			args = append(args, "--results-dir", resultsDir)
		}
		if fileExists(filepath.Join(src, "out")) {
			args = append(args, "-o", filepath.Join(got, "out"))
		}
		if cfg.AllowExec {
			args = append(args, "--allow-exec")
		}
		code = cmd.Main(context.Background(), args, cmd.IO{In: strings.NewReader(""), Out: &stdout, Err: &stderr})
		t.Logf("krm-catalog %s: exit %d\n%s", strings.Join(args, " "), code, stderr.String())
	}
	if (code == 0) != (cfg.ExitCode == 0) {
		t.Fatalf("exit status %d, kpt's is %d", code, cfg.ExitCode)
	}
	// kpt's runner checks that stdout holds its stdOut
	if cfg.StdOut != "" && !strings.Contains(stdout.String(), cfg.StdOut) {
		if d := cmp.Diff(cfg.StdOut, stdout.String()); d != "" {
			t.Errorf("stdout (-kpt +krm-catalog):\n%s", d)
		}
	}
	if resultsDir != "" {
		checkResults(t, filepath.Join(expected, "results.yaml"), filepath.Join(resultsDir, "results.yaml"))
	}
	compareTrees(t, want, got, strings.Contains(cfg.DiffStripRegEx, "stderr"))
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// copyCase copies a case without its .expected directory.
func copyCase(t *testing.T, from, to string) {
	t.Helper()
	testenv.CopyTree(t, from, to)
	if err := os.RemoveAll(filepath.Join(to, ".expected")); err != nil {
		t.Fatal(err)
	}
}

// resultItem is what checkResults compares of one function's results: kpt names the function by
// image or exec and krm-catalog by its config and runtime, so the name is left out.
type resultItem struct {
	ExitCode int         `yaml:"exitCode"`
	Stderr   string      `yaml:"stderr"`
	Results  []fn.Result `yaml:"results"`
}

// checkResults compares each function's exit code, stderr and results in the results file render
// wrote with kpt's.
func checkResults(t *testing.T, wantFile, gotFile string) {
	t.Helper()
	read := func(file string) []resultItem {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var list struct {
			Items []resultItem `yaml:"items"`
		}
		if err := yaml.Unmarshal(data, &list); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		return list.Items
	}
	if d := cmp.Diff(read(wantFile), read(gotFile)); d != "" {
		t.Errorf("results (-kpt +krm-catalog):\n%s", d)
	}
}

// compareTrees compares every regular file under want and got: Kptfiles by content (status
// messages by presence), the others byte for byte.
func compareTrees(t *testing.T, want, got string, ignoreStderr bool) {
	t.Helper()
	wantFiles, gotFiles := readTree(t, want), readTree(t, got)
	for name, w := range wantFiles {
		g, ok := gotFiles[name]
		if !ok || path.Base(name) != kpt.KptfileName {
			continue
		}
		wk, gk := kptfileContent(t, "kpt's "+name, w, ignoreStderr), kptfileContent(t, name, g, ignoreStderr)
		if d := cmp.Diff(wk, gk); d != "" {
			t.Errorf("%s (-kpt +krm-catalog):\n%s", name, d)
		}
		delete(wantFiles, name)
		delete(gotFiles, name)
	}
	if d := cmp.Diff(wantFiles, gotFiles); d != "" {
		t.Errorf("package after render (-kpt +krm-catalog):\n%s", d)
	}
}

// kptfileContent decodes a Kptfile for comparison; error texts in its status are replaced by
// whether there is one.
func kptfileContent(t *testing.T, name, data string, ignoreStderr bool) any {
	t.Helper()
	var v map[string]any
	if err := yaml.Unmarshal([]byte(data), &v); err != nil {
		// a Kptfile that is not YAML (a case about one) is compared as it is
		return data
	}
	st, _ := v["status"].(map[string]any)
	if st == nil {
		return v
	}
	if conds, ok := st["conditions"].([]any); ok {
		for _, c := range conds {
			if m, ok := c.(map[string]any); ok && m["message"] != nil {
				m["message"] = "(a message)"
			}
		}
	}
	if rs, ok := st["renderStatus"].(map[string]any); ok {
		for _, k := range []string{"mutationSteps", "validationSteps"} {
			steps, _ := rs[k].([]any)
			for _, s := range steps {
				m, _ := s.(map[string]any)
				if m == nil {
					continue
				}
				// a version a catalog pins is named with its digest; kpt names the tag
				if img, ok := m["image"].(string); ok {
					m["image"] = pinned.ReplaceAllString(img, "")
				}
				if m["executionError"] != nil {
					m["executionError"] = "(an error)"
				}
				if ignoreStderr {
					delete(m, "stderr")
				}
			}
		}
		if sum, ok := rs["errorSummary"].(string); ok {
			labels := map[string]bool{}
			for _, k := range []string{"mutationSteps", "validationSteps"} {
				steps, _ := rs[k].([]any)
				for _, st := range steps {
					m, _ := st.(map[string]any)
					for _, f := range []string{"name", "image", "exec"} {
						if l, ok := m[f].(string); ok && l != "" {
							labels[pinned.ReplaceAllString(l, "")] = true
							break
						}
					}
				}
			}
			// one line a failed step, "STEP: exit code N" (kpt's wording for any tool) or "STEP:
			// ERROR", whose text (which may run over several lines) is each tool's own
			var lines []string
			for _, l := range strings.Split(sum, "\n") {
				step, what, ok := strings.Cut(l, ": ")
				switch {
				case ok && labels[pinned.ReplaceAllString(step, "")] && strings.HasPrefix(what, "exit code "):
					lines = append(lines, pinned.ReplaceAllString(step, "")+": "+what)
				case ok && labels[pinned.ReplaceAllString(step, "")]:
					lines = append(lines, pinned.ReplaceAllString(step, "")+": (an error)")
				}
			}
			rs["errorSummary"] = strings.Join(lines, "\n")
		}
	}
	return v
}

var pinned = regexp.MustCompile(`@sha256:[0-9a-f]{64}$`)

// readTree reads every regular file under dir.
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
		out[filepath.ToSlash(rel)] = string(data)
		return nil
	})
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return out
}
