package starlark

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	"github.com/PuerkitoBio/goquery"
	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
	"golang.org/x/net/html"
)

// The HTML modules of kpt's starlark function (qri-io/starlib's bsoup and html): bsoup's
// BeautifulSoup-like nodes written here on golang.org/x/net/html with the results that function
// gives, and html's jQuery-like selections on goquery, the library that function wraps. Both read
// only their argument (bounded, as every string of a script, by the ResourceList size) and build
// values bounded by the sandbox's memory limit.
func htmlModules() map[string]starlark.StringDict {
	return map[string]starlark.StringDict{
		"bsoup.star": {"bsoup": &starlarkstruct.Module{Name: "bsoup", Members: starlark.StringDict{
			"parseHtml": starlark.NewBuiltin("parseHtml", bsoupParse),
		}}},
		"html.star": {"html": starlark.NewBuiltin("html", htmlDocument)},
	}
}

func bsoupParse(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var text string
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "htmlText", &text); err != nil {
		return nil, err
	}
	doc, err := html.Parse(strings.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b.Name(), err)
	}
	// the root is the document's first element, <html>, which the parser always makes
	n := doc.FirstChild
	for n != nil && n.Type != html.ElementNode {
		n = n.NextSibling
	}
	if n == nil {
		return nil, fmt.Errorf("%s: no element in the document", b.Name())
	}
	return &soupNode{n: n}, nil
}

// soupNode is bsoup's SoupNode: any node of the tree (an element, text, a comment). Where that
// function hands out a node of nothing (the parent of the document, a sibling past the last),
// which crashes it when used, this gives None.
type soupNode struct{ n *html.Node }

var _ starlark.HasAttrs = (*soupNode)(nil)

func (s *soupNode) String() string {
	var buf bytes.Buffer
	if err := html.Render(&buf, s.n); err != nil {
		return err.Error()
	}
	return buf.String()
}
func (s *soupNode) Type() string          { return "SoupNode" }
func (s *soupNode) Freeze()               {}
func (s *soupNode) Truth() starlark.Bool  { return true }
func (s *soupNode) Hash() (uint32, error) { return starlark.String(s.String()).Hash() }

var soupMethods = map[string]func(*soupNode, *starlark.Builtin, starlark.Tuple, []starlark.Tuple) (starlark.Value, error){
	"find":         (*soupNode).find,
	"find_all":     (*soupNode).findAll,
	"attrs":        (*soupNode).attrs,
	"contents":     (*soupNode).contents,
	"child":        (*soupNode).child,
	"parent":       (*soupNode).parent,
	"next_sibling": (*soupNode).nextSibling,
	"prev_sibling": (*soupNode).prevSibling,
	"get_text":     (*soupNode).getText,
}

func (s *soupNode) Attr(name string) (starlark.Value, error) {
	m, ok := soupMethods[name]
	if !ok {
		return nil, nil
	}
	return starlark.NewBuiltin(name, func(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		return m(s, b, args, kwargs)
	}), nil
}

func (s *soupNode) AttrNames() []string {
	names := make([]string, 0, len(soupMethods))
	for k := range soupMethods {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// soupQuery is what find and find_all look for: a tag name ("" for any) and attributes, each of
// which must have the value among its space-separated words (BeautifulSoup's rule for class).
type soupQuery struct {
	tag   string
	attrs [][2]string
}

// query reads find's arguments as that function does: a string is the tag name (one at most), a
// dict and keyword arguments are attributes.
func (s *soupNode) query(b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (soupQuery, error) {
	var q soupQuery
	haveTag := false
	for _, a := range args {
		switch a := a.(type) {
		case starlark.String:
			if haveTag {
				return q, fmt.Errorf("%s: only one tagName parameter is allowed, found %s", b.Name(), a)
			}
			q.tag, haveTag = string(a), true
		case *starlark.Dict:
			for _, kv := range a.Items() {
				k, ok1 := kv[0].(starlark.String)
				v, ok2 := kv[1].(starlark.String)
				if !ok1 || !ok2 {
					return q, fmt.Errorf("%s: attributes are strings, got %s: %s", b.Name(), kv[0].Type(), kv[1].Type())
				}
				q.attrs = append(q.attrs, [2]string{string(k), string(v)})
			}
		default:
			return q, fmt.Errorf("%s: invalid parameter %v", b.Name(), a)
		}
	}
	for _, kw := range kwargs {
		v, ok := kw[1].(starlark.String)
		if !ok {
			return q, fmt.Errorf("%s: %s: want a string, got %s", b.Name(), kw[0], kw[1].Type())
		}
		q.attrs = append(q.attrs, [2]string{string(kw[0].(starlark.String)), string(v)})
	}
	return q, nil
}

func (q soupQuery) matches(n *html.Node) bool {
	if n.Type != html.ElementNode || (q.tag != "" && q.tag != n.Data) {
		return false
	}
	for _, want := range q.attrs {
		found := false
		for _, a := range n.Attr {
			if a.Key == want[0] && containsWord(a.Val, want[1]) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func containsWord(val, w string) bool {
	for _, f := range strings.Fields(val) {
		if f == w {
			return true
		}
	}
	return false
}

// descendants calls f on every node below n in document order until f returns false.
func descendants(n *html.Node, f func(*html.Node) bool) bool {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if !f(c) || !descendants(c, f) {
			return false
		}
	}
	return true
}

func (s *soupNode) find(b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	q, err := s.query(b, args, kwargs)
	if err != nil {
		return nil, err
	}
	var found starlark.Value = starlark.None
	descendants(s.n, func(n *html.Node) bool {
		if q.matches(n) {
			found = &soupNode{n: n}
			return false
		}
		return true
	})
	return found, nil
}

func (s *soupNode) findAll(b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	q, err := s.query(b, args, kwargs)
	if err != nil {
		return nil, err
	}
	var found []starlark.Value
	descendants(s.n, func(n *html.Node) bool {
		if q.matches(n) {
			found = append(found, &soupNode{n: n})
		}
		return true
	})
	return starlark.NewList(found), nil
}

func (s *soupNode) attrs(b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if err := starlark.UnpackArgs(b.Name(), args, kwargs); err != nil {
		return nil, err
	}
	d := starlark.NewDict(len(s.n.Attr))
	for _, a := range s.n.Attr {
		// the first of a repeated attribute, as that function keeps it
		if _, found, _ := d.Get(starlark.String(a.Key)); !found {
			_ = d.SetKey(starlark.String(a.Key), starlark.String(a.Val))
		}
	}
	return d, nil
}

func (s *soupNode) contents(b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if err := starlark.UnpackArgs(b.Name(), args, kwargs); err != nil {
		return nil, err
	}
	var out []starlark.Value
	for c := s.n.FirstChild; c != nil; c = c.NextSibling {
		out = append(out, &soupNode{n: c})
	}
	return starlark.NewList(out), nil
}

func (s *soupNode) child(b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var name string
	if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 1, &name); err != nil {
		return nil, err
	}
	for c := s.n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.ElementNode && c.Data == name {
			return &soupNode{n: c}, nil
		}
	}
	return starlark.None, nil
}

func nodeOrNone(n *html.Node) starlark.Value {
	if n == nil {
		return starlark.None
	}
	return &soupNode{n: n}
}

func (s *soupNode) parent(b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if err := starlark.UnpackArgs(b.Name(), args, kwargs); err != nil {
		return nil, err
	}
	return nodeOrNone(s.n.Parent), nil
}

func (s *soupNode) nextSibling(b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if err := starlark.UnpackArgs(b.Name(), args, kwargs); err != nil {
		return nil, err
	}
	return nodeOrNone(s.n.NextSibling), nil
}

func (s *soupNode) prevSibling(b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if err := starlark.UnpackArgs(b.Name(), args, kwargs); err != nil {
		return nil, err
	}
	return nodeOrNone(s.n.PrevSibling), nil
}

// blank is what the function kpt runs takes for layout rather than text: one or more of Go's \s
// (a regular expression there; a compiled one here would cost every start of the binary).
func blank(s string) bool { return s != "" && strings.Trim(s, "\t\n\f\r ") == "" }

// getText is that function's get_text: the node's first child text that is not only blanks
// (not BeautifulSoup's whole text beneath the node), or "".
func (s *soupNode) getText(b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if err := starlark.UnpackArgs(b.Name(), args, kwargs); err != nil {
		return nil, err
	}
	for c := s.n.FirstChild; c != nil; c = c.NextSibling {
		if c.Type == html.TextNode && !blank(c.Data) {
			return starlark.String(c.Data), nil
		}
	}
	return starlark.String(""), nil
}

func htmlDocument(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var body string
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "body", &body); err != nil {
		return nil, err
	}
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b.Name(), err)
	}
	return selection(doc.Selection), nil
}

// selection is html's selection, with its methods' names and results. As in the function kpt
// runs, contents, parent, first and last take no selector although their documentation names one
// (one given is ignored), and an invalid selector selects nothing.
func selection(sel *goquery.Selection) *starlarkstruct.Struct {
	selector := func(name string, f func(string) *goquery.Selection) *starlark.Builtin {
		return starlark.NewBuiltin(name, func(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var s string
			if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 1, &s); err != nil {
				return nil, err
			}
			return selection(f(s)), nil
		})
	}
	plain := func(name string, f func() *goquery.Selection) *starlark.Builtin {
		return starlark.NewBuiltin(name, func(*starlark.Thread, *starlark.Builtin, starlark.Tuple, []starlark.Tuple) (starlark.Value, error) {
			return selection(f()), nil
		})
	}
	return starlarkstruct.FromStringDict(starlarkstruct.Default, starlark.StringDict{
		"attr": starlark.NewBuiltin("attr", func(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var name string
			if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 1, &name); err != nil {
				return nil, err
			}
			if v, ok := sel.Attr(name); ok {
				return starlark.String(v), nil
			}
			return starlark.None, nil
		}),
		"children":          plain("children", sel.Children),
		"children_filtered": selector("children_filtered", sel.ChildrenFiltered),
		"contents":          plain("contents", sel.Contents),
		"find":              selector("find", sel.Find),
		"filter":            selector("filter", sel.Filter),
		"get": starlark.NewBuiltin("get", func(_ *starlark.Thread, _ *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			return selectionGet(sel, args, kwargs)
		}),
		"has":           selector("has", sel.Has),
		"parent":        plain("parent", sel.Parent),
		"parents_until": selector("parents_until", sel.ParentsUntil),
		"siblings":      plain("siblings", sel.Siblings),
		"text": starlark.NewBuiltin("text", func(*starlark.Thread, *starlark.Builtin, starlark.Tuple, []starlark.Tuple) (starlark.Value, error) {
			return starlark.String(sel.Text()), nil
		}),
		"first": plain("first", sel.First),
		"last":  plain("last", sel.Last),
		"len": starlark.NewBuiltin("len", func(*starlark.Thread, *starlark.Builtin, starlark.Tuple, []starlark.Tuple) (starlark.Value, error) {
			return starlark.MakeInt(len(sel.Nodes)), nil
		}),
		"eq": starlark.NewBuiltin("eq", func(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var i int
			if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 1, &i); err != nil {
				return nil, err
			}
			return selection(sel.Eq(i)), nil
		}),
	})
}

// selectionGet is get(i), the name of the i-th node (None past the end); get() names them all.
func selectionGet(sel *goquery.Selection, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var i int
	if err := starlark.UnpackPositionalArgs("get", args, kwargs, 1, &i); err != nil {
		names := make(starlark.Tuple, len(sel.Nodes))
		for j, n := range sel.Nodes {
			names[j] = starlark.String(n.Data)
		}
		return names, nil
	}
	if i < 0 {
		i += len(sel.Nodes)
	}
	if i < 0 || i >= len(sel.Nodes) {
		return starlark.None, nil
	}
	return starlark.String(sel.Nodes[i].Data), nil
}
