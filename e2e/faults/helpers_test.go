package faults

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/krm-catalog/krm-catalog/internal/testenv"
)

type syncBuffer = testenv.SyncBuffer

func requirePostgres(t *testing.T) {
	t.Helper()
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(matches) > 0 {
		return
	}
	if _, err := exec.LookPath("pg_ctl"); err == nil {
		return
	}
	testenv.Missing(t, "PostgreSQL", "install it (Debian: apt-get install postgresql)")
}

// dataDir is a temporary directory the postgres user can reach when the tests run as root.
func dataDir(t *testing.T) string { return testenv.TraversableTempDir(t) }

// serveProc is a running `krm-catalog serve`.
type serveProc struct {
	url  string
	cmd  *exec.Cmd
	logs *syncBuffer
	done chan struct{}
}

var servingURL = regexp.MustCompile(`msg=serving url=(http://127\.0\.0\.1:\d+)`)

// startServe runs serve on 127.0.0.1:0 with args (database flags among them) and waits until it
// is ready. It is killed at the end of the test if still running.
func startServe(t *testing.T, env []string, args ...string) *serveProc {
	t.Helper()
	logs := &syncBuffer{}
	// no drain before stopping unless a test asks for one (its own flag comes later and wins)
	cmd := exec.Command(binary, append([]string{"serve", "--addr", "127.0.0.1:0", "--shutdown-delay", "0"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &serveProc{cmd: cmd, logs: logs, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("serve's log:\n%s", lastLines(logs.String(), 60))
		}
	})
	deadline := time.Now().Add(90 * time.Second)
	for p.url == "" {
		if m := servingURL.FindStringSubmatch(logs.String()); m != nil {
			p.url = m[1]
			break
		}
		select {
		case <-p.done:
			t.Fatalf("serve exited:\n%s", logs.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start within 90 s:\n%s", logs.String())
		}
	}
	p.waitStatus(t, "/readyz", http.StatusOK, 30*time.Second)
	return p
}

func (p *serveProc) signal(sig syscall.Signal) { _ = p.cmd.Process.Signal(sig) }

// kill kills serve with SIGKILL and waits for it to exit.
func (p *serveProc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// waitStatus polls path until it answers status, or fails the test after limit.
func (p *serveProc) waitStatus(t *testing.T, path string, status int, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	client := &http.Client{Timeout: 2 * time.Second}
	var last string
	for time.Since(start) < limit {
		resp, err := client.Get(p.url + path)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == status {
				return time.Since(start)
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s did not answer %d within %s (last: %s)", path, status, limit, last)
	return 0
}

// token creates a publisher token with the CLI against the same database.
func token(t *testing.T, publisher string, dbArgs ...string) string {
	t.Helper()
	out, err := exec.Command(binary, append([]string{"token", "create", "--publisher", publisher}, dbArgs...)...).Output()
	if err != nil {
		t.Fatalf("token create: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}

type result struct {
	status int
	header http.Header
	body   []byte
	took   time.Duration
	err    error
}

func request(ctx context.Context, client *http.Client, method, url, token string, body []byte) result {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return result{err: err}
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return result{err: err, took: time.Since(start)}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return result{status: resp.StatusCode, header: resp.Header, body: b, took: time.Since(start), err: err}
}

// postmasterPID reads the embedded cluster's postmaster pid from its data directory.
func postmasterPID(t *testing.T, pgData string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(pgData, "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.SplitN(string(b), "\n", 2)[0])
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// processTree is pid and its children (PostgreSQL's backends and auxiliary processes).
func processTree(pid int) []int {
	out := []int{pid}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", pid, pid))
	if err != nil {
		return out
	}
	for _, f := range strings.Fields(string(b)) {
		if c, err := strconv.Atoi(f); err == nil {
			out = append(out, c)
		}
	}
	return out
}

// peakRSS is a process's peak resident memory (VmHWM), in bytes.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmHWM")
	return 0
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// percentile returns the p-th percentile of durations (sorted in place).
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[int(float64(len(ds)-1)*p)]
}
