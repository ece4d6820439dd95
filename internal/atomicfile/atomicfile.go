// Package atomicfile replaces a file in one step: the content goes to a temporary file beside it,
// which is renamed over the target only once it is whole, so a reader (or a runner about to
// execute it) sees the old file or the new one, never half of one.
package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
)

// Write fills path through write, which gets the temporary file, and renames it into place with
// permissions perm when write returned nil. Otherwise the temporary file is removed and path is
// untouched. The directory must exist.
func Write(path string, perm os.FileMode, write func(f *os.File) error) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".partial-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err = write(tmp); err != nil {
		return err
	}
	if err = tmp.Chmod(perm); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("replace %s: %w", path, err)
	}
	return nil
}

// WriteFile is Write of data.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	return Write(path, perm, func(f *os.File) error {
		_, err := f.Write(data)
		return err
	})
}
