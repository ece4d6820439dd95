package testenv

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// CopyTree copies the directory from into to (created as needed): directories, regular files
// with their permissions, and symbolic links as links, so that tests of the write rule see the
// package as it was written.
func CopyTree(tb testing.TB, from, to string) {
	tb.Helper()
	err := filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, p)
		if err != nil {
			return err
		}
		dst := filepath.Join(to, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(dst, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, dst)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		st, err := d.Info()
		if err != nil {
			return err
		}
		return os.WriteFile(dst, data, st.Mode().Perm())
	})
	if err != nil {
		tb.Fatal(err)
	}
}
