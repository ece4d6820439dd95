// Package pgcluster runs a private PostgreSQL cluster from the PostgreSQL
// server binaries installed on the machine.
//
// The cluster listens on 127.0.0.1 and on a unix socket in a private
// directory, and trusts every local connection (initdb -A trust): anyone who
// can open a TCP connection to 127.0.0.1 on this machine can connect as the
// superuser "postgres". It is meant for a single-user machine or container;
// use an external server (--database-url) otherwise.
package pgcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ErrNoBinaries reports that no PostgreSQL server binaries (initdb, pg_ctl,
// postgres) were found.
var ErrNoBinaries = errors.New("PostgreSQL server binaries not found: install them (Debian: apt-get install postgresql) or pass --database-url to use an existing server")

// Superuser is the name of the cluster's superuser.
const Superuser = "postgres"

// maxSocketPath is the longest unix socket path used; sun_path holds 108
// bytes on Linux and 104 on macOS.
const maxSocketPath = 100

// Options configures Start.
type Options struct {
	// DataDir is the cluster's data directory. It is created (mode 0700)
	// and initialized if it holds no PG_VERSION file; otherwise its data
	// is reused. Required.
	DataDir string
	// SocketDir is the directory of the unix socket. Default: DataDir/sock,
	// or a fresh directory under os.TempDir (removed by Stop) if the socket
	// path would be longer than about 100 bytes.
	SocketDir string
	// Port is the TCP port on 127.0.0.1. 0 picks a free one.
	Port int
	// BinDir holds initdb, pg_ctl and postgres. Default: the newest
	// /usr/lib/postgresql/*/bin, then `pg_config --bindir`, then the
	// directory of pg_ctl on PATH. When DataDir already holds a cluster,
	// binaries of its major version are preferred.
	BinDir string
	// Ephemeral trades durability for speed (fsync, synchronous_commit and
	// full_page_writes off; initdb --no-sync): a crash of the machine can
	// corrupt the cluster. For tests only.
	Ephemeral bool
	// SocketOnly turns TCP off: the server listens only on its unix socket, in a directory only
	// the cluster's user can enter. With trust authentication, a TCP port on 127.0.0.1 would let
	// any local user in as superuser; the socket does not.
	SocketOnly bool
	// Logger receives progress messages. Default: discard.
	Logger *slog.Logger
	// Supervise watches a server this Cluster starts (or adopts) until Stop, and starts it again
	// when it dies (PostgreSQL then runs crash recovery), with backoff between failed attempts.
	Supervise bool
}

// Cluster is a running PostgreSQL cluster. Its methods are safe for
// concurrent use.
type Cluster struct {
	dataDir    string
	socketDir  string
	host       string // "" to connect through the unix socket
	port       int
	owned      bool
	tempSocket bool // socketDir was made by Start and is removed by Stop
	run        *runner
	logger     *slog.Logger
	unlock     func() // releases the ownership lock

	mu      sync.Mutex
	stopped bool

	opts            Options
	stopSupervising func() // cancels the supervisor and waits for it; nil without one
}

// Start starts a cluster in opts.DataDir, initializing the directory first
// if it holds no cluster yet, and waits until it accepts connections.
//
// The Cluster that starts the server owns it, and holds a lock on
// opts.DataDir until Stop. If another process owns a server on
// opts.DataDir (for example while another process of this program serves
// from the same directory), Start does not start a second one: it waits
// until that server is ready and returns a Cluster that connects to it,
// using the port and socket directory recorded in its postmaster.pid, but
// does not own it: its Owned method reports false, its Stop does nothing,
// and opts.Port, opts.SocketDir, opts.BinDir and opts.Ephemeral are
// ignored. The same happens for a second Start in the same process.
//
// If the owner died without stopping its server, Start adopts the server
// (Owned reports true and Stop stops it) rather than start another. A stale
// postmaster.pid left by a crashed server does not prevent start.
//
// When the effective user is root, the programs run as the "postgres"
// system user (PostgreSQL refuses to run as root), which then must be able
// to reach opts.DataDir; Start creates opts.DataDir and the socket
// directory with mode 0700 and hands them to that user.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	c, err := start(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("start postgres in %s: %w", opts.DataDir, err)
	}
	return c, nil
}

func start(ctx context.Context, opts Options) (*Cluster, error) {
	if opts.DataDir == "" {
		return nil, errors.New("no data directory given")
	}
	if opts.Port < 0 || opts.Port > 65535 {
		return nil, fmt.Errorf("invalid port %d", opts.Port)
	}
	dataDir, err := filepath.Abs(opts.DataDir)
	if err != nil {
		return nil, err
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	logger = logger.With("datadir", dataDir)
	run, err := newRunner()
	if err != nil {
		return nil, err
	}

	// Look for binaries before creating anything, so that a machine
	// without PostgreSQL is left untouched.
	var bins *binaries
	if _, err := os.Stat(dataDir); errors.Is(err, fs.ErrNotExist) {
		if bins, err = findBinaries(ctx, opts.BinDir, ""); err != nil {
			return nil, err
		}
	}
	if err := run.mkdir(dataDir); err != nil {
		return nil, err
	}
	unlock, attached, err := lockOrAttach(ctx, dataDir, logger)
	if err != nil || attached != nil {
		return attached, err
	}
	// We are the owner now: no other process owns a server on dataDir.
	c := &Cluster{dataDir: dataDir, host: "127.0.0.1", owned: true, run: run, logger: logger, unlock: unlock, opts: opts}
	if opts.SocketOnly {
		c.host = ""
	}
	ok := false
	defer func() {
		if !ok {
			unlock()
		}
	}()
	orphan, err := runningServer(ctx, dataDir, logger)
	if err != nil {
		return nil, err
	}

	major, err := dataVersion(dataDir)
	if err != nil {
		return nil, err
	}
	if bins == nil || (major != "" && bins.major != major) {
		if bins, err = findBinaries(ctx, opts.BinDir, major); err != nil {
			return nil, err
		}
	}
	run.binDir = bins.dir

	if orphan != nil {
		// Its owner died: adopt it, so that Stop stops it.
		c.socketDir, c.host, c.port = orphan.socketDir, orphan.host(), orphan.port
		logger.Info("postgres: adopted running server of a dead owner", "pid", orphan.pid, "port", c.port)
		ok = true
		c.supervise()
		return c, nil
	}

	if major == "" {
		// Hand a directory made by someone else (empty, or initdb
		// refuses it) to the server's user.
		if err := run.chown(dataDir); err != nil {
			return nil, err
		}
	}
	if err := run.checkAccess(ctx, dataDir); err != nil {
		return nil, err
	}
	if major == "" {
		t0 := time.Now()
		if err := initdb(ctx, run, dataDir, opts.Ephemeral); err != nil {
			return nil, err
		}
		logger.Info("postgres: initialized data directory", "version", bins.major, "duration", time.Since(t0).Round(time.Millisecond))
	}

	if err := c.prepareSocketDir(ctx, opts.SocketDir); err != nil {
		return nil, err
	}
	if err := run.mkdir(filepath.Join(dataDir, "log")); err != nil {
		c.removeTempSocket()
		return nil, err
	}
	t0 := time.Now()
	if err := c.startServer(ctx, opts); err != nil {
		c.removeTempSocket()
		return nil, err
	}
	logger.Info("postgres: started", "version", bins.major, "port", c.port, "socketdir", c.socketDir, "duration", time.Since(t0).Round(time.Millisecond))
	ok = true
	c.supervise()
	return c, nil
}

// lockOrAttach takes the ownership lock on dataDir, which an owning Cluster
// holds until Stop (and the kernel releases if its process dies). If another
// process holds it, lockOrAttach waits until that process's server is ready
// and returns a Cluster attached to it.
func lockOrAttach(ctx context.Context, dataDir string, logger *slog.Logger) (unlock func(), attached *Cluster, err error) {
	pidPath := filepath.Join(dataDir, "postmaster.pid")
	for logged := false; ; logged = true {
		unlock, err := tryLockDir(dataDir)
		if err != nil || unlock != nil {
			return unlock, nil, err
		}
		pf, err := readPidFile(pidPath)
		if err == nil && pf.port != 0 && pf.ready() && processState(pf.pid) == processPostgres {
			logger.Info("postgres: attached to server owned by another process", "pid", pf.pid, "port", pf.port)
			return nil, &Cluster{dataDir: dataDir, socketDir: pf.socketDir, host: pf.host(), port: pf.port, logger: logger}, nil
		}
		if !logged {
			logger.Info("postgres: waiting for the process owning the data directory to start or stop its server")
		}
		select {
		case <-ctx.Done():
			return nil, nil, fmt.Errorf("another process owns the data directory, but its server is not ready: %w", context.Cause(ctx))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// runningServer returns the postmaster.pid of the server running on
// dataDir, or nil if none is running. It waits while a server is starting
// or stopping, and removes a postmaster.pid whose pid now belongs to an
// unrelated process.
func runningServer(ctx context.Context, dataDir string, logger *slog.Logger) (*pidFile, error) {
	pidPath := filepath.Join(dataDir, "postmaster.pid")
	for {
		pf, err := readPidFile(pidPath)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		switch processState(pf.pid) {
		case processGone:
			// postgres removes it when starting.
			logger.Info("postgres: ignoring stale postmaster.pid", "pid", pf.pid)
			return nil, nil
		case processOther:
			// The pid was reused by an unrelated process, which would
			// make postgres refuse to start.
			logger.Info("postgres: removing stale postmaster.pid", "pid", pf.pid)
			if err := os.Remove(pidPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, err
			}
			return nil, nil
		}
		if pf.ready() {
			if pf.port == 0 {
				return nil, fmt.Errorf("postgres (pid %d) is running but %s names no port", pf.pid, pidPath)
			}
			return &pf, nil
		}
		// Starting, stopping, or postmaster.pid being written.
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("wait for postgres (pid %d, status %q): %w", pf.pid, pf.status, context.Cause(ctx))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func dataVersion(dataDir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, "PG_VERSION"))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

func initdb(ctx context.Context, run *runner, dataDir string, ephemeral bool) error {
	args := []string{"-D", dataDir, "-U", Superuser, "-A", "trust", "-E", "UTF8", "--no-locale"}
	if ephemeral {
		args = append(args, "--no-sync")
	}
	if _, err := run.output(ctx, "initdb", args...); err != nil {
		return err
	}
	return nil
}

func (c *Cluster) prepareSocketDir(ctx context.Context, dir string) error {
	if dir == "" {
		dir = filepath.Join(c.dataDir, "sock")
		if len(dir)+len("/.s.PGSQL.65535") > maxSocketPath {
			tmp, err := os.MkdirTemp("", "pgsock-")
			if err != nil {
				return err
			}
			if err := c.run.chown(tmp); err != nil {
				os.Remove(tmp)
				return err
			}
			c.tempSocket = true
			dir = tmp
		}
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	c.socketDir = dir
	if len(dir)+len("/.s.PGSQL.65535") > maxSocketPath {
		return fmt.Errorf("socket directory %s: path too long for a unix socket", dir)
	}
	if !c.tempSocket {
		if err := c.run.mkdir(dir); err != nil {
			return err
		}
	}
	return c.run.checkAccess(ctx, dir)
}

func (c *Cluster) removeTempSocket() {
	if c.tempSocket {
		os.RemoveAll(c.socketDir)
	}
}

// startServer runs pg_ctl start, retrying with another port if opts.Port
// is 0 and the picked one was taken meanwhile.
func (c *Cluster) startServer(ctx context.Context, opts Options) error {
	logPath := c.LogPath()
	for attempt := 1; ; attempt++ {
		c.port = opts.Port
		if c.port == 0 {
			p, err := freePort()
			if err != nil {
				return err
			}
			c.port = p
		}
		var logOffset int64
		if fi, err := os.Stat(logPath); err == nil {
			logOffset = fi.Size()
		}
		// once the logging collector runs, errors such as a port taken go to its file
		serverLog := c.currentServerLog()
		serverOpts := []string{
			"-p", strconv.Itoa(c.port),
			"-c", "listen_addresses=" + c.host,
			"-c", "unix_socket_directories=" + quoteListItem(c.socketDir),
		}
		serverOpts = append(serverOpts, rotatedLog...)
		if opts.Ephemeral {
			serverOpts = append(serverOpts, "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
		}
		args := []string{"start", "-D", c.dataDir, "-l", logPath, "-w", "-s", "-t", strconv.Itoa(waitSeconds(ctx)), "-o", shellJoin(serverOpts)}
		_, err := c.run.outputDetached(ctx, "pg_ctl", args...)
		if err == nil {
			return nil
		}
		newLog := readFrom(logPath, logOffset) + readFrom(serverLog.path, serverLog.size)
		if ctx.Err() != nil {
			// pg_ctl was killed; the server may still come up.
			c.kill(context.WithoutCancel(ctx))
		}
		if opts.Port == 0 && attempt < 5 && ctx.Err() == nil && portTaken(newLog) {
			c.logger.Info("postgres: port taken, retrying", "port", c.port)
			continue
		}
		return fmt.Errorf("%w\n%s (last lines):\n%s", err, logPath, lastLines(newLog, 20))
	}
}

func (c *Cluster) kill(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := os.Stat(filepath.Join(c.dataDir, "postmaster.pid")); err == nil {
		c.run.output(ctx, "pg_ctl", "stop", "-D", c.dataDir, "-m", "immediate", "-w", "-s")
	}
}

// Stop stops the server with pg_ctl stop -m fast, waits until it has
// exited, and gives up ownership of the data directory. It does nothing if
// the Cluster does not own the server (see Start) or was already stopped.
func (c *Cluster) Stop(ctx context.Context) error {
	if !c.owned {
		return nil
	}
	if c.stopSupervising != nil {
		c.stopSupervising() // else it would start the server we stop
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return nil
	}
	if pf, err := readPidFile(filepath.Join(c.dataDir, "postmaster.pid")); err == nil {
		if _, err := c.run.output(ctx, "pg_ctl", "stop", "-D", c.dataDir, "-m", "fast", "-w", "-s", "-t", strconv.Itoa(waitSeconds(ctx))); err != nil {
			return fmt.Errorf("stop postgres in %s: %w", c.dataDir, err)
		}
		// pg_ctl returns once postmaster.pid is gone, a moment before the process itself
		for deadline := time.Now().Add(10 * time.Second); processState(pf.pid) != processGone && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
	}
	c.stopped = true
	c.unlock()
	c.removeTempSocket()
	c.logger.Info("postgres: stopped")
	return nil
}

// URL returns a URL for connecting to database as the superuser, for
// example postgres://postgres@127.0.0.1:5432/db?sslmode=disable.
func (c *Cluster) URL(database string) string {
	u := url.URL{Scheme: "postgres", User: url.User(Superuser), Path: "/" + database, RawPath: "/" + url.PathEscape(database)}
	q := url.Values{"sslmode": {"disable"}}
	if c.host == "" {
		q.Set("host", c.socketDir)
		q.Set("port", strconv.Itoa(c.port))
	} else {
		u.Host = net.JoinHostPort(c.host, strconv.Itoa(c.port))
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// Owned reports whether this Cluster started the server, and so whether Stop
// stops it.
func (c *Cluster) Owned() bool { return c.owned }

// DataDir returns the absolute path of the data directory.
func (c *Cluster) DataDir() string { return c.dataDir }

// SocketDir returns the directory of the server's unix socket.
func (c *Cluster) SocketDir() string { return c.socketDir }

// Port returns the server's port.
func (c *Cluster) Port() int { return c.port }

// LogPath returns the path of the server log written by clusters that
// Start started.
func (c *Cluster) LogPath() string { return filepath.Join(c.dataDir, "log", "postgresql.log") }

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pick a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func portTaken(log string) bool {
	return strings.Contains(log, "could not bind") || strings.Contains(log, "Address already in use")
}

// waitSeconds returns the pg_ctl -t timeout for ctx.
func waitSeconds(ctx context.Context) int {
	if d, ok := ctx.Deadline(); ok {
		return max(1, int(time.Until(d).Seconds()))
	}
	return 300
}

func readFrom(path string, offset int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	b, _ := io.ReadAll(io.NewSectionReader(f, offset, 1<<20))
	return string(b)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// quoteListItem quotes s as an element of a PostgreSQL list setting such as
// unix_socket_directories.
func quoteListItem(s string) string {
	if !strings.ContainsAny(s, ", \t\n\r\"") {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

// shellJoin quotes args for sh, which pg_ctl passes its -o options through.
func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// lookupPostgresUser returns the user the server runs as when we are root.
func lookupPostgresUser() (*user.User, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root needs a \"postgres\" system user to run the server as (Debian: apt-get install postgresql creates it): %w", err)
	}
	return u, nil
}
