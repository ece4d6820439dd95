//go:build linux

package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/krm-catalog/krm-catalog/internal/testenv"
)

// subnet is the hosts' network; it exists only inside the test's namespaces.
const subnet = "10.231.0"

// network is a bridge in a namespace of its own (the switch) and hosts, each a namespace with one
// veth link to it. Deleting the namespaces (t.Cleanup) removes links and bridge with them.
type network struct {
	t      *testing.T
	prefix string // unique per run: namespaces of concurrent runs never meet
}

// namespacePrefix starts the names of the test's namespaces: krmc<pid of the test>-<random>-...
const namespacePrefix = "krmc"

// host is one namespace on the network, with address subnet.N.
type host struct {
	net  *network
	n    int
	name string
}

func requireNetns(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		testenv.Missing(t, "root", "run the test as root: it makes network namespaces")
	}
	for _, tool := range []string{"ip", "nsenter"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.Missing(t, tool, "install iproute2 and util-linux (Debian: apt-get install iproute2 util-linux)")
		}
	}
}

func newNetwork(t *testing.T) *network {
	t.Helper()
	sweepStale(t)
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	nw := &network{t: t, prefix: fmt.Sprintf("%s%d-%s", namespacePrefix, os.Getpid(), hex.EncodeToString(b))}
	t.Cleanup(nw.remove)
	sw := nw.prefix + "-sw"
	nw.ip("netns", "add", sw)
	nw.ip("-n", sw, "link", "add", "br0", "type", "bridge")
	nw.ip("-n", sw, "link", "set", "br0", "up")
	return nw
}

// sweepStale removes what a run that died without its cleanups (killed, or past go test's
// -timeout) left: its namespaces and the processes in them (PostgreSQL, serve). A namespace is
// stale when the test process its name carries is gone; those of a concurrent run are left alone.
func sweepStale(t *testing.T) {
	t.Helper()
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		t.Fatalf("ip netns list: %v", err)
	}
	var swept []string
	for _, line := range strings.Split(string(out), "\n") {
		name, _, _ := strings.Cut(line, " ")
		rest, ok := strings.CutPrefix(name, namespacePrefix)
		if !ok {
			continue
		}
		pidText, _, ok := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if !ok || err != nil || pid <= 0 || processExists(pid) {
			continue
		}
		pids, _ := exec.Command("ip", "netns", "pids", name).Output()
		for _, f := range strings.Fields(string(pids)) {
			if p, err := strconv.Atoi(f); err == nil {
				_ = syscall.Kill(p, syscall.SIGKILL)
			}
		}
		if err := exec.Command("ip", "netns", "delete", name).Run(); err == nil {
			swept = append(swept, name)
		}
	}
	if len(swept) > 0 {
		t.Logf("removed %d namespaces of earlier runs that died (and their processes): %v", len(swept), swept)
	}
}

// processExists reports whether pid is a live process (one of another user's counts).
func processExists(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// remove deletes every namespace of this run, also after a failure.
func (nw *network) remove() {
	out, _ := exec.Command("ip", "netns", "list").Output()
	for _, line := range strings.Split(string(out), "\n") {
		if name, _, _ := strings.Cut(line, " "); strings.HasPrefix(name, nw.prefix+"-") {
			_ = exec.Command("ip", "netns", "delete", name).Run()
		}
	}
}

func (nw *network) ip(args ...string) {
	nw.t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		nw.t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// host adds host n (address subnet.n) to the network.
func (nw *network) host(n int) *host {
	nw.t.Helper()
	h := &host{net: nw, n: n, name: fmt.Sprintf("%s-h%d", nw.prefix, n)}
	sw := nw.prefix + "-sw"
	port := fmt.Sprintf("p%d", n)
	nw.ip("netns", "add", h.name)
	nw.ip("-n", h.name, "link", "set", "lo", "up")
	nw.ip("-n", h.name, "link", "add", "eth0", "type", "veth", "peer", "name", port, "netns", sw)
	nw.ip("-n", h.name, "addr", "add", h.addr()+"/24", "dev", "eth0")
	nw.ip("-n", h.name, "link", "set", "eth0", "up")
	nw.ip("-n", sw, "link", "set", port, "master", "br0")
	nw.ip("-n", sw, "link", "set", port, "up")
	return h
}

func (h *host) addr() string { return fmt.Sprintf("%s.%d", subnet, h.n) }

// path is the namespace's file, for nsenter and setns.
func (h *host) path() string { return "/run/netns/" + h.name }

// cut takes the host off the network (its switch port down): packets to and from it are lost, as
// when a host or its link dies; its processes keep running.
func (h *host) cut() {
	h.net.ip("-n", h.net.prefix+"-sw", "link", "set", fmt.Sprintf("p%d", h.n), "down")
}

// heal puts the host back.
func (h *host) heal() {
	h.net.ip("-n", h.net.prefix+"-sw", "link", "set", fmt.Sprintf("p%d", h.n), "up")
}

// reboot brings back a host that died: back on the network, with the empty neighbour table of a
// fresh boot (the one it had marks the hosts it failed to reach while cut off as unreachable, and
// the kernel answers "no route to host" for them until it probes again).
func (h *host) reboot() {
	h.heal()
	h.net.ip("-n", h.name, "neigh", "flush", "all")
}

// blackhole drops what the host sends to others (a partition between them); unblackhole ends it.
func (h *host) blackhole(others ...*host) {
	for _, o := range others {
		h.net.ip("-n", h.name, "route", "add", "blackhole", o.addr()+"/32")
	}
}

func (h *host) unblackhole(others ...*host) {
	for _, o := range others {
		h.net.ip("-n", h.name, "route", "del", "blackhole", o.addr()+"/32")
	}
}

// command runs name in the host's namespace (as uid:gid when uid >= 0), in a process group of its
// own so that it and its children can be killed together.
func (h *host) command(uid, gid int, name string, args ...string) *exec.Cmd {
	nsArgs := []string{"--net=" + h.path()}
	if uid >= 0 {
		nsArgs = append(nsArgs, fmt.Sprintf("--setuid=%d", uid), fmt.Sprintf("--setgid=%d", gid))
	}
	cmd := exec.Command("nsenter", append(append(nsArgs, "--", name), args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

// dialer dials from inside a host's namespace: a socket belongs to the namespace of the thread
// that made it, so dials run on goroutines locked to threads that entered the namespace (and that
// the runtime discards when they end, never reusing them).
type dialer struct {
	reqs chan dialReq
	quit chan struct{} // closed by t.Cleanup: the workers end, their threads with them
}

type dialReq struct {
	ctx  context.Context
	addr string
	res  chan dialRes
}

type dialRes struct {
	conn net.Conn
	err  error
}

func (h *host) dialer(t *testing.T, workers int) *dialer {
	t.Helper()
	d := &dialer{reqs: make(chan dialReq), quit: make(chan struct{})}
	ready := make(chan error, workers)
	for range workers {
		go func() {
			runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
			f, err := os.Open(h.path())
			if err != nil {
				ready <- err
				return
			}
			err = unix.Setns(int(f.Fd()), unix.CLONE_NEWNET)
			f.Close()
			if err != nil {
				ready <- fmt.Errorf("setns %s: %w", h.name, err)
				return
			}
			ready <- nil
			for {
				select {
				case <-d.quit:
					return
				case r := <-d.reqs:
					// the transport dials on a context of its own, not the request's: bound a dial
					// to a host that is gone, or it would hold the worker for the kernel's minutes
					nd := net.Dialer{Timeout: 2 * time.Second}
					c, err := nd.DialContext(r.ctx, "tcp", r.addr)
					r.res <- dialRes{c, err}
				}
			}
		}()
	}
	for range workers {
		if err := <-ready; err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { close(d.quit) })
	return d
}

func (d *dialer) DialContext(ctx context.Context, _, addr string) (net.Conn, error) {
	r := dialReq{ctx: ctx, addr: addr, res: make(chan dialRes, 1)}
	select {
	case d.reqs <- r:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-d.quit:
		return nil, net.ErrClosed
	}
	select {
	case res := <-r.res:
		return res.conn, res.err
	case <-ctx.Done():
		go func() {
			if res := <-r.res; res.conn != nil {
				res.conn.Close()
			}
		}()
		return nil, ctx.Err()
	}
}

// waitFor polls cond every 50 ms until it holds or limit passes, and returns how long it took.
func waitFor(t *testing.T, what string, limit time.Duration, cond func() bool) time.Duration {
	t.Helper()
	return waitForWhy(t, what, limit, cond, nil)
}

// waitForWhy is waitFor that, past the limit, also says what why reports (the last failure seen).
func waitForWhy(t *testing.T, what string, limit time.Duration, cond func() bool, why func() string) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > limit {
			if why != nil {
				t.Fatalf("%s: not within %s (at %s); last: %s", what, limit, time.Now().Format("15:04:05.000"), why())
			}
			t.Fatalf("%s: not within %s (at %s)", what, limit, time.Now().Format("15:04:05.000"))
		}
		time.Sleep(50 * time.Millisecond)
	}
	return time.Since(start)
}

// TestSweepStale leaves a namespace as a run that died would (named for a test process that is
// gone, a process still running in it) and checks that the next run removes both, and leaves a
// live run's namespace alone.
func TestSweepStale(t *testing.T) {
	requireNetns(t)
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	stale := fmt.Sprintf("%s%d-000000-h1", namespacePrefix, gone.Process.Pid)
	live := fmt.Sprintf("%s%d-000000-h1", namespacePrefix, os.Getpid())
	for _, name := range []string{stale, live} {
		if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
			t.Fatalf("ip netns add %s: %v\n%s", name, err, out)
		}
		t.Cleanup(func() { _ = exec.Command("ip", "netns", "delete", name).Run() })
	}
	left := exec.Command("ip", "netns", "exec", stale, "sleep", "600")
	if err := left.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		_ = left.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = left.Process.Kill()
		<-exited
	})
	// the process is in the namespace once ip netns pids lists it
	waitFor(t, "the left process in its namespace", 10*time.Second, func() bool {
		out, _ := exec.Command("ip", "netns", "pids", stale).Output()
		return strings.Contains(string(out), strconv.Itoa(left.Process.Pid))
	})
	sweepStale(t)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Error("the process left in the stale namespace still runs")
	}
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), stale) {
		t.Errorf("the stale namespace %s is still there", stale)
	}
	if !strings.Contains(string(out), live) {
		t.Errorf("the live run's namespace %s was removed", live)
	}
}
