package storetest_test

import (
	"context"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/krm-catalog/krm-catalog/store/storetest"
)

func TestMain(m *testing.M) {
	os.Exit(storetest.Main(m, prepare))
}

func prepare(ctx context.Context, databaseURL string) error {
	conn, err := pgx.Connect(ctx, databaseURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `
		CREATE TABLE items (name text PRIMARY KEY);
		INSERT INTO items VALUES ('seed');`)
	return err
}

func connect(t testing.TB, databaseURL string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), databaseURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func items(t testing.TB, conn *pgx.Conn) []string {
	t.Helper()
	rows, err := conn.Query(t.Context(), "SELECT name FROM items ORDER BY name")
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// TestIsolation runs two parallel tests that both write to their database
// before either reads it.
func TestIsolation(t *testing.T) {
	var (
		inserted sync.WaitGroup
		mu       sync.Mutex
		urls     = map[string]bool{}
	)
	inserted.Add(2)
	for _, name := range []string{"a", "b"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var once sync.Once
			done := func() { once.Do(inserted.Done) }
			defer done() // also if skipped or failed early

			t0 := time.Now()
			u := storetest.NewDatabase(t)
			t.Logf("NewDatabase: %v", time.Since(t0))
			mu.Lock()
			if urls[u] {
				t.Errorf("URL %s handed out twice", u)
			}
			urls[u] = true
			mu.Unlock()

			conn := connect(t, u)
			if _, err := conn.Exec(t.Context(), "INSERT INTO items VALUES ($1)", name); err != nil {
				t.Fatal(err)
			}
			done()
			inserted.Wait()
			if got := items(t, conn); len(got) != 2 || got[0] != name || got[1] != "seed" {
				t.Errorf("items = %q, want [%s seed]", got, name)
			}
		})
	}
}

func TestDatabaseDroppedAfterTest(t *testing.T) {
	var u string
	t.Run("user", func(t *testing.T) { u = storetest.NewDatabase(t) })
	if u == "" {
		t.Skip("no database")
	}
	parsed, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	name := parsed.Path[1:]
	parsed.Path = "/postgres"
	var exists bool
	if err := connect(t, parsed.String()).QueryRow(t.Context(), "SELECT EXISTS (SELECT FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		t.Fatal(err)
	}
	if exists {
		t.Errorf("database %s still exists after its test", name)
	}
}

// BenchmarkNewDatabase measures NewDatabase. The databases are dropped at the
// end only, so bound the count: go test -bench . -benchtime 100x
func BenchmarkNewDatabase(b *testing.B) {
	for b.Loop() {
		storetest.NewDatabase(b)
	}
}
