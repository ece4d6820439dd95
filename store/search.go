package store

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
)

// FunctionSummary is one search result: a function as its current catalogs and definition describe it.
type FunctionSummary struct {
	Group       string   `json:"group"`
	Kind        string   `json:"kind"`
	Publisher   string   `json:"publisher"`
	Description string   `json:"description"`
	Tags        []string `json:"tags"`
	Runtimes    []string `json:"runtimes"`
	Versions    []string `json:"versions"`
	Catalogs    []string `json:"catalogs"`
	// Rank is the tier a text search placed the function in (see rankExact and the others); zero
	// without text.
	Rank float32 `json:"rank,omitempty"`
}

// The ranks of a text search, best first. A function belongs to the first tier it qualifies for,
// and each tier lists its functions by group and kind.
const (
	rankOther       = 1 // every word matches somewhere: name, description, tags or publisher
	rankDescription = 2 // every word matches in the name or the description
	rankName        = 3 // every word matches in the group or kind
	rankExact       = 4 // the text is the kind, ignoring case, spaces and punctuation
)

// SearchQuery filters and pages a search. Tags must all be present.
type SearchQuery struct {
	Text      string
	Tags      []string
	Publisher string
	Runtime   string
	Limit     int
	PageToken string
}

// FacetCount is how many results have one value of a facet.
type FacetCount struct {
	Value string `json:"value"`
	Count int    `json:"count"`
	// Capped marks a count taken over the first CountCap matches only: at least Count results have
	// the value.
	Capped bool `json:"capped,omitempty"`
}

// Facets count the results by publisher, tag and runtime kind. Each facet is counted with the other
// facets' filters applied but not its own, so a filter can be widened again.
type Facets struct {
	Publisher []FacetCount `json:"publisher"`
	Tag       []FacetCount `json:"tag"`
	Runtime   []FacetCount `json:"runtime"`
}

// SearchResult is a page of search results.
type SearchResult struct {
	Functions []FunctionSummary `json:"functions"`
	// Total is the number of results, counted up to CountCap; TotalCapped says that more match.
	Total         int    `json:"total"`
	TotalCapped   bool   `json:"totalCapped"`
	Facets        Facets `json:"facets"`
	NextPageToken string `json:"nextPageToken,omitempty"`
}

// MaxSearchLimit caps the page size.
const MaxSearchLimit = 100

// Bounds on a search, the API's and the website's alike. Each word of the text is a prefix match
// in the query, so the words bound the query's cost (thousands of words made PostgreSQL's parser
// run out of stack); the rest bound the filters' size. They are generous for people and tools.
const (
	MaxSearchText  = 200 // characters of text
	MaxSearchWords = 16  // words of text
	MaxSearchTags  = 10  // tags that must all match
	MaxFilterLen   = 253 // a DNS name, the longest publisher or tag expected
)

// Check reports a search over the bounds as ErrInvalid, with a message saying which and how to
// fix it.
func (q SearchQuery) Check() error {
	switch {
	case utf8.RuneCountInString(q.Text) > MaxSearchText:
		return Errorf(ErrInvalid, "the search text is longer than %d characters: shorten it", MaxSearchText)
	case len(searchWords(q.Text)) > MaxSearchWords:
		return Errorf(ErrInvalid, "the search text has more than %d words: use fewer words, or filters", MaxSearchWords)
	case len(q.Tags) > MaxSearchTags:
		return Errorf(ErrInvalid, "a search can require at most %d tags", MaxSearchTags)
	case len(q.Publisher) > MaxFilterLen:
		return Errorf(ErrInvalid, "the publisher filter is longer than %d bytes", MaxFilterLen)
	}
	for _, t := range q.Tags {
		if len(t) > MaxFilterLen {
			return Errorf(ErrInvalid, "a tag filter is longer than %d bytes", MaxFilterLen)
		}
	}
	return nil
}

// CountCap is how many matches a search counts, for its total and for each facet, before it stops
// and says so. Counting is what made a broad search cost as much as its matches; a person reads
// "500+" as well as "34,112". An empty search, and one filter alone, read exact totals that each
// publish keeps.
const CountCap = 500

// ErrBadPageToken is returned for a page token this store did not issue for the same query.
var ErrBadPageToken = errors.New("invalid page token")

// text is what a search's words become: the tsquery in which each must match as a prefix, and the
// spelling of an exact kind.
type text struct{ tsquery, exact string }

// searchWords are the words of a search text: its runs of letters and digits, lower case.
func searchWords(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

func searchText(s string) text {
	words := searchWords(s)
	exact := strings.Join(words, "")
	for i, w := range words {
		words[i] = w + ":*"
	}
	return text{tsquery: strings.Join(words, " & "), exact: exact}
}

// pageToken is the opaque continuation of a search: where the next page starts (a tier and an
// offset in it), bound to the query it pages.
type pageToken struct {
	Rank   int    `json:"r"`
	Offset int    `json:"o"`
	Query  string `json:"q"`
}

// position reads the query's page token: where the page starts, or ErrBadPageToken for a token this
// store did not issue for this query.
func (q SearchQuery) position(t text) (rank, offset int, err error) {
	if q.PageToken == "" {
		if t.tsquery == "" {
			return 0, 0, nil
		}
		return rankExact, 0, nil
	}
	data, err := base64.RawURLEncoding.DecodeString(q.PageToken)
	var pt pageToken
	if err != nil || json.Unmarshal(data, &pt) != nil || pt.Query != q.fingerprint() || pt.Offset < 0 || pt.Offset > maxOffset ||
		pt.Rank < 0 || pt.Rank > rankExact || (pt.Rank == 0) != (t.tsquery == "") {
		return 0, 0, ErrBadPageToken
	}
	return pt.Rank, pt.Offset, nil
}

// maxOffset bounds how deep a page token may page: far beyond any catalog, and small enough that a
// forged token cannot ask PostgreSQL to skip billions of rows.
const maxOffset = 1_000_000

// fingerprint identifies a query's results; "2" is the token format (tiers and offsets in them),
// so that tokens of the earlier format (one offset over a ranked list) are refused.
func (q SearchQuery) fingerprint() string {
	return strings.Join([]string{"2", q.Text, strings.Join(q.Tags, ","), q.Publisher, q.Runtime}, "\x00")
}

// SearchFunctions runs a ranked full-text search over the current functions, with facet counts.
// Its cost follows the page, not the number of matches: the page is read tier by tier in index
// order, and the counts stop at CountCap.
func (s *Store) SearchFunctions(ctx context.Context, q SearchQuery) (SearchResult, error) {
	if err := q.Check(); err != nil {
		return SearchResult{}, fmt.Errorf("search functions: %w", err)
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 20
	}
	limit = min(limit, MaxSearchLimit)
	t := searchText(q.Text)
	rank, offset, err := q.position(t)
	if err != nil {
		return SearchResult{}, fmt.Errorf("search functions: %w", err)
	}
	// The page and the counts are independent: they run at once on two connections, so a search
	// takes as long as the slower of the two.
	res := SearchResult{Facets: Facets{Publisher: []FacetCount{}, Tag: []FacetCount{}, Runtime: []FacetCount{}}}
	var (
		next    *pageToken
		pageErr error
	)
	pageDone := make(chan struct{})
	go func() {
		defer close(pageDone)
		res.Functions, next, pageErr = s.page(ctx, q, t, rank, offset, limit)
	}()
	countErr := s.count(ctx, q, t, &res)
	<-pageDone
	if pageErr != nil {
		return SearchResult{}, fmt.Errorf("search functions: %w", pageErr)
	}
	if countErr != nil {
		return SearchResult{}, fmt.Errorf("search facets: %w", countErr)
	}
	if next != nil {
		next.Query = q.fingerprint()
		data, _ := json.Marshal(next)
		res.NextPageToken = base64.RawURLEncoding.EncodeToString(data)
	}
	return res, nil
}

// page reads up to limit results from the tier of the given rank at offset on, moving to the next
// tiers while the page is not full, and one result more, to know where the next page starts.
func (s *Store) page(ctx context.Context, q SearchQuery, t text, rank, offset, limit int) ([]FunctionSummary, *pageToken, error) {
	fns := []FunctionSummary{}
	for ; ; rank, offset = rank-1, 0 {
		if rank == rankExact && t.exact == "" {
			continue
		}
		need := limit + 1 - len(fns)
		sql, args := pageStatement(q, t, rank, need, offset)
		// Planned anew with the actual words each time: a plan cached for all words would read
		// "namespace" (a third of all functions) like "ensure secrets" (one in a hundred).
		rows, err := s.pool.Query(ctx, sql, append([]any{pgx.QueryExecModeCacheDescribe}, args...)...)
		if err != nil {
			return nil, nil, err
		}
		tier, err := pgx.CollectRows(rows, pgx.RowToStructByPos[FunctionSummary])
		if err != nil {
			return nil, nil, err
		}
		if len(fns)+len(tier) > limit {
			// the extra result is where the next page starts
			at := offset + limit - len(fns)
			return append(fns, tier[:limit-len(fns)]...), &pageToken{Rank: rank, Offset: at}, nil
		}
		fns = append(fns, tier...)
		if rank <= rankOther {
			return fns, nil, nil
		}
	}
}

// count fills in the total and the facets.
func (s *Store) count(ctx context.Context, q SearchQuery, t text, res *SearchResult) error {
	sql, args := countStatement(q, t, s.searchProbe)
	rows, err := s.pool.Query(ctx, sql, append([]any{pgx.QueryExecModeCacheDescribe}, args...)...)
	if err != nil {
		return err
	}
	defer rows.Close()
	facets := [...]*[]FacetCount{countPublisher: &res.Facets.Publisher, countTag: &res.Facets.Tag, countRuntime: &res.Facets.Runtime}
	var capped [countTotal + 1]bool
	for rows.Next() {
		var (
			part  int
			value *string
			n     int
		)
		if err := rows.Scan(&part, &value, &n); err != nil {
			return err
		}
		switch {
		case part == countKeptTotal:
			res.Total = n
		case value == nil && part == countTotal:
			res.Total, res.TotalCapped = min(n, CountCap), n > CountCap
		case value == nil:
			capped[part] = n > CountCap
		default:
			*facets[part] = append(*facets[part], FacetCount{Value: *value, Count: n})
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for part, f := range facets {
		for i := range *f {
			if capped[part] {
				// a sample holds CountCap+1 matches, of which CountCap are promised
				(*f)[i].Count, (*f)[i].Capped = min((*f)[i].Count, CountCap), true
			}
		}
		sortFacet(*f)
	}
	return nil
}

func sortFacet(fc []FacetCount) {
	slices.SortFunc(fc, func(a, b FacetCount) int {
		if a.Count != b.Count {
			return b.Count - a.Count
		}
		return strings.Compare(a.Value, b.Value)
	})
}
