//go:build unix

package pgcluster

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/krm-catalog/krm-catalog/internal/testenv"
)

// TestSuperviseRestartsKilledServer kills the postmaster with SIGKILL, twice, and checks that the
// supervisor starts it again (crash recovery keeps committed data), logging each death once; and
// that the server's log goes to the rotated files.
func TestSuperviseRestartsKilledServer(t *testing.T) {
	t.Parallel()
	requirePostgres(t)
	var logs testenv.SyncBuffer
	c := startT(t, Options{DataDir: filepath.Join(tempDir(t), "data"), Supervise: true, SocketOnly: true,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	url := c.URL("postgres")
	if _, err := connect(t, url).Exec(t.Context(), "CREATE TABLE kept (v int); INSERT INTO kept VALUES (42)"); err != nil {
		t.Fatal(err)
	}
	for round := 1; round <= 2; round++ {
		pf, err := readPidFile(filepath.Join(c.DataDir(), "postmaster.pid"))
		if err != nil {
			t.Fatal(err)
		}
		if err := syscall.Kill(pf.pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(60 * time.Second)
		for {
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
			conn, err := pgx.Connect(ctx, url)
			if err == nil {
				var v int
				err = conn.QueryRow(ctx, "SELECT v FROM kept").Scan(&v)
				conn.Close(ctx)
				cancel()
				if err != nil || v != 42 {
					t.Fatalf("after the restart: %d, %v", v, err)
				}
				break
			}
			cancel()
			if time.Now().After(deadline) {
				t.Fatalf("round %d: the server did not come back within 60 s: %v\n%s", round, err, logs.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
		for !strings.Contains(logs.String(), "server back") || strings.Count(logs.String(), "server back") < round {
			if time.Now().After(deadline) {
				t.Fatalf("no 'server back' line:\n%s", logs.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if n := strings.Count(logs.String(), "server died"); n != 2 {
		t.Errorf("%d 'server died' lines for 2 deaths:\n%s", n, logs.String())
	}
	matches, _ := filepath.Glob(filepath.Join(c.DataDir(), "log", "server-*.log"))
	if len(matches) == 0 {
		entries, _ := os.ReadDir(filepath.Join(c.DataDir(), "log"))
		t.Errorf("no rotated server log in %s: %v", filepath.Join(c.DataDir(), "log"), entries)
	}
}
