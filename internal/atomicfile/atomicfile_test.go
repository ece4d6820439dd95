package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestWrite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "f.yaml")
	if err := os.WriteFile(p, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	// a failed write leaves the old file and no temporary one
	boom := errors.New("boom")
	if err := Write(p, 0o644, func(f *os.File) error { f.WriteString("half"); return boom }); !errors.Is(err, boom) {
		t.Fatalf("Write = %v, want %v", err, boom)
	}
	if got, _ := os.ReadFile(p); string(got) != "old" {
		t.Fatalf("after a failed write the file holds %q", got)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("a failed write left %d files", len(entries))
	}
	// a successful one replaces it, with the permissions asked for
	if err := WriteFile(p, []byte("new"), 0o755); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(p); string(got) != "new" || st.Mode().Perm() != 0o755 {
		t.Fatalf("file holds %q with mode %v; want \"new\" 0755", got, st.Mode().Perm())
	}
}
