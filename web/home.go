package web

import (
	"fmt"
	"net/http"
	"slices"

	"github.com/krm-catalog/krm-catalog/store"
)

// link is a labelled URL.
type link struct {
	Label string
	URL   string
}

// facetValue is one value of a facet: selecting it adds (or, when active, removes) its filter.
type facetValue struct {
	Value string
	Count int
	// Capped: the count was taken over the first matches only (store.CountCap); at least Count.
	Capped bool
	Active bool
	URL    string
}

type facetGroup struct {
	ID    string
	Label string
	// Values are the first values by count; More the rest, shown on demand.
	Values, More []facetValue
}

// activeFilter is a filter in force, with the address of the search without it.
type activeFilter struct {
	Label, Value, RemoveURL string
}

type resultCard struct {
	store.FunctionSummary
	URL          string
	PublisherURL string
	Tags         []link
}

type homePage struct {
	Base        string
	Params      searchParams
	Total       int
	TotalCapped bool // more than Total match: the page says "500+" and numbers no last page
	Functions   []resultCard
	Facets      []facetGroup
	HasFacets   bool // some facet has a value to show
	Filters     []activeFilter
	ClearURL    string // the search text without filters
	AllURL      string // everything
	Page, Pages int
	PrevURL     string
	NextURL     string
	PopularTags []link
	// Empty is set when nothing at all is published: the page explains how to publish.
	Empty bool
}

// facetShown is how many values of a facet show before "More".
const facetShown = 8

func (s *Site) home(w http.ResponseWriter, r *http.Request) error {
	p, err := parseSearch(r.URL.Query())
	if err != nil {
		return err
	}
	res, err := s.store.SearchFunctions(r.Context(), p.query())
	if err != nil {
		return err
	}
	h := homePage{Base: baseURL(r), Params: p, Total: res.Total, TotalCapped: res.TotalCapped, Page: p.pageNumber(), AllURL: "/"}
	h.Pages = max(1, (res.Total+pageSize-1)/pageSize)
	for _, f := range res.Functions {
		h.Functions = append(h.Functions, card(f, p))
	}
	h.Facets = facets(p, res.Facets)
	for _, g := range h.Facets {
		h.HasFacets = h.HasFacets || len(g.Values) > 0
	}
	h.Filters = activeFilters(p)
	h.ClearURL = searchParams{Text: p.Text}.URL()
	if prev, ok := p.previous(); ok {
		h.PrevURL = prev.URL()
	}
	if res.NextPageToken != "" {
		h.NextURL = p.next(res.NextPageToken).URL()
	}
	if len(res.Functions) == 0 && p.Page == "" {
		// An empty result helps best with where else to look: the most used tags of everything.
		all := res
		if p.filtered() {
			if all, err = s.store.SearchFunctions(r.Context(), store.SearchQuery{Limit: 1}); err != nil {
				return err
			}
		}
		h.Empty = all.Total == 0
		for i, t := range all.Facets.Tag {
			if i == 12 {
				break
			}
			h.PopularTags = append(h.PopularTags, link{Label: fmt.Sprintf("%s (%d)", t.Value, t.Count), URL: searchParams{Tags: []string{t.Value}}.URL()})
		}
	}
	title := "Find KRM functions"
	if p.Text != "" {
		title = fmt.Sprintf("“%s” – search", p.Text)
	}
	return s.render(w, r, http.StatusOK, "home", page{Title: title, Section: "functions", NoHeaderSearch: true, Body: h})
}

// card shows a function in a list; its tags link to the search p narrowed by the tag.
func card(f store.FunctionSummary, p searchParams) resultCard {
	c := resultCard{FunctionSummary: f, URL: functionURL(f.Group, f.Kind), PublisherURL: publisherURL(f.Publisher)}
	for _, t := range f.Tags {
		c.Tags = append(c.Tags, link{Label: t, URL: p.withTag(t).URL()})
	}
	return c
}

func facets(p searchParams, f store.Facets) []facetGroup {
	group := func(id, label string, counts []store.FacetCount, active func(string) bool, toggle func(string, bool) searchParams) facetGroup {
		g := facetGroup{ID: id, Label: label}
		for i, c := range counts {
			on := active(c.Value)
			v := facetValue{Value: c.Value, Count: c.Count, Capped: c.Capped, Active: on, URL: toggle(c.Value, on).URL()}
			if i < facetShown || on {
				g.Values = append(g.Values, v)
			} else {
				g.More = append(g.More, v)
			}
		}
		return g
	}
	return []facetGroup{
		group("facet-runtime", "Runtime", f.Runtime, func(v string) bool { return v == p.Runtime }, func(v string, on bool) searchParams {
			if on {
				return p.withRuntime("")
			}
			return p.withRuntime(v)
		}),
		group("facet-tag", "Tag", f.Tag, func(v string) bool { return slices.Contains(p.Tags, v) }, func(v string, on bool) searchParams {
			if on {
				return p.withoutTag(v)
			}
			return p.withTag(v)
		}),
		group("facet-publisher", "Publisher", f.Publisher, func(v string) bool { return v == p.Publisher }, func(v string, on bool) searchParams {
			if on {
				return p.withPublisher("")
			}
			return p.withPublisher(v)
		}),
	}
}

func activeFilters(p searchParams) []activeFilter {
	var out []activeFilter
	if p.Text != "" {
		out = append(out, activeFilter{Label: "Text", Value: p.Text, RemoveURL: p.withoutText().URL()})
	}
	if p.Runtime != "" {
		out = append(out, activeFilter{Label: "Runtime", Value: p.Runtime, RemoveURL: p.withRuntime("").URL()})
	}
	for _, t := range p.Tags {
		out = append(out, activeFilter{Label: "Tag", Value: t, RemoveURL: p.withoutTag(t).URL()})
	}
	if p.Publisher != "" {
		out = append(out, activeFilter{Label: "Publisher", Value: p.Publisher, RemoveURL: p.withPublisher("").URL()})
	}
	return out
}
