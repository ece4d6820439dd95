package testenv

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// toolScripts are the scripts under .ci that build each tool from the Go module proxy at the
// version CI pins.
var toolScripts = map[string]string{
	"kustomize": ".ci/tools-fn.sh",
	"oras":      ".ci/tools.sh",
	"cosign-v2": ".ci/tools.sh",
	"cosign-v3": ".ci/tools.sh",
	"registry":  ".ci/tools.sh",
}

// built remembers, per script, the directory it printed (or its failure), for the test process.
var built sync.Map // script -> *toolDir

type toolDir struct {
	once sync.Once
	dir  string
	err  error
}

// Tool returns a CLI the tests interoperate with (kustomize, oras, cosign-v2, cosign-v3), at the
// version CI pins: from $KRM_CATALOG_TOOLS_BIN, else from the CI tools cache
// (~/.cache/krm-catalog-ci/bin). When it is not there yet, Tool builds it there with the .ci script
// that pins it (minutes, once per machine; the module proxy must be reachable), so that a fresh
// machine skips nothing Go can build. One that cannot be built is Missing.
func Tool(t testing.TB, name string) string {
	t.Helper()
	script, ok := toolScripts[name]
	if !ok {
		t.Fatalf("testenv.Tool: no script builds %q", name)
	}
	v, _ := built.LoadOrStore(script, &toolDir{})
	td := v.(*toolDir)
	td.once.Do(func() {
		root, err := repoRoot()
		if err != nil {
			td.err = err
			return
		}
		td.dir, td.err = runToolScript(root, script, toolsDir())
	})
	if td.err != nil {
		Missing(t, name, fmt.Sprintf("building it failed (%v); build it with %s", td.err, script))
		return ""
	}
	p := filepath.Join(td.dir, name)
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm()&0o111 == 0 {
		Missing(t, name, fmt.Sprintf("%s did not build it into %s", script, td.dir))
	}
	return p
}

// ToolsDir is where the .ci scripts build the tools: $KRM_CATALOG_TOOLS_BIN, else the CI tools
// cache (~/.cache/krm-catalog-ci/bin).
func ToolsDir() string { return toolsDir() }

// toolsDir is $KRM_CATALOG_TOOLS_BIN, else the CI tools cache.
func toolsDir() string {
	if dir := os.Getenv("KRM_CATALOG_TOOLS_BIN"); dir != "" {
		return dir
	}
	home, err := os.UserHomeDir()
	if err != nil {
		home = os.TempDir()
	}
	return filepath.Join(home, ".cache", "krm-catalog-ci", "bin")
}

// runToolScript runs the tools script of the repository at root, building into dir, with a lock on
// dir so that the test processes of several packages do not build the same tool at once.
func runToolScript(root, script, dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", err
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) //nolint:errcheck // closing releases it too
	cmd := exec.Command(filepath.Join(root, script))
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "KRM_CATALOG_TOOLS_BIN="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s: %w: %s", script, err, lastLine(stderr.String()))
	}
	return strings.TrimSpace(lastLine(string(out))), nil
}

// repoRoot is the directory of the repository's go.mod, above the test's working directory.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && bytes.HasPrefix(data, []byte("module github.com/krm-catalog/krm-catalog\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no krm-catalog go.mod above the working directory")
		}
		dir = parent
	}
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	return s[strings.LastIndexByte(s, '\n')+1:]
}
