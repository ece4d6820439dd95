package starlark

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/krm-catalog/krm-catalog/fn"
)

// Without the network every call of http.star and xlsx.get_url fails saying why and what allows
// it, in-process and in the sandbox; loading the modules, and calls with bad arguments, do not
// need it. No request leaves.
func TestStarlarkNetworkModulesNeedTheNetwork(t *testing.T) {
	t.Parallel()
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { requests.Add(1) }))
	t.Cleanup(srv.Close)
	sandbox := testSandbox(0)
	for _, call := range []string{
		`http.get("` + srv.URL + `")`, `http.put("` + srv.URL + `", body="x")`, `http.post("` + srv.URL + `", json_body={"a": 1})`,
		`http.delete("` + srv.URL + `")`, `http.patch("` + srv.URL + `")`, `http.options("` + srv.URL + `")`,
		`xlsx.get_url("` + srv.URL + `/book.xlsx")`,
	} {
		for _, sb := range []*Sandbox{nil, sandbox} {
			script := "load(\"http.star\", \"http\")\nload(\"xlsx.star\", \"xlsx\")\nr = " + call + "\n"
			out, err := (&Function{Script: script, Sandbox: sb}).Run(context.Background(), list(t))
			if err != nil {
				t.Fatalf("%s: %v", call, err)
			}
			if len(out.Results) != 1 || out.Results[0].Severity != fn.SeverityError {
				t.Fatalf("%s: results %v, want one error", call, out.Results)
			}
			msg := out.Results[0].Message
			name := call[:strings.IndexByte(call, '(')]
			if !strings.HasPrefix(msg, name+": "+ErrNoNetwork.Error()) || !strings.Contains(msg, "--allow-network") {
				t.Errorf("%s (sandbox %t): %q, want it refused for want of the network, naming --allow-network", call, sb != nil, msg)
			}
		}
	}
	out, err := (&Function{Script: "load(\"http.star\", \"http\")\nload(\"xlsx.star\", \"xlsx\")\n"}).Run(context.Background(), list(t))
	if err != nil || fn.HasErrors(out.Results) {
		t.Errorf("loading alone: %v %v", err, out.Results)
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("%d requests reached the server", n)
	}
}

// echo answers with what it was asked, as JSON, for comparing what each function sends.
func echo(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/redirect" {
		http.Redirect(w, r, "/get?from=redirect", http.StatusFound)
		return
	}
	if r.URL.Path == "/book.xlsx" {
		w.Write(testWorkbook())
		return
	}
	got := map[string]any{"method": r.Method, "path": r.URL.Path, "query": r.URL.RawQuery}
	ct := r.Header.Get("Content-Type")
	if strings.HasPrefix(ct, "multipart/form-data") {
		if err := r.ParseMultipartForm(1 << 20); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		got["multipart"] = r.MultipartForm.Value
		ct = "multipart/form-data"
	} else {
		b, _ := io.ReadAll(r.Body)
		got["body"] = string(b)
	}
	got["contentType"] = ct
	if u, p, ok := r.BasicAuth(); ok {
		got["auth"] = u + ":" + p
	}
	got["xOne"] = r.Header.Values("X-One")
	w.Header().Add("X-Test", "a")
	w.Header().Add("X-Test", "b")
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	json.NewEncoder(w).Encode(got)
}

// httpProbe calls every method of http.star as starlib's documentation shows it; the probe keeps
// what came back, the server's address replaced by BASE.
const httpProbe = `
load("http.star", "http")
def seen(r):
  h = r.headers
  return {"url": r.url.replace(BASE, "BASE"), "status": r.status_code, "encoding": r.encoding,
          "x_test": h.get("X-Test"), "content_type": h.get("Content-Type"), "json": r.json(), "body": r.body()}
d = {}
d["get"] = seen(http.get(BASE + "/get", params={"a": "1", "b": "x y"}, headers={"X-One": "1"}))
d["post_json"] = seen(http.post(BASE + "/post", json_body={"k": [1, 2.5, True, None], "a": "b"}))
d["post_form"] = seen(http.post(BASE + "/form", form_body={"f": "v", "g": "w w"}))
d["post_multipart"] = seen(http.post(BASE + "/multi", form_body={"f": "v", "g": "w"}, form_encoding="multipart/form-data"))
d["put"] = seen(http.put(BASE + "/put", body="raw text", auth=("user", "pass")))
d["delete"] = seen(http.delete(BASE + "/d"))
d["patch"] = seen(http.patch(BASE + "/p", body="x"))
d["options"] = seen(http.options(BASE + "/o"))
d["redirect"] = seen(http.get(BASE + "/redirect"))
ctx.resource_list["items"][0]["spec"] = {"probe": d}
`

// The calls as kpt's starlark function (krm-functions-catalog's functions/go/starlark, built from
// source, run with the network) makes them against this server: what it sent and what it read
// back. Only the order of a JSON object's keys differs, which starlib takes from Go's map order
// (a new one each run), where this one sorts them; the comparison is of values.
func TestStarlarkHTTPAsKpt(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(echo))
	t.Cleanup(srv.Close)
	script := "BASE = \"" + srv.URL + "\"\n" + httpProbe
	for _, sb := range []*Sandbox{nil, testSandbox(0)} {
		compareProbeWith(t, &Function{Script: script, Network: true, Sandbox: sb}, kptHTTPProbe)
	}
}

const kptHTTPProbe = `delete:
  body: |
    {"body":"","contentType":"","method":"DELETE","path":"/d","query":"","xOne":null}
  content_type: application/json
  encoding: ""
  json:
    body: ""
    contentType: ""
    method: DELETE
    path: /d
    query: ""
    xOne: null
  status: 201
  url: BASE/d
  x_test: a,b
get:
  body: |
    {"body":"","contentType":"","method":"GET","path":"/get","query":"a=1\u0026b=x+y","xOne":["1"]}
  content_type: application/json
  encoding: ""
  json:
    body: ""
    contentType: ""
    method: GET
    path: /get
    query: a=1&b=x+y
    xOne:
    - "1"
  status: 201
  url: BASE/get?a=1&b=x+y
  x_test: a,b
options:
  body: |
    {"body":"","contentType":"","method":"OPTIONS","path":"/o","query":"","xOne":null}
  content_type: application/json
  encoding: ""
  json:
    body: ""
    contentType: ""
    method: OPTIONS
    path: /o
    query: ""
    xOne: null
  status: 201
  url: BASE/o
  x_test: a,b
patch:
  body: |
    {"body":"x","contentType":"","method":"PATCH","path":"/p","query":"","xOne":null}
  content_type: application/json
  encoding: ""
  json:
    body: x
    contentType: ""
    method: PATCH
    path: /p
    query: ""
    xOne: null
  status: 201
  url: BASE/p
  x_test: a,b
post_form:
  body: |
    {"body":"f=v\u0026g=w+w","contentType":"application/x-www-form-urlencoded","method":"POST","path":"/form","query":"","xOne":null}
  content_type: application/json
  encoding: ""
  json:
    body: f=v&g=w+w
    contentType: application/x-www-form-urlencoded
    method: POST
    path: /form
    query: ""
    xOne: null
  status: 201
  url: BASE/form
  x_test: a,b
post_json:
  body: |
    {"body":"{\"a\":\"b\",\"k\":[1,2.5,true,null]}","contentType":"application/json","method":"POST","path":"/post","query":"","xOne":null}
  content_type: application/json
  encoding: ""
  json:
    body: '{"a":"b","k":[1,2.5,true,null]}'
    contentType: application/json
    method: POST
    path: /post
    query: ""
    xOne: null
  status: 201
  url: BASE/post
  x_test: a,b
post_multipart:
  body: |
    {"contentType":"multipart/form-data","method":"POST","multipart":{"f":["v"],"g":["w"]},"path":"/multi","query":"","xOne":null}
  content_type: application/json
  encoding: ""
  json:
    contentType: multipart/form-data
    method: POST
    multipart:
      f:
      - v
      g:
      - w
    path: /multi
    query: ""
    xOne: null
  status: 201
  url: BASE/multi
  x_test: a,b
put:
  body: |
    {"auth":"user:pass","body":"raw text","contentType":"","method":"PUT","path":"/put","query":"","xOne":null}
  content_type: application/json
  encoding: ""
  json:
    auth: user:pass
    body: raw text
    contentType: ""
    method: PUT
    path: /put
    query: ""
    xOne: null
  status: 201
  url: BASE/put
  x_test: a,b
redirect:
  body: |
    {"body":"","contentType":"","method":"GET","path":"/get","query":"from=redirect","xOne":null}
  content_type: application/json
  encoding: ""
  json:
    body: ""
    contentType: ""
    method: GET
    path: /get
    query: from=redirect
    xOne: null
  status: 201
  url: BASE/get?from=redirect
  x_test: a,b
`

func TestStarlarkHTTPErrors(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(echo))
	t.Cleanup(srv.Close)
	for _, tc := range []struct{ call, kpt string }{
		{`http.get(3)`, "get: for parameter url: got int, want string"},
		{`http.get(BASE, params={"a": 1})`, `expected param value for key '"a"' to be a string. got: 'int'`},
		{`http.get(BASE, headers={"a": None})`, `expected param value for key '"a"' to be a string. got: 'NoneType'`},
		{`http.get(BASE, auth=("a", "b", "c"))`, "expected two values for auth params tuple"},
		{`http.post(BASE, form_body={"a": "b"}, form_encoding="text/plain")`, `unknown form encoding: "text/plain"`},
		{`http.get(BASE, nope=1)`, "get: unexpected keyword argument \"nope\""},
	} {
		script := "load(\"http.star\", \"http\")\nBASE = \"" + srv.URL + "\"\nr = " + tc.call + "\n"
		out, err := (&Function{Script: script, Network: true}).Run(context.Background(), list(t))
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Results) != 1 || out.Results[0].Message != tc.kpt {
			t.Errorf("%s: %v, kpt's starlark function says %q", tc.call, out.Results, tc.kpt)
		}
	}
}

// testWorkbook is an xlsx archive of two sheets (one of them in part sheet3.xml) with shared, rich
// and inline strings, booleans, numbers in the built-in number formats excelize renders and in a
// custom one, a row left out and trailing empty cells.
func testWorkbook() []byte {
	const ns = `xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"`
	parts := [][2]string{
		{"[Content_Types].xml", `<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"></Types>`},
		{"xl/workbook.xml", `<?xml version="1.0" encoding="UTF-8"?><workbook ` + ns + ` xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets>` +
			`<sheet name="Data" sheetId="1" r:id="rId1"/><sheet name="Other" sheetId="2" r:id="rId2"/></sheets></workbook>`},
		{"xl/_rels/workbook.xml.rels", `<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
			`<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/>` +
			`<Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet3.xml"/>` +
			`<Relationship Id="rId3" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/styles" Target="styles.xml"/></Relationships>`},
		{"xl/sharedStrings.xml", `<?xml version="1.0" encoding="UTF-8"?><sst ` + ns + ` count="3" uniqueCount="3">` +
			`<si><t>name</t></si><si><t xml:space="preserve"> value </t></si><si><r><t>Ri</t></r><r><rPr><b/></rPr><t>ch</t></r></si></sst>`},
		{"xl/styles.xml", `<?xml version="1.0" encoding="UTF-8"?><styleSheet ` + ns + `><numFmts count="1"><numFmt numFmtId="164" formatCode="0.000"/></numFmts><cellXfs count="13">` +
			`<xf numFmtId="0"/><xf numFmtId="14"/><xf numFmtId="22"/><xf numFmtId="9"/><xf numFmtId="10"/><xf numFmtId="2"/><xf numFmtId="1"/>` +
			`<xf numFmtId="4"/><xf numFmtId="11"/><xf numFmtId="15"/><xf numFmtId="18"/><xf numFmtId="46"/><xf numFmtId="164"/><xf numFmtId="39"/><xf numFmtId="47"/></cellXfs></styleSheet>`},
		{"xl/worksheets/sheet1.xml", `<?xml version="1.0" encoding="UTF-8"?><worksheet ` + ns + `><sheetData>` +
			`<row r="1"><c r="A1" t="s"><v>0</v></c><c r="B1" t="s"><v>1</v></c><c r="C1" t="s"><v>2</v></c></row>` +
			`<row r="2"><c r="A2" t="inlineStr"><is><t>inline</t></is></c><c r="B2" s="5"><v>42.5</v></c><c r="C2" s="3"><v>0.256</v></c>` +
			`<c r="D2" s="1"><v>43831.5</v></c><c r="E2" s="2"><v>43831.75</v></c><c r="F2" s="4"><v>0.12345</v></c></row>` +
			`<row r="4"><c r="A4" s="6"><v>1234.567</v></c><c r="C4" t="b"><v>1</v></c><c r="F4" s="8"><v>12345.678</v></c><c r="G4" s="9"><v>30</v></c>` +
			`<c r="H4" s="10"><v>0.5</v></c><c r="I4" s="11"><v>1.25</v></c><c r="J4" s="12"><v>7.5</v></c><c r="K4" s="13"><v>-3.5</v></c>` +
			`<c r="L4" s="7"><v>1e3</v></c><c r="M4" s="14"><v>0.0001</v></c><c r="N4" t="str"><v>formula text</v></c><c r="O4" s="6"><v>not a number</v></c></row>` +
			`<row r="5"><c r="A5" t="str"><v></v></c><c r="Q5"/></row></sheetData></worksheet>`},
		{"xl/worksheets/sheet3.xml", `<?xml version="1.0" encoding="UTF-8"?><worksheet ` + ns + `><sheetData><row r="1"><c r="B1" t="inlineStr"><is><t>x</t></is></c></row></sheetData></worksheet>`},
	}
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	for _, p := range parts {
		f, _ := w.Create(p[0])
		f.Write([]byte(p[1]))
	}
	w.Close()
	return buf.Bytes()
}

const xlsxProbe = `
load("xlsx.star", "xlsx")
book = xlsx.get_url(BASE + "/book.xlsx")
d = {}
d["sheets"] = sorted([[k, v] for k, v in book.get_sheets().items()])
d["data"] = book.get_rows("Data")
d["trimmed"] = book.get_rows("Da:ta")
d["other"] = book.get_rows("Other")
d["missing"] = book.get_rows("Missing")
ctx.resource_list["items"][0]["spec"] = {"probe": d}
`

// A workbook as kpt's starlark function (the same build as above) reads it with excelize v1.4.1.
func TestStarlarkXLSXAsKpt(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(echo))
	t.Cleanup(srv.Close)
	compareProbeWith(t, &Function{Script: "BASE = \"" + srv.URL + "\"\n" + xlsxProbe, Network: true}, kptXLSXProbe)
}

const kptXLSXProbe = `data:
- - name
  - ' value '
  - Rich
  - ""
  - ""
  - ""
  - ""
  - ""
  - ""
  - ""
  - ""
  - ""
  - ""
  - ""
  - ""
  - ""
  - ""
- - inline
  - "42.50"
  - 25%
  - 01-01-20
  - 1/1/20 18:00
  - 12.35%
  - ""
  - ""
  - ""
  - ""
  - ""
  - ""
  - ""
  - ""
  - ""
  - ""
  - ""
- - ""
  - ""
  - ""
  - ""
  - ""
  - ""
  - ""
  - ""
  - ""
  - ""
  - ""
  - ""
  - ""
  - ""
  - ""
  - ""
  - ""
- - "1234"
  - ""
  - "1"
  - ""
  - ""
  - "1e+04"
  - 29-Jan-00
  - 12:00 pm
  - "06:00:00"
  - "7.5"
  - (-3.50)
  - "1000.00"
  - "0008.6"
  - formula text
  - not a number
  - ""
  - ""
missing: []
other:
- - ""
  - x
sheets:
- - 1
  - Data
- - 3
  - Other
trimmed:
- - name
  - ' value '
  - Rich
  - ""
  - ""
  - ""
  - ""
  - ""
  - ""
  - ""
  - ""
  - ""
  - ""
  - ""
  - ""
  - ""
  - ""
- - inline
  - "42.50"
  - 25%
  - 01-01-20
  - 1/1/20 18:00
  - 12.35%
  - ""
  - ""
  - ""
  - ""
  - ""
  - ""
  - ""
  - ""
  - ""
  - ""
  - ""
- - ""
  - ""
  - ""
  - ""
  - ""
  - ""
  - ""
  - ""
  - ""
  - ""
  - ""
  - ""
  - ""
  - ""
  - ""
  - ""
  - ""
- - "1234"
  - ""
  - "1"
  - ""
  - ""
  - "1e+04"
  - 29-Jan-00
  - 12:00 pm
  - "06:00:00"
  - "7.5"
  - (-3.50)
  - "1000.00"
  - "0008.6"
  - formula text
  - not a number
  - ""
  - ""
`

func FuzzReadWorkbook(f *testing.F) {
	f.Add(testWorkbook(), "Data")
	f.Add([]byte("PK\x03\x04"), "x")
	f.Fuzz(func(t *testing.T, data []byte, sheet string) {
		wb, err := readWorkbook(data)
		if err != nil {
			return
		}
		rows, err := wb.rows(sheet)
		if err != nil {
			return
		}
		for _, r := range rows {
			if len(r) > maxSheetColumns {
				t.Fatalf("a row of %d cells", len(r))
			}
		}
		if !sort.SliceIsSorted(wb.sheets, func(a, b int) bool { return wb.sheets[a].index < wb.sheets[b].index }) {
			t.Fatalf("sheets out of order: %v", wb.sheets)
		}
	})
}

func TestReadWorkbookErrors(t *testing.T) {
	t.Parallel()
	if _, err := readWorkbook([]byte("not a zip")); err == nil {
		t.Error("not a zip archive: no error")
	}
	const ns = `xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"`
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	for name, body := range map[string]string{
		"xl/workbook.xml": `<workbook ` + ns + ` xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets>` +
			`<sheet name="S" r:id="a"/><sheet name="T" r:id="b"/></sheets></workbook>`,
		"xl/_rels/workbook.xml.rels": `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">` +
			`<Relationship Id="a" Target="worksheets/sheet1.xml"/><Relationship Id="b" Target="/xl/worksheets/sheet2.xml"/></Relationships>`,
		"xl/worksheets/sheet1.xml": `<worksheet ` + ns + `><sheetData><row r="1"><c t="s"><v>0</v></c></row></sheetData></worksheet>`,
		"xl/worksheets/sheet2.xml": `<worksheet ` + ns + `><sheetData><row r="1"><c r="A1" t="s"><v>5</v></c></row></sheetData></worksheet>`,
	} {
		f, _ := w.Create(name)
		f.Write([]byte(body))
	}
	w.Close()
	wb, err := readWorkbook(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]workbookSheet{{1, "S"}, {2, "T"}}, wb.sheets, cmp.AllowUnexported(workbookSheet{})); d != "" {
		t.Errorf("sheets (-want +got):\n%s", d)
	}
	// excelize crashes on both: a cell without a reference, a shared string that is not there
	for sheet, want := range map[string]string{"S": "without a reference", "T": "names shared string 5, and there are 0"} {
		if _, err := wb.rows(sheet); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("sheet %s: %v, want an error saying %q", sheet, err, want)
		}
	}
}

// compareProbeWith is compareProbe for a function of its own (the network allowed, a sandbox);
// norms, if any, are applied to both sides before comparing.
func compareProbeWith(t *testing.T, f *Function, kpt string, norms ...func(any) any) {
	t.Helper()
	out, err := f.Run(context.Background(), list(t))
	if err != nil {
		t.Fatal(err)
	}
	if fn.HasErrors(out.Results) {
		t.Fatalf("results: %v", out.Results)
	}
	probe, err := out.Items[0].Pipe(yaml.Lookup("spec", "probe"))
	if err != nil || probe == nil {
		t.Fatalf("no probe: %v", err)
	}
	var got, want any
	if err := probe.YNode().Decode(&got); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal([]byte(kpt), &want); err != nil {
		t.Fatal(err)
	}
	for _, norm := range norms {
		got, want = norm(got), norm(want)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("module results (-kpt's starlark function +krm-catalog):\n%s", d)
	}
}
