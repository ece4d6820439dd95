package kpt

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	gitignore "github.com/monochromegane/go-gitignore"
)

// KrmignoreName is the file in a package directory that lists, in .gitignore's syntax, the files
// and directories of that package that are not part of it.
const KrmignoreName = ".krmignore"

// krmignored lists the files under dir that a .krmignore of dir or of a subpackage (a directory
// with a Kptfile) excludes, as kpt's package reader excludes them: each .krmignore applies to its
// own package's directory.
func krmignored(dir string) ([]string, error) {
	type scope struct {
		dir string
		m   gitignore.IgnoreMatcher
	}
	var scopes []scope
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != dir && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			if data, err := os.ReadFile(filepath.Join(p, KrmignoreName)); err == nil {
				if _, err := os.Stat(filepath.Join(p, KptfileName)); err == nil || p == dir {
					scopes = append(scopes, scope{dir: p, m: gitignore.NewGitIgnoreFromReader(p, strings.NewReader(string(data)))})
				}
			}
		}
		if p == dir {
			return nil
		}
		for i := len(scopes) - 1; i >= 0; i-- {
			s := scopes[i]
			if !strings.HasPrefix(p, s.dir+string(filepath.Separator)) {
				continue
			}
			if s.m.Match(p, d.IsDir()) {
				if d.IsDir() {
					return walkAll(p, &out)
				}
				out = append(out, p)
			}
			break
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", KrmignoreName, err)
	}
	return out, nil
}

// walkAll adds every file under dir to out, and skips dir in the walk that called it.
func walkAll(dir string, out *[]string) error {
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			*out = append(*out, p)
		}
		return err
	})
	if err != nil {
		return err
	}
	return filepath.SkipDir
}
