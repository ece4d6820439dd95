package starlark

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/base64"
	"strings"
	"testing"

	"go.starlark.net/starlark"
)

func zipArchive(t *testing.T, files [][2]string) string {
	t.Helper()
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	for _, f := range files {
		fw, err := w.Create(f[0])
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fw.Write([]byte(f[1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes())
}

// The csv and zipfile modules as kpt's starlark function has them: the want is what that function
// (krm-functions-catalog's functions/go/starlark, built from source) returned for this script.
func TestStarlarkLoadsDocumentModules(t *testing.T) {
	t.Parallel()
	archive := zipArchive(t, [][2]string{{"a.txt", "hello"}, {"dir/b.csv", "x,y\n1,2\n"}})
	script := `
load("encoding/csv.star", "csv")
load("zipfile.star", "ZipFile")
load("encoding/base64.star", "base64")
d = {}
d["read"] = csv.read_all("a,b\n\"c d\",e\r1,2\n")
d["semicolon"] = csv.read_all("# note\nx;y\n  p; q\n", comma=";", comment="#", trim_leading_space=True)
d["skip"] = csv.read_all("h1,h2\n1,2\n3,4\n", skip=1)
d["ragged"] = csv.read_all("a\nb,c\n", fields_per_record=-1)
d["lazy"] = csv.read_all('a "q" b,c\n', lazy_quotes=True)
d["write"] = csv.write_all([["a", "b c"], ["x,y", 'q"'], [1, True, 2.5]])
d["write_tab"] = csv.write_all([["a", "b"]], comma="\t")
z = ZipFile(base64.decode("` + archive + `"))
d["names"] = z.namelist()
d["a"] = z.open("a.txt").read()
d["b"] = csv.read_all(z.open("dir/b.csv").read())
ctx.resource_list["items"][0]["spec"] = {"probe": d}
`
	// the probe as that function wrote it
	compareProbe(t, script, `a: hello
b:
- - x
  - "y"
- - "1"
  - "2"
lazy:
- - a "q" b
  - c
names:
- a.txt
- dir/b.csv
ragged:
- - a
- - b
  - c
read:
- - a
  - b
- - c d
  - e
- - "1"
  - "2"
semicolon:
- - x
  - "y"
- - p
  - q
skip:
- - "1"
  - "2"
- - "3"
  - "4"
write: |
  a,b c
  "x,y","q"""
  1,true,2.5
write_tab: "a\tb\n"
`)
}

// compareProbe runs script, which leaves its findings in the first item's spec.probe, and
// compares them with kpt, what kpt's starlark function left there for the same script.
func compareProbe(t *testing.T, script, kpt string) {
	t.Helper()
	compareProbeWith(t, &Function{Script: script}, kpt)
}

func TestStarlarkDocumentModuleErrors(t *testing.T) {
	t.Parallel()
	archive := zipArchive(t, [][2]string{{"a.txt", "hello"}})
	tests := []struct{ name, script, want string }{
		{"a ragged table", `load("encoding/csv.star", "csv")
csv.read_all("a,b\nc\n")`, "wrong number of fields"},
		{"a two-character comma", `load("encoding/csv.star", "csv")
csv.read_all("a", comma=";;")`, "single-character"},
		{"a row that is not a list", `load("encoding/csv.star", "csv")
csv.write_all(["ab"])`, "row 0 is not an array type"},
		{"a cell that is not a scalar", `load("encoding/csv.star", "csv")
csv.write_all([[{"k": 1}]])`, "not a csv cell"},
		{"not an archive", `load("zipfile.star", "ZipFile")
ZipFile("nope")`, "ZipFile"},
		{"a missing file", `load("zipfile.star", "ZipFile")
load("encoding/base64.star", "base64")
ZipFile(base64.decode("` + archive + `")).open("b.txt")`, `"b.txt" not found`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out, err := (&Function{Script: tc.script}).Run(context.Background(), list(t))
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Results) != 1 || !strings.Contains(out.Results[0].Message, tc.want) {
				t.Errorf("results %v, want one error about %q", out.Results, tc.want)
			}
		})
	}
}

// The csv and zipfile readers take whatever a package holds: no input panics them.
func FuzzDocumentModules(f *testing.F) {
	f.Add("a,b\n\"c\"\"d\",e\r1\n", ";")
	f.Add("PK\x03\x04", "")
	f.Fuzz(func(t *testing.T, data, comma string) {
		th := &starlark.Thread{}
		_, _ = csvReadAll(th, starlark.NewBuiltin("read_all", nil), starlark.Tuple{starlark.String(data)}, []starlark.Tuple{{starlark.String("comma"), starlark.String(comma)}, {starlark.String("lazy_quotes"), starlark.True}})
		zf, err := newZipFile(th, starlark.NewBuiltin("ZipFile", nil), starlark.Tuple{starlark.String(data)}, nil)
		if err != nil {
			return
		}
		names, err := starlark.Call(th, mustAttr(t, zf, "namelist"), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		for v := range names.(*starlark.List).Elements() {
			info, err := starlark.Call(th, mustAttr(t, zf, "open"), starlark.Tuple{v}, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = starlark.Call(th, mustAttr(t, info, "read"), nil, nil)
		}
	})
}

func mustAttr(t *testing.T, v starlark.Value, name string) starlark.Value {
	t.Helper()
	a, err := v.(starlark.HasAttrs).Attr(name)
	if err != nil || a == nil {
		t.Fatalf("no %s: %v", name, err)
	}
	return a
}
