// Package storetest gives tests a fresh PostgreSQL database each, cloned
// from a prepared template database, all in one throwaway cluster per test
// binary.
//
// Use it from TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(storetest.Main(m, migrate)) }
//
// and call NewDatabase in each test that needs a database. The cluster is
// started, and prepare run on the template, by the first call of
// NewDatabase, so tests that need no database cost nothing.
//
// Without PostgreSQL installed, NewDatabase skips the test, or fails it when
// the environment variable CI is true.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/krm-catalog/krm-catalog/internal/pgcluster"
	"github.com/krm-catalog/krm-catalog/internal/testenv"
)

const templateName = "storetest_template"

// PrepareFunc prepares the template database, e.g. by running migrations.
// It must close its connections before returning.
type PrepareFunc func(ctx context.Context, databaseURL string) error

// harness is the state shared by Main and NewDatabase, which the testing
// package gives no other way to share.
var harness struct {
	mu         sync.Mutex
	mainCalled bool
	prepare    PrepareFunc
	setUp      bool  // setup ran
	err        error // setup error
	tmpDir     string
	cluster    *pgcluster.Cluster
	admin      *pgx.Conn // to database postgres; guarded by mu
	next       int       // number of the next database; guarded by mu
}

// Main runs the tests and then removes the cluster, returning the exit code
// for os.Exit. prepare, which may be nil, runs once on the template database
// that NewDatabase clones.
func Main(m *testing.M, prepare PrepareFunc) int {
	harness.mu.Lock()
	harness.mainCalled = true
	harness.prepare = prepare
	harness.mu.Unlock()

	code := m.Run()

	if err := teardown(); err != nil {
		fmt.Fprintln(os.Stderr, "storetest:", err)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// NewDatabase creates a database from the template and returns its URL. The
// database is dropped when the test ends. It is safe for parallel tests.
func NewDatabase(t testing.TB) string {
	t.Helper()
	c, err := setup()
	if errors.Is(err, pgcluster.ErrNoBinaries) {
		testenv.Missing(t, "PostgreSQL", "install it (Debian: apt-get install postgresql)")
	}
	if err != nil {
		t.Fatal("storetest:", err)
	}

	harness.mu.Lock()
	harness.next++
	name := fmt.Sprintf("test_%d", harness.next)
	_, err = harness.admin.Exec(t.Context(), "CREATE DATABASE "+name+" TEMPLATE "+templateName)
	harness.mu.Unlock()
	if err != nil {
		t.Fatalf("storetest: create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		// t.Context() is already canceled here.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		harness.mu.Lock()
		defer harness.mu.Unlock()
		if _, err := harness.admin.Exec(ctx, "DROP DATABASE "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("storetest: drop database %s: %v", name, err)
		}
	})
	return c.URL(name)
}

// setup starts the cluster and prepares the template, once.
func setup() (*pgcluster.Cluster, error) {
	harness.mu.Lock()
	defer harness.mu.Unlock()
	if !harness.mainCalled {
		return nil, errors.New("call storetest.Main from TestMain")
	}
	if !harness.setUp {
		harness.setUp = true
		harness.err = setupLocked()
	}
	return harness.cluster, harness.err
}

func setupLocked() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	dir, err := os.MkdirTemp("", "storetest-")
	if err != nil {
		return err
	}
	harness.tmpDir = dir
	if os.Geteuid() == 0 {
		// The server runs as user postgres, which must reach the data
		// directory inside.
		if err := os.Chmod(dir, 0o711); err != nil {
			return err
		}
	}
	opts := pgcluster.Options{DataDir: filepath.Join(dir, "data"), Ephemeral: true}
	if testing.Verbose() {
		opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	c, err := pgcluster.Start(ctx, opts)
	if err != nil {
		return err
	}
	harness.cluster = c
	if harness.admin, err = pgx.Connect(ctx, c.URL("postgres")); err != nil {
		return err
	}
	if _, err := harness.admin.Exec(ctx, "CREATE DATABASE "+templateName); err != nil {
		return fmt.Errorf("create template database: %w", err)
	}
	if harness.prepare != nil {
		if err := harness.prepare(ctx, c.URL(templateName)); err != nil {
			return fmt.Errorf("prepare template database: %w", err)
		}
	}
	if err := waitForNoConnections(ctx, harness.admin); err != nil {
		return err
	}
	// CREATE DATABASE ... TEMPLATE fails while anyone is connected to the
	// template: make sure nobody can.
	if _, err := harness.admin.Exec(ctx, "ALTER DATABASE "+templateName+" WITH ALLOW_CONNECTIONS false IS_TEMPLATE true"); err != nil {
		return fmt.Errorf("lock template database: %w", err)
	}
	return nil
}

// waitForNoConnections waits until the sessions of prepare have ended:
// closing a connection returns before its server process exits.
func waitForNoConnections(ctx context.Context, admin *pgx.Conn) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		var n int
		err := admin.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE datname = $1", templateName).Scan(&n)
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("prepare left %d connection(s) to the template database open; close them before returning", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func teardown() error {
	harness.mu.Lock()
	defer harness.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var errs []error
	if harness.admin != nil {
		errs = append(errs, harness.admin.Close(ctx))
		harness.admin = nil
	}
	if harness.cluster != nil {
		errs = append(errs, harness.cluster.Stop(ctx))
		harness.cluster = nil
	}
	if harness.tmpDir != "" {
		errs = append(errs, os.RemoveAll(harness.tmpDir))
		harness.tmpDir = ""
	}
	return errors.Join(errs...)
}
