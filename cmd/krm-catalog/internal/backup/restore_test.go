package backup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/krm-catalog/krm-catalog/internal/pgcluster"
	"github.com/krm-catalog/krm-catalog/internal/testenv"
	"github.com/krm-catalog/krm-catalog/migrations"
)

// TestRestoreRunsNothingOfTheDump: a dump is SQL its maker wrote. One whose publishers table
// carries a CHECK constraint calling a function that runs COPY ... TO PROGRAM (as the database
// superuser) is refused, naming the function (the constraint is part of the table's definition,
// which the migrations make instead), and nothing of it runs; with IgnoreForeign its rows are
// restored into the schema the migrations make, without the function or the constraint. Before,
// pg_restore ran the function while it loaded the rows.
func TestRestoreRunsNothingOfTheDump(t *testing.T) {
	if _, err := pgcluster.FindTool(context.Background(), "pg_restore"); err != nil {
		testenv.Missing(t, "PostgreSQL", "install it (Debian: apt-get install postgresql)")
	}
	ctx := context.Background()
	dir := testenv.TraversableTempDir(t)
	c, err := pgcluster.Start(ctx, pgcluster.Options{DataDir: filepath.Join(dir, "pg")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	// where the postgres user may write, as a command run by the database would
	marker := filepath.Join(os.TempDir(), fmt.Sprintf("krm-catalog-restore-ran-%d", time.Now().UnixNano()))
	t.Cleanup(func() { _ = os.Remove(marker) })
	testenv.ExecSQL(t, c.URL("postgres"), "CREATE DATABASE src")
	if err := migrations.Up(ctx, c.URL("src")); err != nil {
		t.Fatal(err)
	}
	testenv.ExecSQL(t, c.URL("src"), "INSERT INTO publishers (name) VALUES ('example.com')")
	testenv.ExecSQL(t, c.URL("src"), `CREATE FUNCTION public.pwn() RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  IF current_database() <> 'src' THEN
    EXECUTE format('COPY (SELECT 1) TO PROGRAM %L', 'touch `+marker+`');
  END IF;
  RETURN true;
END $$`)
	testenv.ExecSQL(t, c.URL("src"), "ALTER TABLE publishers ADD CONSTRAINT checked CHECK (public.pwn())")
	dump := filepath.Join(dir, "crafted.dump")
	if err := Dump(ctx, c.URL("src"), dump); err != nil {
		t.Fatal(err)
	}

	testenv.ExecSQL(t, c.URL("postgres"), "CREATE DATABASE dst")
	err = Restore(ctx, c.URL("dst"), dump, RestoreOptions{})
	if !errors.Is(err, ErrForeignObjects) || !strings.Contains(err.Error(), "FUNCTION public.pwn()") {
		t.Fatalf("restore of the crafted dump: %v; want it refused naming the function", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the dump's function ran")
	}
	if n := count(t, c.URL("dst"), "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"); n != 0 {
		t.Fatalf("the refused restore left %d tables", n)
	}

	if err := Restore(ctx, c.URL("dst"), dump, RestoreOptions{IgnoreForeign: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the dump's function ran")
	}
	if n := count(t, c.URL("dst"), "SELECT count(*) FROM publishers WHERE name = 'example.com'"); n != 1 {
		t.Errorf("the restored rows: %d publishers, want 1", n)
	}
	if n := count(t, c.URL("dst"), "SELECT count(*) FROM pg_proc WHERE proname = 'pwn'"); n != 0 {
		t.Error("the dump's function was restored")
	}
	if n := count(t, c.URL("dst"), "SELECT count(*) FROM pg_constraint WHERE conname = 'checked'"); n != 0 {
		t.Error("the dump's constraint was restored")
	}
	if n := count(t, c.URL("dst"), "SELECT count(*) FROM pg_constraint WHERE contype = 'f' AND condeferrable"); n != 0 {
		t.Errorf("%d foreign keys left deferrable", n)
	}
	// and again over it, with Clean
	if err := Restore(ctx, c.URL("dst"), dump, RestoreOptions{IgnoreForeign: true}); !errors.Is(err, ErrNotEmpty) {
		t.Errorf("restore into a database with tables: %v, want ErrNotEmpty", err)
	}
	if err := Restore(ctx, c.URL("dst"), dump, RestoreOptions{IgnoreForeign: true, Clean: true}); err != nil {
		t.Errorf("restore with Clean: %v", err)
	}
}

func count(t *testing.T, url, sql string) int {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(context.Background(), sql).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
