//go:build linux

package cluster

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/krm-catalog/krm-catalog/internal/testenv"
)

// proc is a process the test started in a host; t.Cleanup kills its process group.
type proc struct {
	name string
	cmd  *exec.Cmd
	logs *testenv.SyncBuffer
	done chan struct{}
}

// start starts cmd; owner's cleanup kills it (the whole test's, when a subtest restarts a process
// that outlives it).
func start(t, owner *testing.T, name string, cmd *exec.Cmd) *proc {
	t.Helper()
	p := &proc{name: name, cmd: cmd, logs: &testenv.SyncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.logs, p.logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	started := time.Now()
	owner.Cleanup(func() {
		p.kill()
		if owner.Failed() {
			owner.Logf("%s, started %s, output (last lines):\n%s", name, started.Format("15:04:05.000"), lastLines(p.logs.String(), 60))
		}
	})
	return p
}

// kill sends SIGKILL to the process group and waits for the process.
func (p *proc) kill() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

// wait waits up to limit for the process to exit.
func (p *proc) wait(t *testing.T, limit time.Duration) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(limit):
		t.Fatalf("%s did not stop within %s", p.name, limit)
	}
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// pg is PostgreSQL's programs, run as the postgres system user (PostgreSQL will not run as root).
type pg struct {
	bin      string
	uid, gid int
}

func requirePostgres(t *testing.T) *pg {
	t.Helper()
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/postgres")
	u, err := user.Lookup("postgres")
	if len(bins) == 0 || err != nil {
		testenv.Missing(t, "PostgreSQL", "install it (Debian: apt-get install postgresql)")
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &pg{bin: filepath.Dir(bins[len(bins)-1]), uid: uid, gid: gid}
}

// run runs a PostgreSQL program as postgres, outside any host (it needs no network).
func (p *pg) run(t *testing.T, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(p.bin, name), args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(p.uid), Gid: uint32(p.gid)}}
	cmd.Dir = "/"
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// dataDir makes a directory for a cluster, owned by postgres, in a directory it can reach.
func (p *pg) dataDir(t *testing.T, name string) string {
	t.Helper()
	dir := filepath.Join(testenv.TraversableTempDir(t), name)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, p.uid, p.gid); err != nil {
		t.Fatal(err)
	}
	return dir
}

// initPrimary makes a cluster that trusts the hosts' network, for replication too.
func (p *pg) initPrimary(t *testing.T) string {
	t.Helper()
	dir := p.dataDir(t, "primary")
	p.run(t, "initdb", "-D", dir, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-locale", "--no-sync")
	hba := fmt.Sprintf("host all all %s.0/24 trust\nhost replication all %s.0/24 trust\n", subnet, subnet)
	f, err := os.OpenFile(filepath.Join(dir, "pg_hba.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(hba); err != nil {
		t.Fatal(err)
	}
	return dir
}

// serve runs postgres on the data directory in host h, listening on its address.
func (p *pg) serve(t *testing.T, h *host, dir string) *proc {
	t.Helper()
	// the socket outside the data directory, which pg_basebackup copies
	if err := os.MkdirAll(sockDir(dir), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(sockDir(dir), p.uid, p.gid); err != nil {
		t.Fatal(err)
	}
	cmd := h.command(p.uid, p.gid, filepath.Join(p.bin, "postgres"), "-D", dir,
		"-c", "listen_addresses="+h.addr(), "-c", "port=5432", "-c", "unix_socket_directories="+sockDir(dir),
		// durable enough for a test that kills no machine; commits still wait for the standby
		"-c", "fsync=off", "-c", "full_page_writes=off", "-c", "max_connections=200")
	cmd.Dir = "/"
	pr := start(t, t, "postgres on "+h.name, cmd)
	waitFor(t, "postgres on "+h.addr()+" accepts connections", 60*time.Second, func() bool {
		if pr.exited() {
			t.Fatalf("postgres on %s exited:\n%s", h.name, pr.logs.String())
		}
		c, err := pgx.Connect(context.Background(), socketURL(dir, "postgres"))
		if err != nil {
			return false
		}
		c.Close(context.Background())
		return true
	})
	return pr
}

func sockDir(dataDir string) string { return dataDir + "-sock" }

// socketURL reaches the cluster in dataDir through its unix socket, from the test's own namespace.
func socketURL(dataDir, database string) string {
	return fmt.Sprintf("postgres://postgres@/%s?host=%s&port=5432&sslmode=disable", database, sockDir(dataDir))
}

// shutdownDelay is the replicas' --shutdown-delay: many times the test balancer's probe period.
const shutdownDelay = 2 * time.Second

// replica is `krm-catalog serve` in a host.
type replica struct {
	owner *testing.T // the test its processes belong to
	h     *host
	url   string
	args  []string
	p     *proc
}

func startReplica(t *testing.T, h *host, databaseURL string, args ...string) *replica {
	t.Helper()
	r := &replica{owner: t, h: h, url: "http://" + h.addr() + ":8080",
		args: append([]string{"serve", "--addr", h.addr() + ":8080", "--database-url", databaseURL,
			"--shutdown-delay", shutdownDelay.String()}, args...)}
	r.start(t)
	return r
}

func (r *replica) start(t *testing.T) {
	t.Helper()
	cmd := r.h.command(-1, -1, binary, r.args...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	r.p = start(t, r.owner, "serve on "+r.h.name, cmd)
	waitFor(t, "serve on "+r.h.name+" logs that it serves", 60*time.Second, func() bool {
		if r.p.exited() {
			t.Fatalf("serve on %s exited:\n%s", r.h.name, r.p.logs.String())
		}
		return strings.Contains(r.p.logs.String(), "msg=serving")
	})
}

// ready asks /readyz through client.
func (r *replica) ready(client *http.Client) bool {
	resp, err := client.Get(r.url + "/readyz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
