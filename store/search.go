package store

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
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

// searchSQL builds one statement of a search. The SQL text differs with the filters present, so
// each shape gets a plan of its own (a generic plan for "$1 = ” OR search @@ ..." would not use the
// GIN index). Placeholders are numbered as used.
type searchSQL struct {
	args  []any
	slots map[string]string
}

func newSearchSQL() *searchSQL { return &searchSQL{slots: map[string]string{}} }

func (b *searchSQL) arg(name string, v any) string {
	if p, ok := b.slots[name]; ok {
		return p
	}
	b.args = append(b.args, v)
	p := "$" + strconv.Itoa(len(b.args))
	b.slots[name] = p
	return p
}

// conds returns the filter conditions on functions f, leaving out the filter of the facet skip.
// With text (withText), the runtime is tested row by row, out of reach of its index: there are
// three runtimes, so each holds a large part of the functions, and the planner, multiplying the
// runtime's share by the text's, took the two for rarer together than they are and read every
// function of the runtime through the index, far more than the text index and the first rows give.
func (b *searchSQL) conds(q SearchQuery, skip string, withText bool) []string {
	return append([]string{"cardinality(f.versions) > 0"}, b.filters(q, skip, withText)...)
}

// filters returns the conditions of the query's filters on functions f, leaving out the filter of
// the facet skip (see conds).
func (b *searchSQL) filters(q SearchQuery, skip string, withText bool) []string {
	var c []string
	if len(q.Tags) > 0 && skip != "tag" {
		c = append(c, "f.tags @> "+b.arg("tags", q.Tags)+"::text[]")
	}
	if q.Publisher != "" && skip != "publisher" {
		c = append(c, "f.publisher = "+b.arg("publisher", q.Publisher))
	}
	switch {
	case q.Runtime == "" || skip == "runtime":
	case withText:
		c = append(c, b.arg("runtime", q.Runtime)+"::text = ANY(f.runtimes)")
	default:
		c = append(c, "f.runtimes @> ARRAY["+b.arg("runtime", q.Runtime)+"::text]")
	}
	return c
}

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

// match returns the condition a text search's results meet: the words, or a kind the text begins.
func (b *searchSQL) match(t text) string {
	return "(f.search @@ " + b.tsquery(t) + " OR " + b.kindPrefix(t) + ")"
}

// kindPrefix is the condition that the kind begins with the text, ignoring case, spaces and
// punctuation ("setnames" finds SetNamespace): the index holds a kind's parts, not the whole kind
// (nameWords). The text is letters and digits only, so it holds no LIKE wildcard.
func (b *searchSQL) kindPrefix(t text) string {
	return "lower(f.kind) LIKE " + b.arg("kindPrefix", t.exact+"%")
}

func (b *searchSQL) tsquery(t text) string {
	return "to_tsquery('english', " + b.arg("q", t.tsquery) + ")"
}

// tierCondition is the condition of a text search's tier of the given rank: it matches there and
// in no better tier. The name tier takes the kinds the text begins.
func (b *searchSQL) tierCondition(t text, rank int) string {
	if rank == rankExact {
		return "lower(f.kind) = " + b.arg("exact", t.exact)
	}
	q := b.tsquery(t)
	name := "(f.name_search @@ " + q + " OR " + b.kindPrefix(t) + ")"
	switch rank {
	case rankName:
		return name + " AND lower(f.kind) <> " + b.arg("exact", t.exact)
	case rankDescription:
		return "f.text_search @@ " + q + " AND NOT " + name
	default:
		return "f.search @@ " + q + " AND NOT f.text_search @@ " + q + " AND NOT " + name
	}
}

// pageStatement selects up to n results of one tier (rank 0: a search without text), in the
// order of group and kind, after skipping offset of them. A tier is read in index order and stops
// at the page, or is found through its text index and sorted when it is small: the planner knows
// which from each tier's own statistics.
//
// The exact tier is read whole through the kind's index, then sorted: a kind that several
// publishers share is common enough in the statistics that the planner would otherwise read the
// (fn_group, kind) index in order, expecting the page soon, and a kind nobody has (the text is a
// word, not a kind) then cost a read of every function (1.3 s at 1,000,000).
func pageStatement(q SearchQuery, t text, rank, n, offset int) (string, []any) {
	b := newSearchSQL()
	conds := b.conds(q, "", rank > 0)
	if rank > 0 {
		conds = append(conds, b.tierCondition(t, rank))
	}
	sel := `SELECT f.fn_group, f.kind, f.publisher, f.description, f.tags, f.runtimes, f.versions, f.catalogs, ` + strconv.Itoa(rank) + `::real AS rank
FROM functions f WHERE ` + strings.Join(conds, " AND ")
	page := "\nLIMIT " + b.arg("limit", n) + " OFFSET " + b.arg("offset", offset)
	if rank == rankExact {
		return "WITH exact AS MATERIALIZED (" + sel + ")\nSELECT * FROM exact ORDER BY fn_group, kind" + page, b.args
	}
	return sel + "\nORDER BY f.fn_group, f.kind" + page, b.args
}

// The parts of a count statement: the total, and the three facets.
const (
	countPublisher = iota
	countTag
	countRuntime
	countTotal
	countKeptTotal // an exact total, read from facet_totals
)

var facetNames = [...]string{countPublisher: "publisher", countTag: "tag", countRuntime: "runtime"}

// countStatement counts the total and the facets. Each answer row is (part, value, count): a count
// per value, and a row with a NULL value holding how many matches the part counted, which is more
// than CountCap when it stopped there (for countKeptTotal: the exact total). Matches are read at
// most CountCap+1 at a time, once per distinct set of conditions (the total applies every filter;
// each facet every filter but its own). What a publish keeps is read instead where it is exact:
// every function, or every function with one tag, publisher or runtime.
//
// A text search with filters reads its samples from one probe of the text's first probeRows
// matches (Options.SearchProbe):
// the planner takes a word and a tag for independent, so where they go together ("network" and
// the tag "networking") it read the two through both indexes at once (a BitmapAnd of some 30,000
// rows each) to find 501 rows that the first 2,000 rows of the table hold.
func countStatement(q SearchQuery, t text, probeRows int) (string, []any) {
	b := newSearchSQL()
	var ctes, parts []string
	samples := map[string]string{} // conditions -> the CTE that reads them
	base := []string{"cardinality(f.versions) > 0"}
	if t.tsquery != "" {
		base = append(base, b.match(t))
	}
	filters := len(q.Tags)
	if q.Publisher != "" {
		filters++
	}
	if q.Runtime != "" {
		filters++
	}
	cte := func(name, body string) string {
		ctes = append(ctes, name+" AS MATERIALIZED ("+body+")")
		return name
	}
	const columns = "f.id, f.publisher, f.tags, f.runtimes"
	limit := func() string { return " LIMIT " + b.arg("sample", CountCap+1) }
	probe := ""
	if t.tsquery != "" && filters > 0 {
		probe = cte("probe", "SELECT "+columns+" FROM functions f WHERE "+strings.Join(base, " AND ")+
			" LIMIT "+b.arg("probe", probeRows))
	}
	sample := func(filterConds []string) string {
		key := strings.Join(filterConds, " AND ")
		if name, ok := samples[key]; ok {
			return name
		}
		name := "m" + strconv.Itoa(len(samples))
		samples[key] = name
		switch {
		case probe == "":
			return cte(name, "SELECT "+columns+" FROM functions f WHERE "+strings.Join(append(slices.Clone(base), filterConds...), " AND ")+limit())
		case len(filterConds) == 0:
			return cte(name, "SELECT * FROM "+probe+limit())
		}
		// The probe's rows that pass the filters, read only as far as the sample needs; and when
		// the probe stopped at its limit before the sample was full, the rest of the matches
		// through the planner's own plan.
		return cte(name, "(SELECT * FROM "+probe+" f WHERE "+key+limit()+")\n  UNION ALL (SELECT "+columns+
			" FROM functions f WHERE "+strings.Join(append(slices.Clone(base), filterConds...), " AND ")+
			" AND (SELECT count(*) FROM "+probe+") = "+b.arg("probe", probeRows)+
			" AND f.id NOT IN (SELECT id FROM "+probe+"))"+limit())
	}
	for part := countPublisher; part <= countTotal; part++ {
		skip := ""
		if part != countTotal {
			skip = facetNames[part]
		}
		filterConds := b.filters(q, skip, t.tsquery != "")
		// Without text, a part that applies no filter, or the total of one filter, is kept exact.
		kept, keptValue := "", ""
		switch {
		case t.tsquery != "":
		case len(filterConds) == 0 && part != countTotal:
			kept = facetNames[part]
		case len(filterConds) == 0:
			kept = "publisher"
		case part == countTotal && filters == 1:
			kept, keptValue = keptFilter(q)
		}
		if kept != "" {
			cond := "facet = '" + kept + "' AND count > 0"
			if keptValue != "" {
				cond += " AND value = " + b.arg("kept", keptValue)
			}
			if part == countTotal {
				parts = append(parts, fmt.Sprintf("SELECT %d, NULL, coalesce(sum(count), 0)::int FROM facet_totals WHERE %s", countKeptTotal, cond))
			} else {
				parts = append(parts, fmt.Sprintf("SELECT %d, value, count FROM facet_totals WHERE %s", part, cond))
			}
			continue
		}
		m := sample(filterConds)
		parts = append(parts, fmt.Sprintf("SELECT %d, NULL, count(*)::int FROM %s", part, m))
		switch part {
		case countPublisher:
			parts = append(parts, fmt.Sprintf("SELECT %d, publisher, count(*)::int FROM %s GROUP BY 2", part, m))
		case countTag:
			parts = append(parts, fmt.Sprintf("SELECT %d, v, count(*)::int FROM %s, unnest(tags) AS v GROUP BY 2", part, m))
		case countRuntime:
			parts = append(parts, fmt.Sprintf("SELECT %d, v, count(*)::int FROM %s, unnest(runtimes) AS v GROUP BY 2", part, m))
		}
	}
	sql := strings.Join(parts, "\nUNION ALL ")
	if len(ctes) > 0 {
		sql = "WITH " + strings.Join(ctes, ",\n") + "\n" + sql
	}
	return sql, b.args
}

// keptFilter names the facet value of a search's only filter.
func keptFilter(q SearchQuery) (facet, value string) {
	switch {
	case len(q.Tags) == 1:
		return "tag", q.Tags[0]
	case q.Publisher != "":
		return "publisher", q.Publisher
	default:
		return "runtime", q.Runtime
	}
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
