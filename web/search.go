package web

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/krm-catalog/krm-catalog/store"
)

// Bounds on what a search URL may carry. They are generous for people and keep a crafted URL from
// making the server do much work.
const (
	maxSearchText = store.MaxSearchText
	maxFilterLen  = store.MaxFilterLen
	maxTags       = store.MaxSearchTags
	maxTokenLen   = 1024 // the store's tokens are far shorter
	// maxPrevPages bounds how far back "Previous" can go; see searchParams.Prev.
	maxPrevPages = 100
	// pageSize is how many results a page shows.
	pageSize = 20
)

// searchParams is a search as the home page's query string spells it:
// ?q=TEXT&tag=T&tag=U&publisher=P&runtime=R&page=TOKEN&prev=TOKEN...
type searchParams struct {
	Text      string
	Tags      []string
	Publisher string
	Runtime   string
	// Page is the store's page token for this page; empty on the first page.
	Page string
	// Prev holds the tokens of the pages between the first and this one, oldest first. The store
	// only hands out a token for the next page, so the URL remembers the way back: "Previous"
	// then works without JavaScript and without reading the store's tokens.
	Prev []string
}

// parseSearch reads and checks a search from a query string. It fails with a *badRequest on input
// no link of the site produces.
func parseSearch(v url.Values) (searchParams, error) {
	p := searchParams{
		Text:      strings.Join(strings.Fields(v.Get("q")), " "),
		Publisher: strings.TrimSpace(v.Get("publisher")),
		Runtime:   v.Get("runtime"),
		Page:      v.Get("page"),
	}
	if !utf8.ValidString(p.Text) || !utf8.ValidString(p.Publisher) {
		return searchParams{}, &badRequest{"The search is not valid UTF-8 text."}
	}
	if utf8.RuneCountInString(p.Text) > maxSearchText {
		return searchParams{}, &badRequest{fmt.Sprintf("The search text is longer than %d characters: shorten it.", maxSearchText)}
	}
	if len(p.Publisher) > maxFilterLen {
		return searchParams{}, &badRequest{"The publisher filter is too long."}
	}
	switch p.Runtime {
	case "", "container", "exec", "starlark":
	default:
		return searchParams{}, &badRequest{"The runtime filter must be container, exec or starlark."}
	}
	for _, t := range v["tag"] {
		t = strings.TrimSpace(t)
		switch {
		case t == "" || slices.Contains(p.Tags, t):
			continue
		case !utf8.ValidString(t) || len(t) > maxFilterLen:
			return searchParams{}, &badRequest{"A tag filter is not a tag."}
		}
		p.Tags = append(p.Tags, t)
	}
	if len(p.Tags) > maxTags {
		return searchParams{}, &badRequest{fmt.Sprintf("A search can require at most %d tags.", maxTags)}
	}
	if err := p.query().Check(); err != nil {
		// the bounds the API answers 400 on; their message is the store's, made a sentence
		msg := err.Error()
		return searchParams{}, &badRequest{strings.ToUpper(msg[:1]) + msg[1:] + "."}
	}
	if !isToken(p.Page) {
		return searchParams{}, &badRequest{"The page link is damaged. Start the search again from its first page."}
	}
	if p.Page != "" {
		for _, t := range v["prev"] {
			if t == "" || !isToken(t) {
				return searchParams{}, &badRequest{"The page link is damaged. Start the search again from its first page."}
			}
			p.Prev = append(p.Prev, t)
		}
		if len(p.Prev) >= maxPrevPages {
			return searchParams{}, &badRequest{fmt.Sprintf("Results are shown up to page %d: add words or filters to narrow the search.", maxPrevPages)}
		}
	}
	return p, nil
}

// isToken accepts what the store's page tokens are made of: unpadded base64url.
func isToken(s string) bool {
	if len(s) > maxTokenLen {
		return false
	}
	for _, c := range []byte(s) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// query is the store query of this page.
func (p searchParams) query() store.SearchQuery {
	return store.SearchQuery{Text: p.Text, Tags: p.Tags, Publisher: p.Publisher, Runtime: p.Runtime, Limit: pageSize, PageToken: p.Page}
}

// filtered reports whether any filter or text narrows the search.
func (p searchParams) filtered() bool {
	return p.Text != "" || len(p.Tags) > 0 || p.Publisher != "" || p.Runtime != ""
}

// values writes the query string that parseSearch reads back as p.
func (p searchParams) values() url.Values {
	v := url.Values{}
	if p.Text != "" {
		v.Set("q", p.Text)
	}
	for _, t := range p.Tags {
		v.Add("tag", t)
	}
	if p.Publisher != "" {
		v.Set("publisher", p.Publisher)
	}
	if p.Runtime != "" {
		v.Set("runtime", p.Runtime)
	}
	if p.Page != "" {
		v.Set("page", p.Page)
		for _, t := range p.Prev {
			v.Add("prev", t)
		}
	}
	return v
}

// URL is the home page address of the search.
func (p searchParams) URL() string {
	if q := p.values().Encode(); q != "" {
		return "/?" + q
	}
	return "/"
}

// The methods below return the search changed one way, always from its first page: a new filter
// makes the old page tokens meaningless.

func (p searchParams) firstPage() searchParams {
	p.Page, p.Prev = "", nil
	p.Tags = slices.Clone(p.Tags)
	return p
}

func (p searchParams) withTag(t string) searchParams {
	p = p.firstPage()
	if !slices.Contains(p.Tags, t) {
		p.Tags = append(p.Tags, t)
	}
	return p
}

func (p searchParams) withoutTag(t string) searchParams {
	p = p.firstPage()
	p.Tags = slices.DeleteFunc(p.Tags, func(x string) bool { return x == t })
	return p
}

func (p searchParams) withPublisher(v string) searchParams {
	p = p.firstPage()
	p.Publisher = v
	return p
}

func (p searchParams) withRuntime(v string) searchParams {
	p = p.firstPage()
	p.Runtime = v
	return p
}

func (p searchParams) withoutText() searchParams {
	p = p.firstPage()
	p.Text = ""
	return p
}

// next is the page after this one, whose token the store returned.
func (p searchParams) next(token string) searchParams {
	n := p
	n.Tags = slices.Clone(p.Tags)
	n.Prev = nil
	if p.Page != "" {
		n.Prev = append(slices.Clone(p.Prev), p.Page)
	}
	n.Page = token
	return n
}

// previous is the page before this one; ok is false on the first page.
func (p searchParams) previous() (searchParams, bool) {
	if p.Page == "" {
		return p, false
	}
	n := p
	n.Tags = slices.Clone(p.Tags)
	n.Page, n.Prev = "", nil
	if k := len(p.Prev); k > 0 {
		n.Page = p.Prev[k-1]
		if k > 1 {
			n.Prev = slices.Clone(p.Prev[:k-1])
		}
	}
	return n, true
}

// pageNumber is this page's position, from 1.
func (p searchParams) pageNumber() int {
	if p.Page == "" {
		return 1
	}
	return len(p.Prev) + 2
}
