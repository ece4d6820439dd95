//go:build unix

package pgcluster

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/krm-catalog/krm-catalog/internal/testenv"
)

// tempDir returns a directory for a data directory. As root, the server
// runs as postgres, which must be able to reach it: t.TempDir makes its
// directories 0700.
func tempDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if os.Geteuid() == 0 {
		for _, d := range []string{filepath.Dir(dir), dir} {
			if err := os.Chmod(d, 0o711); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

// requirePostgres skips the test if PostgreSQL is not installed, or fails it
// if $CI is true.
func requirePostgres(t *testing.T) {
	t.Helper()
	_, err := findBinaries(t.Context(), "", "")
	if err == nil {
		return
	}
	testenv.Missing(t, "PostgreSQL", fmt.Sprintf("install it (Debian: apt-get install postgresql): %v", err))
}

// startT starts a cluster and stops it at the end of the test. Without
// PostgreSQL it skips the test, or fails it if $CI is true.
func startT(t *testing.T, opts Options) *Cluster {
	t.Helper()
	c, err := Start(t.Context(), opts)
	if errors.Is(err, ErrNoBinaries) {
		requirePostgres(t)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return c
}

func connect(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func queryString(t *testing.T, url, sql string) string {
	t.Helper()
	var s string
	if err := connect(t, url).QueryRow(t.Context(), sql).Scan(&s); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return s
}

func TestRestartKeepsData(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := filepath.Join(tempDir(t), "data")

	t0 := time.Now()
	c := startT(t, Options{DataDir: dir})
	t.Logf("first Start (initdb + start): %v", time.Since(t0))
	if !c.Owned() {
		t.Fatal("fresh cluster not owned")
	}
	if got := queryString(t, c.URL("postgres"), "SHOW fsync"); got != "on" {
		t.Errorf("fsync = %s, want on", got)
	}
	if got := queryString(t, c.URL("postgres"), "SHOW listen_addresses"); got != "127.0.0.1" {
		t.Errorf("listen_addresses = %s, want 127.0.0.1", got)
	}
	conn := connect(t, c.URL("postgres"))
	if _, err := conn.Exec(ctx, "CREATE TABLE kv (k text PRIMARY KEY, v text)"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "INSERT INTO kv VALUES ('answer', '42')"); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	t0 = time.Now()
	if err := c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("Stop: %v", time.Since(t0))
	if err := c.Stop(ctx); err != nil {
		t.Errorf("second Stop: %v", err)
	}

	t0 = time.Now()
	c = startT(t, Options{DataDir: dir})
	t.Logf("second Start (existing data): %v", time.Since(t0))
	if !c.Owned() {
		t.Fatal("restarted cluster not owned")
	}
	if got := queryString(t, c.URL("postgres"), "SELECT v FROM kv WHERE k = 'answer'"); got != "42" {
		t.Errorf("after restart: v = %q, want 42", got)
	}
}

func TestAttachToRunningServer(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(tempDir(t), "data")
	c := startT(t, Options{DataDir: dir, Ephemeral: true})
	if got := queryString(t, c.URL("postgres"), "SHOW fsync"); got != "off" {
		t.Errorf("ephemeral: fsync = %s, want off", got)
	}

	t0 := time.Now()
	a := startT(t, Options{DataDir: dir, Port: 1, BinDir: t.TempDir()}) // options ignored
	t.Logf("attaching Start: %v", time.Since(t0))
	if a.Owned() {
		t.Error("attached cluster is owned")
	}
	if a.Port() != c.Port() || a.SocketDir() != c.SocketDir() || a.URL("x") != c.URL("x") {
		t.Errorf("attached to port %d, socket dir %s; want %d, %s", a.Port(), a.SocketDir(), c.Port(), c.SocketDir())
	}
	queryString(t, a.URL("postgres"), "SELECT 'ok'")
	if err := a.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	queryString(t, c.URL("postgres"), "SELECT 'still running'")
}

// TestAdoptOrphanedServer starts a server from a child process that exits
// without stopping it, as a crashing owner would.
func TestAdoptOrphanedServer(t *testing.T) {
	t.Parallel()
	requirePostgres(t)
	dir := filepath.Join(tempDir(t), "data")
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestHelperStartAndExit$")
	cmd.Env = append(os.Environ(), "PGCLUSTER_HELPER_DATADIR="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	pf, err := readPidFile(filepath.Join(dir, "postmaster.pid"))
	if err != nil || processState(pf.pid) != processPostgres {
		t.Fatalf("no orphaned server: %+v, %v", pf, err)
	}

	c := startT(t, Options{DataDir: dir})
	if !c.Owned() || c.Port() != pf.port {
		t.Fatalf("Owned() = %v, port %d; want adopted server on port %d", c.Owned(), c.Port(), pf.port)
	}
	queryString(t, c.URL("postgres"), "SELECT 'ok'")
	if err := c.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "postmaster.pid")); !errors.Is(err, fs.ErrNotExist) || processState(pf.pid) != processGone {
		t.Errorf("adopted server still running after Stop: %v", err)
	}
}

func TestHelperStartAndExit(t *testing.T) {
	dir := os.Getenv("PGCLUSTER_HELPER_DATADIR")
	if dir == "" {
		t.Skip("helper process for TestAdoptOrphanedServer")
	}
	if _, err := Start(t.Context(), Options{DataDir: dir, Ephemeral: true}); err != nil {
		t.Fatal(err)
	}
	os.Exit(0)
}

func TestConcurrentStart(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(tempDir(t), "data")
	requirePostgres(t)
	var (
		wg       sync.WaitGroup
		clusters [3]*Cluster
		errs     [3]error
	)
	for i := range clusters {
		wg.Go(func() { clusters[i], errs[i] = Start(t.Context(), Options{DataDir: dir, Ephemeral: true}) })
	}
	wg.Wait()
	for _, c := range clusters {
		if c != nil {
			t.Cleanup(func() { c.Stop(context.Background()) })
		}
	}
	if err := errors.Join(errs[:]...); err != nil {
		t.Fatal(err)
	}
	owners := 0
	for _, c := range clusters {
		if c.Owned() {
			owners++
		}
		if c.Port() != clusters[0].Port() {
			t.Errorf("ports %d and %d", c.Port(), clusters[0].Port())
		}
	}
	if owners != 1 {
		t.Errorf("%d of %d clusters own the server, want 1", owners, len(clusters))
	}
}

func TestStalePidFile(t *testing.T) {
	t.Parallel()
	exited := exec.Command("true")
	if err := exited.Run(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		pid  int
	}{
		{"dead process", exited.Process.Pid},
		{"pid reused by another program", os.Getpid()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(tempDir(t), "data")
			c := startT(t, Options{DataDir: dir, Ephemeral: true})
			if err := c.Stop(t.Context()); err != nil {
				t.Fatal(err)
			}
			// What a server killed by the OOM killer leaves behind.
			pid := fmt.Sprintf("%d\n%s\n1700000000\n%d\n%s\n127.0.0.1\n  1234567  32768\nready   \n", tc.pid, dir, c.Port(), c.SocketDir())
			pidPath := filepath.Join(dir, "postmaster.pid")
			if err := os.WriteFile(pidPath, []byte(pid), 0o600); err != nil {
				t.Fatal(err)
			}
			// Owned by the server's user, as if the server had written it.
			fi, err := os.Stat(dir)
			if err != nil {
				t.Fatal(err)
			}
			st := fi.Sys().(*syscall.Stat_t)
			if err := os.Chown(pidPath, int(st.Uid), int(st.Gid)); err != nil {
				t.Fatal(err)
			}
			c = startT(t, Options{DataDir: dir, Ephemeral: true})
			if !c.Owned() {
				t.Fatal("attached to a stale postmaster.pid")
			}
			queryString(t, c.URL("postgres"), "SELECT 'ok'")
		})
	}
}

func TestSocketDir(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		dataDir    func(base string) string
		socketDir  func(base string) string
		wantInData bool
		wantTemp   bool
	}{
		{
			name:       "default",
			dataDir:    func(base string) string { return filepath.Join(base, "data") },
			socketDir:  func(string) string { return "" },
			wantInData: true,
		},
		{
			name:      "long data dir path",
			dataDir:   func(base string) string { return filepath.Join(base, strings.Repeat("d", 60), strings.Repeat("e", 60)) },
			socketDir: func(string) string { return "" },
			wantTemp:  true,
		},
		{
			name:      "explicit, with space, comma and quotes",
			dataDir:   func(base string) string { return filepath.Join(base, "data") },
			socketDir: func(base string) string { return filepath.Join(base, `s o,c"k's`) },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			base := tempDir(t)
			c := startT(t, Options{DataDir: tc.dataDir(base), SocketDir: tc.socketDir(base), Ephemeral: true})
			sock := filepath.Join(c.SocketDir(), fmt.Sprintf(".s.PGSQL.%d", c.Port()))
			if _, err := os.Stat(sock); err != nil {
				t.Fatalf("no socket: %v", err)
			}
			if inData := strings.HasPrefix(c.SocketDir(), c.DataDir()+"/"); inData != tc.wantInData {
				t.Errorf("socket dir %s: inside data dir = %v, want %v", c.SocketDir(), inData, tc.wantInData)
			}
			if tc.socketDir(base) != "" && c.SocketDir() != tc.socketDir(base) {
				t.Errorf("socket dir %s, want %s", c.SocketDir(), tc.socketDir(base))
			}
			// Attach, which reads the socket dir from postmaster.pid.
			a := startT(t, Options{DataDir: tc.dataDir(base)})
			if a.SocketDir() != c.SocketDir() {
				t.Errorf("attached: socket dir %q, want %q", a.SocketDir(), c.SocketDir())
			}
			if err := c.Stop(t.Context()); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(c.SocketDir()); tc.wantTemp != errors.Is(err, fs.ErrNotExist) {
				t.Errorf("after Stop: stat socket dir: %v; want removed = %v", err, tc.wantTemp)
			}
		})
	}
}

func TestPortTaken(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	dir := filepath.Join(tempDir(t), "data")
	port := l.Addr().(*net.TCPAddr).Port
	c, err := Start(t.Context(), Options{DataDir: dir, Port: port, Ephemeral: true})
	if errors.Is(err, ErrNoBinaries) {
		requirePostgres(t)
	}
	if err == nil {
		c.Stop(t.Context())
		t.Fatal("started on a taken port")
	}
	t.Log(err)
	for _, want := range []string{"start postgres in " + dir + ": ", "postgresql.log (last lines)", "could not bind"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not contain %q", want)
		}
	}
}

func TestMissingBinaries(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		binDir func(t *testing.T) string
	}{
		{"empty dir", func(t *testing.T) string { return t.TempDir() }},
		{"no such dir", func(t *testing.T) string { return filepath.Join(t.TempDir(), "nope") }},
		{"no postgres", func(t *testing.T) string {
			dir := t.TempDir()
			for _, name := range []string{"initdb", "pg_ctl"} {
				if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			return dir
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dataDir := filepath.Join(t.TempDir(), "data")
			_, err := Start(t.Context(), Options{DataDir: dataDir, BinDir: tc.binDir(t)})
			if !errors.Is(err, ErrNoBinaries) {
				t.Fatalf("got %v, want ErrNoBinaries", err)
			}
			if !strings.Contains(err.Error(), "apt-get install postgresql") || !strings.Contains(err.Error(), "--database-url") {
				t.Errorf("error does not say how to install PostgreSQL: %v", err)
			}
			if _, err := os.Stat(dataDir); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("data dir created: %v", err)
			}
		})
	}
}

func TestURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		c    *Cluster
		db   string
		want string
	}{
		{&Cluster{host: "127.0.0.1", port: 5432}, "app", "postgres://postgres@127.0.0.1:5432/app?sslmode=disable"},
		{&Cluster{host: "::1", port: 5432}, "app", "postgres://postgres@[::1]:5432/app?sslmode=disable"},
		{&Cluster{host: "127.0.0.1", port: 5432}, "a b/c", "postgres://postgres@127.0.0.1:5432/a%20b%2Fc?sslmode=disable"},
		{&Cluster{socketDir: "/run/pg", port: 5433}, "app", "postgres://postgres@/app?host=%2Frun%2Fpg&port=5433&sslmode=disable"},
	} {
		if got := tc.c.URL(tc.db); got != tc.want {
			t.Errorf("URL(%q) = %s, want %s", tc.db, got, tc.want)
		}
		if _, err := pgx.ParseConfig(tc.c.URL(tc.db)); err != nil {
			t.Errorf("pgx cannot parse %s: %v", tc.c.URL(tc.db), err)
		}
	}
}

func TestSocketOnly(t *testing.T) {
	t.Parallel()
	c := startT(t, Options{DataDir: filepath.Join(tempDir(t), "data"), SocketOnly: true, Ephemeral: true})
	dbURL := c.URL("postgres")
	if !strings.Contains(dbURL, "host="+url.QueryEscape(c.SocketDir())) {
		t.Errorf("URL %s does not name the socket directory", dbURL)
	}
	if got := queryString(t, dbURL, "SHOW listen_addresses"); got != "" {
		t.Errorf("listen_addresses = %q, want none", got)
	}
	if conn, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(c.Port())), time.Second); err == nil {
		conn.Close()
		t.Errorf("port %d accepts TCP connections", c.Port())
	}
}
