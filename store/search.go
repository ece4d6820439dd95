package store

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
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
// spelling of an exact kind; once expanded (Store.expand), query is the tsquery the statements
// match, as tsquery input.
type text struct {
	words          []string
	tsquery, exact string
	query          string
	expanded       bool // query is set
	// share is the planner's statistics' estimate of the share of functions query matches: the
	// product of each word's share (its words' shares summed); 0 without statistics.
	share float64
}

// searchWords are the words of a search text: its runs of letters and digits, lower case.
func searchWords(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

func searchText(s string) text {
	words := searchWords(s)
	prefixes := make([]string, len(words))
	for i, w := range words {
		prefixes[i] = w + ":*"
	}
	return text{words: words, tsquery: strings.Join(prefixes, " & "), exact: strings.Join(words, "")}
}

// maxExpansion is how many words of the index one prefix may become; a prefix that covers more
// ("s") stays a prefix match.
const maxExpansion = 32

// expand sets t.query for a text of two words or more: the words as PostgreSQL's english
// configuration reads them as prefixes ("ensure" becomes the prefix "ensur"), each prefix replaced
// by the words of the index that begin with it (search_lexemes), matched exactly, and t.share. The
// results are the same; the cost is not: GIN reads a prefix by collecting every posting of every
// word it covers into a bitmap, and it reads exact words through their posting lists, skipping
// along the rarer one. A word the configuration drops (a stop word) is dropped, as to_tsquery drops
// it. One word is left to to_tsquery: the planner's estimate of it is good, a broad word is read
// in table order at no cost from its prefix, and the round trip would cost more than it saves.
func (s *Store) expand(ctx context.Context, t *text) error {
	if len(t.words) < 2 {
		return nil
	}
	rows, err := s.pool.Query(ctx, sqlExpandWords, t.words, maxExpansion+1)
	if err != nil {
		return err
	}
	type word struct {
		part     string
		expanded bool
		lexemes  []string
	}
	var words []word
	for rows.Next() {
		var (
			query   string
			stem    *string
			lexemes []string
		)
		if err := rows.Scan(&query, &stem, &lexemes); err != nil {
			rows.Close()
			return err
		}
		if part, expanded := expandedWord(query, stem != nil, lexemes); part != "" {
			words = append(words, word{part, expanded, lexemes})
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	shares := s.lexemeShares(ctx)
	parts := make([]string, len(words))
	t.share = 1
	for i, w := range words {
		parts[i] = w.part
		switch {
		case shares == nil:
			t.share = 0 // no statistics
		case w.expanded:
			share := 0.0 // words not among the most common count as rare
			for _, l := range w.lexemes {
				share += shares[l]
			}
			t.share *= min(share, 1)
		} // a prefix left as it is: unknown, taken for broad
	}
	// stop words only: an empty tsquery, which matches nothing, as to_tsquery's
	t.query, t.expanded = strings.Join(parts, " & "), true
	return nil
}

// sqlExpandWords reads, for each word, to_tsquery's reading of it as a prefix, the prefix when that
// reading is one prefix, and up to $2 words of the index that begin with it, in order.
const sqlExpandWords = `
SELECT q.query::text, p.stem, CASE WHEN p.stem IS NOT NULL THEN ARRAY(
    SELECT l.lexeme FROM search_lexemes l
    WHERE l.lexeme >= p.stem AND l.lexeme < p.stem || chr(1114111) AND starts_with(l.lexeme, p.stem)
    ORDER BY l.lexeme LIMIT $2) END
FROM unnest($1::text[]) WITH ORDINALITY AS w(word, i)
CROSS JOIN LATERAL (SELECT to_tsquery('english', w.word || ':*') AS query) q
CROSS JOIN LATERAL (SELECT substring(q.query::text FROM '^''([^''\\]+)'':\*$') COLLATE "C" AS stem) p
ORDER BY w.i`

// lexemeShares returns the share of current functions each of the search column's most common
// words is in, by the planner's statistics of function_facets, which the counts read, read at most
// once a minute (they change with ANALYZE, and only choose a plan); nil without statistics.
func (s *Store) lexemeShares(ctx context.Context) map[string]float64 {
	s.shares.mu.Lock()
	defer s.shares.mu.Unlock()
	if time.Since(s.shares.read) < time.Minute {
		return s.shares.m
	}
	rows, err := s.pool.Query(ctx, sqlLexemeShares)
	if err != nil {
		return s.shares.m // keep the last; try again on the next search
	}
	m := map[string]float64{}
	for rows.Next() {
		var (
			l string
			f float64
		)
		if rows.Scan(&l, &f) == nil {
			m[l] = f
		}
	}
	if rows.Err() != nil {
		return s.shares.m
	}
	if len(m) == 0 {
		m = nil
	}
	s.shares.m, s.shares.read = m, time.Now()
	return m
}

const sqlLexemeShares = `
SELECT e, f::float8 FROM pg_stats, unnest(most_common_elems::text::text[], most_common_elem_freqs) AS x(e, f)
WHERE schemaname = current_schema() AND tablename = 'function_facets' AND attname = 'search' AND e IS NOT NULL`

// expandedWord is one word of an expanded query: query is to_tsquery's reading of the word as a
// prefix ("" for a stop word), isPrefix whether that reading is one prefix, lexemes the words of
// the index that begin with it (at most maxExpansion+1); expanded says whether it became those
// words.
func expandedWord(query string, isPrefix bool, lexemes []string) (part string, expanded bool) {
	switch {
	case query == "":
		return "", false
	case !isPrefix || len(lexemes) == 0 || len(lexemes) > maxExpansion:
		// a word that matches nothing costs GIN nothing as a prefix either
		return "(" + query + ")", false
	}
	quoted := make([]string, len(lexemes))
	for i, l := range lexemes {
		quoted[i] = "'" + tsqueryQuote.Replace(l) + "'"
	}
	return "(" + strings.Join(quoted, " | ") + ")", true
}

// tsqueryQuote escapes a lexeme inside the quotes of tsquery input.
var tsqueryQuote = strings.NewReplacer(`\`, `\\`, `'`, `''`)

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
	if err := s.expand(ctx, &t); err != nil {
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
	sql, args, parts := countStatement(q, t, s.searchProbe, s.searchSample)
	rows, err := s.pool.Query(ctx, sql, append([]any{pgx.QueryExecModeCacheDescribe}, args...)...)
	if err != nil {
		return err
	}
	defer rows.Close()
	facets := [...]*[]FacetCount{countPublisher: &res.Facets.Publisher, countTag: &res.Facets.Tag, countRuntime: &res.Facets.Runtime}
	var samples [][]sampleMatch // by number
	for rows.Next() {
		var (
			source         int
			value          *string
			n              *int
			tags, runtimes []string
		)
		if err := rows.Scan(&source, &value, &n, &tags, &runtimes); err != nil {
			return err
		}
		switch {
		case source < 0:
			k := sampleSource(source) // its own inverse
			for len(samples) <= k {
				samples = append(samples, nil)
			}
			m := sampleMatch{tags: tags, runtimes: runtimes}
			if value != nil {
				m.publisher = *value
			}
			samples[k] = append(samples[k], m)
		case source == countKeptTotal:
			res.Total = *n
		default:
			*facets[source] = append(*facets[source], FacetCount{Value: *value, Count: *n})
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for part, k := range parts {
		if k < 0 {
			continue
		}
		var matches []sampleMatch
		if k < len(samples) {
			matches = samples[k]
		}
		// a sample holds CountCap+1 matches when there are more, of which CountCap are promised
		capped := len(matches) > CountCap
		if part == countTotal {
			res.Total, res.TotalCapped = min(len(matches), CountCap), capped
			continue
		}
		*facets[part] = countFacet(part, matches, capped)
	}
	for _, f := range facets {
		sortFacet(*f)
	}
	return nil
}

// sampleMatch is one match of a count's sample: what the facets count.
type sampleMatch struct {
	publisher      string
	tags, runtimes []string
}

// countFacet counts a facet's values over a sample's matches; capped marks each count as taken
// over the first CountCap matches.
func countFacet(part int, matches []sampleMatch, capped bool) []FacetCount {
	n := map[string]int{}
	for _, m := range matches {
		switch part {
		case countPublisher:
			n[m.publisher]++
		case countTag:
			for _, v := range m.tags {
				n[v]++
			}
		case countRuntime:
			for _, v := range m.runtimes {
				n[v]++
			}
		}
	}
	fc := make([]FacetCount, 0, len(n))
	for v, c := range n {
		if capped {
			c = min(c, CountCap)
		}
		fc = append(fc, FacetCount{Value: v, Count: c, Capped: capped})
	}
	return fc
}

func sortFacet(fc []FacetCount) {
	slices.SortFunc(fc, func(a, b FacetCount) int {
		if a.Count != b.Count {
			return b.Count - a.Count
		}
		return strings.Compare(a.Value, b.Value)
	})
}
