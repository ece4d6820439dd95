package starlark

import (
	"archive/zip"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"

	"github.com/krm-catalog/krm-catalog/fn"
)

// The modules of kpt's starlark function that read documents a script holds as strings (a csv
// table or a zip archive in a ConfigMap's data, say), with the names, parameters and results that
// function documents for them (qri-io/starlib's encoding/csv and zipfile). They read nothing but
// their arguments; what they make is bounded as any value of the script, by the sandbox's memory
// limit, and a single file read out of an archive by fn.MaxResourceListBytes besides, so that a
// small archive cannot expand past what a function could return anyway.
func docModules() map[string]starlark.StringDict {
	return map[string]starlark.StringDict{
		"encoding/csv.star": {"csv": &starlarkstruct.Module{Name: "csv", Members: starlark.StringDict{
			"read_all":  starlark.NewBuiltin("read_all", csvReadAll),
			"write_all": starlark.NewBuiltin("write_all", csvWriteAll),
		}}},
		"zipfile.star": {"ZipFile": starlark.NewBuiltin("ZipFile", newZipFile)},
	}
}

// oneRune reads a one-character parameter (comma, comment); "" is def.
func oneRune(param, s string, def rune) (rune, error) {
	if s == "" {
		return def, nil
	}
	r := []rune(s)
	if len(r) != 1 {
		return 0, fmt.Errorf("expected %s param to be a single-character string", param)
	}
	return r[0], nil
}

func csvReadAll(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var (
		source                       string
		comma, comment               string
		lazyQuotes, trimLeadingSpace bool
		fieldsPerRecord, skip        int
	)
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "source", &source, "comma?", &comma, "comment?", &comment,
		"lazy_quotes?", &lazyQuotes, "trim_leading_space?", &trimLeadingSpace, "fields_per_record?", &fieldsPerRecord, "skip?", &skip); err != nil {
		return nil, err
	}
	// a lone carriage return ends a line too, as in the function kpt runs
	source = strings.ReplaceAll(strings.ReplaceAll(source, "\r\n", "\n"), "\r", "\n")
	r := csv.NewReader(strings.NewReader(source))
	var err error
	if r.Comma, err = oneRune("comma", comma, ','); err != nil {
		return nil, err
	}
	if r.Comment, err = oneRune("comment", comment, 0); err != nil {
		return nil, err
	}
	r.LazyQuotes, r.TrimLeadingSpace, r.FieldsPerRecord = lazyQuotes, trimLeadingSpace, fieldsPerRecord
	// skipped rows are not checked, as in the function kpt runs
	for range skip {
		if _, err := r.Read(); err != nil {
			break
		}
	}
	rows, err := r.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b.Name(), err)
	}
	return stringRows(rows), nil
}

// stringRows is a table as a list of lists of strings (csv's rows, a sheet's).
func stringRows(rows [][]string) *starlark.List {
	out := make([]starlark.Value, len(rows))
	for i, row := range rows {
		cells := make([]starlark.Value, len(row))
		for j, c := range row {
			cells[j] = starlark.String(c)
		}
		out[i] = starlark.NewList(cells)
	}
	return starlark.NewList(out)
}

func csvWriteAll(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var (
		source starlark.Value
		comma  string
	)
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "source", &source, "comma?", &comma); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	var err error
	if w.Comma, err = oneRune("comma", comma, ','); err != nil {
		return nil, err
	}
	rows, ok := source.(starlark.Indexable)
	if !ok || isString(source) {
		return nil, fmt.Errorf("%s: expected value to be an array type, got %s", b.Name(), source.Type())
	}
	for i := range rows.Len() {
		row, ok := rows.Index(i).(starlark.Indexable)
		if !ok || isString(rows.Index(i)) {
			return nil, fmt.Errorf("%s: row %d is not an array type", b.Name(), i)
		}
		rec := make([]string, row.Len())
		for j := range row.Len() {
			if rec[j], err = csvCell(row.Index(j)); err != nil {
				return nil, fmt.Errorf("%s: row %d, column %d: %w", b.Name(), i, j, err)
			}
		}
		if err := w.Write(rec); err != nil {
			return nil, err
		}
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return nil, err
	}
	return starlark.String(buf.String()), nil
}

func isString(v starlark.Value) bool {
	_, ok := v.(starlark.String)
	return ok
}

// csvCell writes a scalar as the function kpt runs writes it (Go's %v of the plain value: true,
// 3, 2.5); anything else is refused, where that function would write Go's rendering of a map.
func csvCell(v starlark.Value) (string, error) {
	switch v := v.(type) {
	case starlark.String:
		return string(v), nil
	case starlark.Bool:
		return strconv.FormatBool(bool(v)), nil
	case starlark.Int:
		return v.String(), nil
	case starlark.Float:
		return strconv.FormatFloat(float64(v), 'g', -1, 64), nil
	}
	return "", fmt.Errorf("a %s is not a csv cell (string, bool, int or float)", v.Type())
}

func newZipFile(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var data string
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "file", &data); err != nil {
		return nil, err
	}
	zr, err := zip.NewReader(strings.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b.Name(), err)
	}
	return starlarkstruct.FromStringDict(starlark.String("ZipFile"), starlark.StringDict{
		"namelist": starlark.NewBuiltin("namelist", func(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			if err := starlark.UnpackArgs(b.Name(), args, kwargs); err != nil {
				return nil, err
			}
			names := make([]starlark.Value, len(zr.File))
			for i, f := range zr.File {
				names[i] = starlark.String(f.Name)
			}
			return starlark.NewList(names), nil
		}),
		"open": starlark.NewBuiltin("open", func(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var name string
			if err := starlark.UnpackArgs(b.Name(), args, kwargs, "name", &name); err != nil {
				return nil, err
			}
			for _, f := range zr.File {
				if f.Name == name {
					return zipInfo(f), nil
				}
			}
			return nil, fmt.Errorf("%s: %q not found in the archive", b.Name(), name)
		}),
	}), nil
}

// errTooLarge is a file of an archive that expands past fn.MaxResourceListBytes.
var errTooLarge = errors.New("file expands past the ResourceList size limit")

func zipInfo(f *zip.File) starlark.Value {
	return starlarkstruct.FromStringDict(starlark.String("ZipInfo"), starlark.StringDict{
		"read": starlark.NewBuiltin("read", func(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			if err := starlark.UnpackArgs(b.Name(), args, kwargs); err != nil {
				return nil, err
			}
			rc, err := f.Open()
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", b.Name(), f.Name, err)
			}
			defer rc.Close()
			data, err := io.ReadAll(io.LimitReader(rc, fn.MaxResourceListBytes+1))
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", b.Name(), f.Name, err)
			}
			if len(data) > fn.MaxResourceListBytes {
				return nil, fmt.Errorf("%s %s: %w (%d bytes)", b.Name(), f.Name, errTooLarge, fn.MaxResourceListBytes)
			}
			return starlark.String(data), nil
		}),
	})
}
