package catalog

import (
	"github.com/dustin/go-humanize"

	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// StdinName is how standard input is named in findings.
const StdinName = "<stdin>"

// Input is one file (or standard input) to validate.
type Input struct {
	Name string
	Data []byte
	// FromDirectory is set for files found by walking a directory, which may hold YAML of other kinds.
	FromDirectory bool
	// TooLarge is set, and Data left empty, when the input exceeds MaxInputBytes; Size says by how much.
	TooLarge bool
	Size     int64
}

// ReadInputs reads the named paths: files, directories (recursively, their .yaml, .yml and .json
// files, skipping hidden directories) and "-" for stdin. Inputs come back in a stable order. The
// error joins every path that could not be read; the inputs that could are returned regardless.
func ReadInputs(paths []string, stdin io.Reader) ([]Input, error) {
	var inputs []Input
	var errs []error
	for _, p := range paths {
		if p == "-" {
			in, err := readLimited(StdinName, stdin, -1)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			inputs = append(inputs, in)
			continue
		}
		info, err := os.Stat(p)
		if err != nil {
			errs = append(errs, fmt.Errorf("read %s: %w", p, unwrapPathErr(err)))
			continue
		}
		if !info.IsDir() {
			in, err := readFile(p, info.Size())
			if err != nil {
				errs = append(errs, err)
				continue
			}
			inputs = append(inputs, in)
			continue
		}
		found, err := walkDir(p)
		if err != nil {
			errs = append(errs, err)
		}
		inputs = append(inputs, found...)
	}
	return inputs, errors.Join(errs...)
}

func walkDir(root string) ([]Input, error) {
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("read %s: %w", path, unwrapPathErr(err))
		}
		if d.IsDir() {
			if path != root && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		switch strings.ToLower(filepath.Ext(path)) {
		case ".yaml", ".yml", ".json":
			if d.Type().IsRegular() {
				files = append(files, path)
			}
		}
		return nil
	})
	sort.Strings(files)
	var inputs []Input
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	for _, f := range files {
		info, statErr := os.Stat(f)
		if statErr != nil {
			errs = append(errs, fmt.Errorf("read %s: %w", f, unwrapPathErr(statErr)))
			continue
		}
		in, readErr := readFile(f, info.Size())
		if readErr != nil {
			errs = append(errs, readErr)
			continue
		}
		in.FromDirectory = true
		inputs = append(inputs, in)
	}
	return inputs, errors.Join(errs...)
}

func readFile(path string, size int64) (Input, error) {
	if size > MaxInputBytes {
		return Input{Name: path, TooLarge: true, Size: size}, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return Input{}, fmt.Errorf("read %s: %w", path, unwrapPathErr(err))
	}
	defer f.Close()
	return readLimited(path, f, size)
}

// readLimited reads at most MaxInputBytes+1 bytes, so a huge stream costs no more than that.
func readLimited(name string, r io.Reader, size int64) (Input, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxInputBytes+1))
	if err != nil {
		return Input{}, fmt.Errorf("read %s: %w", name, unwrapPathErr(err))
	}
	if len(data) > MaxInputBytes {
		return Input{Name: name, TooLarge: true, Size: max(size, int64(len(data)))}, nil
	}
	return Input{Name: name, Data: data, Size: int64(len(data))}, nil
}

func unwrapPathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// ValidateInputs validates every input and returns all findings, sorted.
func (v *Validator) ValidateInputs(inputs []Input, opts Options) Findings {
	var all Findings
	for _, in := range inputs {
		if in.TooLarge {
			all = append(all, Finding{Severity: SeverityError, File: in.Name, Line: 1, Column: 1,
				Message: fmt.Sprintf("input is larger than the %s limit (%s or more)", humanize.IBytes(MaxInputBytes), humanize.IBytes(uint64(in.Size)))})
			continue
		}
		o := opts
		o.IgnoreUnknownKinds = opts.IgnoreUnknownKinds || in.FromDirectory
		_, fs := v.Validate(in.Name, in.Data, o)
		all = append(all, fs...)
	}
	all.Sort()
	return all
}
