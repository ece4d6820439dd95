package starlark

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.starlark.net/starlark"

	"github.com/krm-catalog/krm-catalog/fn"
)

// htmlProbe exercises every method of bsoup and html on one page.
const htmlProbe = `load("bsoup.star", "bsoup")
load("html.star", "html")
page = """<!DOCTYPE html>
<html>
  <head><title>Sample page</title></head>
  <body>
    <div id="header" class="top bar">header</div>
    <div id="content">
      <ul>
        <li class="x">one</li>
        <li>two</li>
        <li>
          <b>three</b>
        </li>
      </ul>
    </div>
    <!-- a note -->
    <div class="footer">
      <span id="abc" style="color:red;">foot</span>
      <a id="H" href="http://foo.com">link</a>
    </div>
  </body>
</html>"""
d = {}
s = bsoup.parseHtml(page)
d["root"] = str(s.child("head"))
d["ul"] = str(s.find("ul"))
d["li"] = [str(n) for n in s.find_all("li")]
d["li_text"] = [n.get_text() for n in s.find_all("li")]
d["by_class"] = str(s.find("div", {"class": "bar"}))
d["by_kw"] = str(s.find(id="abc"))
d["any_by_kw"] = [str(n) for n in s.find_all(id="content")]
d["missing"] = str(s.find("table"))
d["attrs"] = s.find("span").attrs()
d["no_attrs"] = s.find("ul").attrs()
d["contents"] = [str(n) for n in s.find("ul").contents()]
d["child"] = str(s.find("ul").child("li"))
d["no_child"] = str(s.find("ul").child("b"))
d["parent"] = str(s.find("b").parent())
d["next"] = str(s.find("li").next_sibling())
d["prev"] = str(s.find_all("li")[1].prev_sibling())
d["text_body"] = s.child("body").get_text()
d["text_div"] = s.find("div").get_text()
d["type"] = type(s)
doc = html(page)
d["h_text"] = doc.find("#content li").text()
d["h_attr"] = doc.find("a").attr("href")
d["h_no_attr"] = doc.find("a").attr("nope")
d["h_len"] = doc.find("li").len()
d["h_get"] = doc.find("li").get()
d["h_get1"] = doc.find("div").get(1)
d["h_get9"] = doc.find("div").get(9)
d["h_eq"] = doc.find("li").eq(1).text()
d["h_first_last"] = [doc.find("li").first().text(), doc.find("li").last().text()]
d["h_children"] = doc.find("ul").children().len()
d["h_cf"] = doc.find("ul").children_filtered(".x").text()
d["h_contents"] = doc.find("ul").contents().len()
d["h_filter"] = doc.find("div").filter(".footer").find("span").text()
d["h_has"] = doc.find("div").has("b").attr("id")
d["h_parent"] = doc.find("b").parent().parent().attr("id")
d["h_pu"] = doc.find("b").parents_until("div").len()
d["h_sib"] = doc.find("#abc").siblings().text()
d["h_bad_selector"] = doc.find("[[").len()
d["h_title"] = doc.find("title").text()
ctx.resource_list["items"][0]["spec"] = {"probe": d}
`

// The bsoup and html modules as kpt's starlark function has them: the want is what that function
// (krm-functions-catalog's functions/go/starlark, built from source) returned for htmlProbe.
func TestStarlarkLoadsHTMLModules(t *testing.T) {
	t.Parallel()
	// the probe as that function wrote it
	compareProbe(t, htmlProbe, `any_by_kw:
- |-
  <div id="content">
        <ul>
          <li class="x">one</li>
          <li>two</li>
          <li>
            <b>three</b>
          </li>
        </ul>
      </div>
attrs:
  id: abc
  style: color:red;
by_class: <div id="header" class="top bar">header</div>
by_kw: <span id="abc" style="color:red;">foot</span>
child: <li class="x">one</li>
contents:
- "\n        "
- <li class="x">one</li>
- "\n        "
- <li>two</li>
- "\n        "
- |-
  <li>
            <b>three</b>
          </li>
- "\n      "
h_attr: http://foo.com
h_bad_selector: 0
h_cf: one
h_children: 3
h_contents: 7
h_eq: two
h_filter: foot
h_first_last:
- one
- "\n          three\n        "
h_get:
- li
- li
- li
h_get1: div
h_get9: null
h_has: content
h_len: 3
h_no_attr: null
h_parent: null
h_pu: 2
h_sib: link
h_text: "onetwo\n          three\n        "
h_title: Sample page
li:
- <li class="x">one</li>
- <li>two</li>
- |-
  <li>
            <b>three</b>
          </li>
li_text:
- one
- two
- ""
missing: None
next: "\n        "
no_attrs: {}
no_child: None
parent: |-
  <li>
            <b>three</b>
          </li>
prev: "\n        "
root: <head><title>Sample page</title></head>
text_body: ""
text_div: header
type: SoupNode
ul: |-
  <ul>
          <li class="x">one</li>
          <li>two</li>
          <li>
            <b>three</b>
          </li>
        </ul>
`)
}

// What the modules do where kpt's function fails or crashes, and the errors they give.
func TestStarlarkHTMLModuleEdges(t *testing.T) {
	t.Parallel()
	const page = `<html><body><p id="a" class="x y">one</p><p id="b" class="y">two</p></body></html>`
	tests := []struct{ name, expr, want, wantErr string }{
		// kpt's function hands out a node of nothing here and crashes when it is printed
		{"the parent of the document", `str(s.parent().parent())`, "None", ""},
		{"no sibling past the last", `str(s.find("p", id="b").next_sibling())`, "None", ""},
		// kpt's function matches nothing when given more than one attribute; BeautifulSoup all
		{"two attributes", `str(s.find("p", {"class": "y"}, id="b"))`, `<p id="b" class="y">two</p>`, ""},
		{"a class among others", `len(s.find_all({"class": "y"}))`, "2", ""},
		{"two tag names", `s.find("p", "div")`, "", "only one tagName"},
		{"an attribute not a string", `s.find(id=1)`, "", "want a string"},
		{"parseHtml without a page", `bsoup.parseHtml()`, "", "missing argument"},
		{"html without a page", `html()`, "", "missing argument"},
		{"get past the start", `str(html(page).find("p").get(-3))`, "None", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			script := `load("bsoup.star", "bsoup")
load("html.star", "html")
page = '` + page + `'
s = bsoup.parseHtml(page)
ctx.resource_list["items"][0]["spec"] = {"probe": str(` + tc.expr + `)}
`
			out, err := (&Function{Script: script}).Run(context.Background(), list(t))
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantErr != "" {
				if len(out.Results) != 1 || !strings.Contains(out.Results[0].Message, tc.wantErr) {
					t.Fatalf("results %v, want one error about %q", out.Results, tc.wantErr)
				}
				return
			}
			if fn.HasErrors(out.Results) {
				t.Fatalf("results: %v", out.Results)
			}
			got, err := out.Items[0].GetString("spec.probe")
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("%s (-want +got):\n%s", tc.expr, d)
			}
		})
	}
}

// The HTML parsers take whatever a package holds: no page or selector panics them.
func FuzzHTMLModules(f *testing.F) {
	f.Add(`<html><body><ul><li class="a">x</li></ul><!-- c --></body></html>`, "li")
	f.Add("<table><td>x<p>y</table>", "td > p, [class~=a]")
	f.Add("", "[[")
	f.Fuzz(func(t *testing.T, page, query string) {
		th := &starlark.Thread{}
		s, err := bsoupParse(th, starlark.NewBuiltin("parseHtml", nil), starlark.Tuple{starlark.String(page)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		nodes, err := starlark.Call(th, mustAttr(t, s, "find_all"), starlark.Tuple{starlark.String(query)}, []starlark.Tuple{{starlark.String("class"), starlark.String(query)}})
		if err != nil {
			t.Fatal(err)
		}
		all, err := starlark.Call(th, mustAttr(t, s, "find_all"), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		found := slices.Collect(nodes.(*starlark.List).Elements())
		for v := range slices.Values(append(found, slices.Collect(all.(*starlark.List).Elements())...)) {
			_ = v.String()
			for _, m := range []string{"get_text", "attrs", "contents", "parent", "next_sibling", "prev_sibling"} {
				if _, err := starlark.Call(th, mustAttr(t, v, m), nil, nil); err != nil {
					t.Fatal(m, err)
				}
			}
		}
		doc, err := htmlDocument(th, starlark.NewBuiltin("html", nil), starlark.Tuple{starlark.String(page)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		sel, err := starlark.Call(th, mustAttr(t, doc, "find"), starlark.Tuple{starlark.String(query)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range []string{"text", "len", "get", "siblings", "parent", "children", "contents"} {
			if _, err := starlark.Call(th, mustAttr(t, sel, m), nil, nil); err != nil {
				t.Fatal(m, err)
			}
		}
		for _, m := range []string{"filter", "has", "children_filtered", "parents_until", "attr"} {
			if _, err := starlark.Call(th, mustAttr(t, sel, m), starlark.Tuple{starlark.String(query)}, nil); err != nil {
				t.Fatal(m, err)
			}
		}
	})
}
