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
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/krm-catalog/krm-catalog/fn/fntest"
	"github.com/krm-catalog/krm-catalog/internal/testenv"
)

// readmeBlock is a command block of a page (README.md, a guide page): a ```sh block as it is, or
// the `$ ` lines of a ```console block, each compared with the output the block shows for it.
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

// notRun are fence languages of shell commands that TestREADME would pass over: a page writes
// commands as ```sh (or ```console, with their output) so that they run.
var notRun = map[string]bool{"bash": true, "shell": true, "zsh": true, "shell-session": true, "sh-session": true}

// readmeBlocks returns the command blocks of the Markdown page name, with their markers, and what
// is wrong with the page's blocks: a marker this test does not know, a marker before no fence, a
// shell block in a language that does not run.
func readmeBlocks(name string, data []byte) (blocks []readmeBlock, problems []string) {
	var (
		cur  *readmeBlock
		lang string
		prev string
		// the console block's command being read, and the output the page shows for it
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
				problems = append(problems, fmt.Sprintf("%s:%d: a ci marker this test does not know: %s", name, n-1, prev))
			}
			if notRun[lang] {
				problems = append(problems, fmt.Sprintf("%s:%d: a ```%s block does not run: write ```sh (or ```console with its output), with a <!-- ci: skip: REASON --> marker if it cannot run in CI", name, n, lang))
			}
		case cur == nil && strings.HasPrefix(prev, "<!-- ci"):
			problems = append(problems, fmt.Sprintf("%s:%d: a ci marker before no code block: %s", name, n-1, prev))
		case cur != nil && line == "```":
			if lang == "console" {
				cur.script += consoleCommand(command, output)
				command, output = "", nil
			}
			if lang == "sh" || lang == "console" {
				blocks = append(blocks, *cur)
			} else if cur.skip != "" || cur.background || cur.wait != "" {
				problems = append(problems, fmt.Sprintf("%s:%d: a ci marker on a ```%s block, which never runs", name, cur.line-1, lang))
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
	if cur != nil {
		problems = append(problems, fmt.Sprintf("%s:%d: a code block that never closes", name, cur.line))
	}
	return blocks, problems
}

var guideLink = regexp.MustCompile(`\]\((guide/[^)#]+\.md)\)`)

// docPages returns the pages whose commands TestREADME runs, in the order it runs them, as paths
// from the repository's root: README.md, then the user guide's pages in the order docs/README.md
// lists them.
func docPages(t *testing.T, root string) []string {
	t.Helper()
	index, err := os.ReadFile(filepath.Join(root, "docs", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages := []string{"README.md"}
	seen := map[string]bool{}
	for _, m := range guideLink.FindAllStringSubmatch(string(index), -1) {
		if p := "docs/" + m[1]; !seen[p] {
			seen[p] = true
			pages = append(pages, p)
		}
	}
	return pages
}

// TestDocBlocks holds the pages TestREADME runs to what it can run: every guide page is in the
// index's order, every shell block runs or says why not, each guide page says what it expects
// running before its commands.
func TestDocBlocks(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	pages := docPages(t, root)
	onDisk, err := filepath.Glob(filepath.Join(root, "docs", "guide", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range onDisk {
		rel, _ := filepath.Rel(root, p)
		if !slices.Contains(pages, filepath.ToSlash(rel)) {
			t.Errorf("%s is not linked from docs/README.md's user guide, so TestREADME does not run it", rel)
		}
	}
	for _, page := range pages {
		data, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			t.Fatal(err)
		}
		blocks, problems := readmeBlocks(page, data)
		for _, p := range problems {
			t.Error(p)
		}
		runs := slices.ContainsFunc(blocks, func(b readmeBlock) bool { return b.skip == "" })
		if strings.HasPrefix(page, "docs/guide/") && runs && !expects.MatchString(firstLines(string(data), 6)) {
			t.Errorf("%s: a page with commands says in its first lines what it expects running (a paragraph starting \"Expects\")", page)
		}
	}
}

var expects = regexp.MustCompile(`(?m)^Expects`)

// firstLines returns the first n lines of s.
func firstLines(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "\n")
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

// TestREADME runs every command block of README.md and then of the user guide's pages (in the
// order docs/README.md lists them), in order, in one shell, as a newcomer would type them from a
// fresh clone: the service on its embedded default, the example functions' server, the
// walk-throughs. What one page starts or sets (the servers, TOKEN) the next pages
// use; each page starts at the clone's root. A block that cannot run here says so and why in an
// HTML comment before it (<!-- ci: skip: REASON -->); a block that starts a server is marked to
// run in the background, and the next waits until the server answers. It runs in a network
// namespace of its own, so that the pages' fixed ports (8080, 8090, 9445, 5000) are free, on a copy of
// the repository, so that commands that write (fn render) leave the tree alone.
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
	ran := map[string]int{}
	for _, page := range docPages(t, root) {
		data, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			t.Fatal(err)
		}
		blocks, problems := readmeBlocks(page, data)
		for _, p := range problems {
			t.Error(p)
		}
		// every page starts where a reader opens a terminal: the clone's root
		fmt.Fprintf(&script, "cd %q\n", repo)
		for _, b := range blocks {
			if b.skip != "" {
				t.Logf("%s:%d: not run: %s", page, b.line, b.skip)
				continue
			}
			ran[page]++
			fmt.Fprintf(&script, "echo '>>> %s:%d' >&2\n", page, b.line)
			if b.background {
				fmt.Fprintf(&script, "(\n%s) &\n", b.script)
			} else {
				script.WriteString(b.script)
			}
			if b.wait != "" {
				// any answer will do (-k: a server a page starts may answer https with a certificate of its own)
				fmt.Fprintf(&script, "curl -sSk -o /dev/null --retry 600 --retry-delay 1 --retry-all-errors --max-time 5 %s\n", b.wait)
			}
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	if ran["README.md"] < 2 || len(ran) < 8 {
		t.Fatalf("blocks run by page: %v; the markers skip too much", ran)
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
		t.Fatalf("the pages' commands failed: %v\n%s", runErr, out)
	}
	t.Logf("blocks run by page: %v; output:\n%s", ran, out)
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

func TestReadmeBlocks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		page     string
		blocks   []readmeBlock
		problems []string
	}{
		{
			name: "sh and console run; yaml does not",
			page: "```sh\necho a\n```\n\n```console\n$ echo b\nb\n```\n\n```yaml\na: b\n```\n",
			blocks: []readmeBlock{
				{line: 1, script: "echo a\n"},
				{line: 5, script: "diff -u - <(echo b 2>&1) <<'README_OUTPUT'\nb\nREADME_OUTPUT\n"},
			},
		},
		{
			name: "markers",
			page: "<!-- ci: skip: a remote registry -->\n```sh\npush\n```\n<!-- ci: background, wait http://127.0.0.1:1/ -->\n```sh\nserve\n```\n",
			blocks: []readmeBlock{
				{line: 2, script: "push\n", skip: "a remote registry"},
				{line: 6, script: "serve\n", background: true, wait: "http://127.0.0.1:1/"},
			},
		},
		{
			name:     "a shell block in a language that does not run",
			page:     "```bash\necho a\n```\n",
			problems: []string{"p.md:1: a ```bash block does not run: write ```sh (or ```console with its output), with a <!-- ci: skip: REASON --> marker if it cannot run in CI"},
		},
		{
			name:     "a skip without a reason",
			page:     "<!-- ci: skip: -->\n```sh\necho a\n```\n",
			blocks:   []readmeBlock{{line: 2, script: "echo a\n"}},
			problems: []string{"p.md:1: a ci marker this test does not know: <!-- ci: skip: -->"},
		},
		{
			name:     "a marker before prose",
			page:     "<!-- ci: skip: why -->\ntext\n",
			problems: []string{"p.md:1: a ci marker before no code block: <!-- ci: skip: why -->"},
		},
		{
			name:     "a marker on a block that never runs",
			page:     "<!-- ci: skip: why -->\n```yaml\na: b\n```\n",
			problems: []string{"p.md:1: a ci marker on a ```yaml block, which never runs"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			blocks, problems := readmeBlocks("p.md", []byte(tt.page))
			if diff := cmp.Diff(tt.blocks, blocks, cmp.AllowUnexported(readmeBlock{})); diff != "" {
				t.Errorf("blocks (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.problems, problems); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}
