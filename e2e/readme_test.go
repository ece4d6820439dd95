package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/krm-catalog/krm-catalog/fn/fntest"
	"github.com/krm-catalog/krm-catalog/internal/testenv"
)

// readmeBlock is a command block of README.md: a ```sh block as it is, or the `$ ` lines of a
// ```console block, each compared with the output the block shows for it.
type readmeBlock struct {
	line   int    // of the opening fence
	script string // the commands
	// from the HTML comment on the line before the fence: "ci: skip: REASON", "ci: background",
	// "ci: wait URL" (after the block, until URL answers)
	skip       string
	background bool
	wait       string
}

var readmeMarker = regexp.MustCompile(`^<!-- ci: (skip: .+|background|wait \S+|background, wait \S+) -->$`)

// readmeBlocks returns the command blocks of a Markdown file, with their markers.
func readmeBlocks(t *testing.T, data []byte) []readmeBlock {
	t.Helper()
	var (
		blocks []readmeBlock
		cur    *readmeBlock
		lang   string
		prev   string
		// the console block's command being read, and the output the README shows for it
		command string
		output  []string
	)
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur == nil && strings.HasPrefix(line, "```"):
			lang = strings.TrimPrefix(line, "```")
			cur = &readmeBlock{line: n}
			if m := readmeMarker.FindStringSubmatch(prev); m != nil && strings.HasPrefix(m[1], "skip: ") {
				cur.skip = strings.TrimPrefix(m[1], "skip: ")
			} else if m != nil {
				for _, part := range strings.Split(m[1], ", ") {
					switch {
					case part == "background":
						cur.background = true
					case strings.HasPrefix(part, "wait "):
						cur.wait = strings.TrimPrefix(part, "wait ")
					}
				}
			} else if strings.HasPrefix(prev, "<!-- ci") {
				t.Errorf("README.md:%d: a ci marker this test does not know: %s", n-1, prev)
			}
		case cur != nil && line == "```":
			if lang == "console" {
				cur.script += consoleCommand(command, output)
				command, output = "", nil
			}
			if lang == "sh" || lang == "console" {
				blocks = append(blocks, *cur)
			}
			cur = nil
		case cur != nil && lang == "sh":
			cur.script += line + "\n"
		case cur != nil && lang == "console" && strings.HasPrefix(line, "$ "):
			cur.script += consoleCommand(command, output)
			command, output = strings.TrimPrefix(line, "$ "), nil
		case cur != nil && lang == "console":
			output = append(output, line)
		}
		prev = line
	}
	return blocks
}

// consoleCommand is the script of a console block's command: as it is when the README shows no
// output for it, else compared with that output.
func consoleCommand(command string, output []string) string {
	if command == "" {
		return ""
	}
	if len(output) == 0 {
		return command + "\n"
	}
	return fmt.Sprintf("diff -u - <(%s 2>&1) <<'README_OUTPUT'\n%s\nREADME_OUTPUT\n", command, strings.Join(output, "\n"))
}

// TestREADME runs every command block of README.md, in order, in one shell, as a newcomer would
// type them from a fresh clone: the service on its embedded default, the example functions'
// server, the walk-through, fn run, build, render. A block that cannot run here says so and why
// in an HTML comment before it (<!-- ci: skip: REASON -->); a block that starts a server is
// marked to run in the background, and the next waits until the server answers. It runs in a
// network namespace of its own, so that the README's fixed ports (8080, 8090, 9445, 5000) are free, on a copy
// of the repository, so that commands that write (fn render) leave the tree alone.
func TestREADME(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and starts the service: not in -short")
	}
	requirePostgres(t)
	for _, tool := range []string{"curl", "unshare", "ip"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.Missing(t, tool, "install it (Debian: apt-get install curl util-linux iproute2)")
		}
	}
	if os.Geteuid() != 0 {
		testenv.Missing(t, "root (for a network namespace of the test's own)", "run the tests as root, as CI does")
	}
	kustomize := fntest.Kustomize(t)
	// the README starts the distribution registry with go run; building it once fills the module
	// cache, which the README's commands then read without the network
	testenv.Tool(t, "registry")

	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := readmeBlocks(t, data)

	tmp := testenv.TraversableTempDir(t)
	repo := filepath.Join(tmp, "repo")
	testenv.CopyTree(t, root, repo)
	goEnv := func(name string) string {
		out, err := exec.Command("go", "env", name).Output()
		if err != nil {
			t.Fatalf("go env %s: %v", name, err)
		}
		return strings.TrimSpace(string(out))
	}
	var script strings.Builder
	// The module cache is the only proxy (the namespace has no network): GOPROXY=off would refuse
	// `go run MODULE/PKG@VERSION`, which looks up the module's deprecation even when it is cached;
	// no checksum database either (what is in the cache was checked when it was downloaded).
	// -e and -u but not pipefail, as in a reader's shell: `curl ... | head` may close the pipe early
	fmt.Fprintf(&script, `set -eu
ip link set lo up
export HOME=%[1]s/home XDG_DATA_HOME=%[1]s/data XDG_CACHE_HOME=%[1]s/cache TMPDIR=%[1]s/tmp
export GOBIN=%[1]s/bin PATH=%[1]s/bin:%[2]s:$PATH
export GOCACHE=%[3]s GOMODCACHE=%[4]s GOPROXY=file://%[4]s/cache/download GOSUMDB=off GOFLAGS=-buildvcs=false GOTOOLCHAIN=local
mkdir -p "$HOME" "$XDG_DATA_HOME" "$XDG_CACHE_HOME" "$TMPDIR"
chmod 755 "$XDG_DATA_HOME"
`, tmp, filepath.Dir(kustomize), goEnv("GOCACHE"), goEnv("GOMODCACHE"))
	ran := 0
	for _, b := range blocks {
		if b.skip != "" {
			t.Logf("README.md:%d: not run: %s", b.line, b.skip)
			continue
		}
		ran++
		fmt.Fprintf(&script, "echo '>>> README.md:%d' >&2\n", b.line)
		if b.background {
			fmt.Fprintf(&script, "(\n%s) &\n", b.script)
		} else {
			script.WriteString(b.script)
		}
		if b.wait != "" {
			// any answer will do (-k: a server of the README may answer https with a certificate of its own)
			fmt.Fprintf(&script, "curl -sSk -o /dev/null --retry 600 --retry-delay 1 --retry-all-errors --max-time 5 %s\n", b.wait)
		}
	}
	if ran < 8 {
		t.Fatalf("only %d README blocks run; the markers skip too much", ran)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	// output to a file: the servers the blocks start outlive the shell until stopped below
	log, err := os.Create(filepath.Join(tmp, "output"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	cmd := exec.CommandContext(ctx, "unshare", "--net", "bash", "-c", script.String())
	cmd.Dir = repo
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	runErr := cmd.Run()
	stopGroup(t, cmd.Process.Pid)
	out, _ := os.ReadFile(log.Name())
	if runErr != nil {
		t.Fatalf("the README's commands failed: %v\n%s", runErr, out)
	}
	t.Logf("output:\n%s", out)
}

// stopGroup stops the processes of process group pgid (servers started in the background) and
// waits until they are gone: SIGTERM, so that serve stops its PostgreSQL, then SIGKILL.
func stopGroup(t *testing.T, pgid int) {
	t.Helper()
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	deadline := time.Now().Add(30 * time.Second)
	for syscall.Kill(-pgid, 0) == nil {
		if time.Now().After(deadline) {
			t.Logf("process group %d still running 30 s after SIGTERM: killed", pgid)
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}
