package apiclient

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// Function is one search result.
type Function struct {
	Group       string   `json:"group"`
	Kind        string   `json:"kind"`
	Publisher   string   `json:"publisher"`
	Description string   `json:"description"`
	Tags        []string `json:"tags"`
	Runtimes    []string `json:"runtimes"`
	Versions    []string `json:"versions"`
	Catalogs    []string `json:"catalogs"`
}

// FacetCount is how many results have one value of a facet.
type FacetCount struct {
	Value string `json:"value"`
	Count int    `json:"count"`
}

// Facets count the results by publisher, tag and runtime kind.
type Facets struct {
	Publisher []FacetCount `json:"publisher"`
	Tag       []FacetCount `json:"tag"`
	Runtime   []FacetCount `json:"runtime"`
}

// SearchResult is a page of search results.
type SearchResult struct {
	Functions []Function `json:"functions"`
	Total     int        `json:"total"`
	// TotalCapped says that Total is a lower bound: a service may stop counting past a cap. Older
	// services do not send it, and its JSON type is not relied on (see UnmarshalJSON).
	TotalCapped   bool   `json:"totalCapped,omitempty"`
	Facets        Facets `json:"facets"`
	NextPageToken string `json:"nextPageToken,omitempty"`
}

// UnmarshalJSON reads a search answer; totalCapped is taken as true when it is true or a
// non-zero number, so that either shape a service sends is understood.
func (r *SearchResult) UnmarshalJSON(data []byte) error {
	type plain SearchResult
	var aux struct {
		plain
		TotalCapped json.RawMessage `json:"totalCapped"`
	}
	if err := json.Unmarshal(data, &aux); err != nil {
		return err
	}
	*r = SearchResult(aux.plain)
	switch c := strings.TrimSpace(string(aux.TotalCapped)); c {
	case "", "null", "false", "0":
		r.TotalCapped = false
	default:
		r.TotalCapped = c == "true" || c[0] >= '1' && c[0] <= '9'
	}
	return nil
}

// SearchQuery filters and pages a search; empty fields do not filter. Every tag must be present.
type SearchQuery struct {
	Text      string
	Tags      []string
	Publisher string
	Runtime   string
	Limit     int
	PageToken string
}

// Search runs GET /api/v1/functions.
func (c *Client) Search(ctx context.Context, q SearchQuery) (SearchResult, error) {
	v := url.Values{}
	set := func(k, val string) {
		if val != "" {
			v.Set(k, val)
		}
	}
	set("q", q.Text)
	set("publisher", q.Publisher)
	set("runtime", q.Runtime)
	set("page_token", q.PageToken)
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	for _, t := range q.Tags {
		v.Add("tag", t)
	}
	var out SearchResult
	err := c.do(ctx, http.MethodGet, "/api/v1/functions?"+v.Encode(), "", nil, &out)
	return out, err
}

// responseError turns an error answer into an *Error, with the body's message or else its text.
func responseError(resp *http.Response, data []byte) error {
	var e struct {
		Error Error `json:"error"`
	}
	if json.Unmarshal(data, &e) != nil || e.Error.Message == "" {
		e.Error.Message = strings.TrimSpace(string(data))
		if e.Error.Message == "" {
			e.Error.Message = resp.Status
		}
	}
	e.Error.Status = resp.StatusCode
	return &e.Error
}
