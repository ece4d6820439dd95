package store

import (
	"slices"
	"strconv"
	"strings"
)

// The statements of a search, built from small named pieces. The SQL text differs with the filters
// present, so each shape gets a plan of its own (a generic plan for "$1 = ” OR search @@ ..." would
// not use the GIN index). testdata/search holds the text and arguments of every shape.

// searchSQL collects the arguments of one statement. Placeholders are numbered as first used, and
// a named argument used twice is one placeholder.
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

// and joins conditions.
func and(conds []string) string { return strings.Join(conds, " AND ") }

// current is the condition of a function that some current catalog still lists.
const current = "cardinality(f.versions) > 0"

// conds returns the conditions on functions f of a page: current, and the query's filters.
func (b *searchSQL) conds(q SearchQuery, withText bool) []string {
	return append([]string{current}, b.filters(q, "", withText)...)
}

// filters returns the conditions of the query's filters on functions f, leaving out the filter of
// the facet skip. With text (withText), the runtime is tested row by row, out of reach of its
// index: there are three runtimes, so each holds a large part of the functions, and the planner,
// multiplying the runtime's share by the text's, took the two for rarer together than they are
// and read every function of the runtime through the index, far more than the text index and the
// first rows give.
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

// filterCount is how many filters a query applies (each tag is one).
func filterCount(q SearchQuery) int {
	n := len(q.Tags)
	if q.Publisher != "" {
		n++
	}
	if q.Runtime != "" {
		n++
	}
	return n
}

// match returns the condition a text search's results meet in function_facets f: the words, or a
// kind the text begins.
func (b *searchSQL) match(t text) string {
	return "(f.search @@ " + b.tsquery(t) + " OR " + b.kindPrefix(t, facetsKind) + ")"
}

// The lower-case kind in functions f and in function_facets f, each with an index of its own.
const (
	functionsKind = "lower(f.kind)"
	facetsKind    = "f.kind_lower"
)

// kindPrefix is the condition that the kind (lowerKind, functionsKind or facetsKind) begins with
// the text, ignoring case, spaces and punctuation ("setnames" finds SetNamespace): the index holds
// a kind's parts, not the whole kind (nameWords). The text is letters and digits only, so it holds
// no LIKE wildcard.
func (b *searchSQL) kindPrefix(t text, lowerKind string) string {
	return lowerKind + " LIKE " + b.arg("kindPrefix", t.exact+"%")
}

// tsquery is the text's expanded query (Store.expand), or its words as prefixes.
func (b *searchSQL) tsquery(t text) string {
	if t.expanded {
		return b.arg("q", t.query) + "::tsquery"
	}
	return "to_tsquery('english', " + b.arg("q", t.tsquery) + ")"
}

// tierCondition is the condition of a text search's tier of the given rank: it matches there and
// in no better tier. The name tier takes the kinds the text begins.
func (b *searchSQL) tierCondition(t text, rank int) string {
	if rank == rankExact {
		return "lower(f.kind) = " + b.arg("exact", t.exact)
	}
	q := b.tsquery(t)
	name := "(f.name_search @@ " + q + " OR " + b.kindPrefix(t, functionsKind) + ")"
	switch rank {
	case rankName:
		return name + " AND lower(f.kind) <> " + b.arg("exact", t.exact)
	case rankDescription:
		return "f.text_search @@ " + q + " AND NOT " + name
	default:
		return "f.search @@ " + q + " AND NOT f.text_search @@ " + q + " AND NOT " + name
	}
}

// summaryColumns are the columns of a FunctionSummary, in its order but for the rank.
const summaryColumns = "f.fn_group, f.kind, f.publisher, f.description, f.tags, f.runtimes, f.versions, f.catalogs"

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
	conds := b.conds(q, rank > 0)
	if rank > 0 {
		conds = append(conds, b.tierCondition(t, rank))
	}
	tier := "SELECT " + summaryColumns + ", " + strconv.Itoa(rank) + "::real AS rank\nFROM functions f WHERE " + and(conds)
	page := "\nLIMIT " + b.arg("limit", n) + " OFFSET " + b.arg("offset", offset)
	if rank == rankExact {
		return "WITH exact AS MATERIALIZED (" + tier + ")\nSELECT * FROM exact ORDER BY fn_group, kind" + page, b.args
	}
	return tier + "\nORDER BY f.fn_group, f.kind" + page, b.args
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

// countStatement reads what the total and the facets are counted from, in function_facets
// (migrations/0011), which holds only the current functions, in rows less than half as wide as
// those of functions. Matches are read at most CountCap+1 at a time, once per distinct set of
// conditions (the total applies every filter; each facet every filter but its own): a sample. What
// a publish keeps is read instead where it is exact: every function, or every function with one
// tag, publisher or runtime.
//
// Each answer row is (source, value, count, tags, runtimes). A row of a sample is one match: its
// source is sampleSource(k) for the k-th sample, its value the publisher, with its tags and
// runtimes, each NULL unless a part counting the sample counts it; parts says which sample each
// part (countPublisher to countTotal) counts, -1 for one read from what a publish keeps. A row of facet_totals has its part as its source and a count: one
// per value of a facet, or the exact total (countKeptTotal, value NULL). The store counts the
// samples' matches itself: grouping them in the statement (three hash aggregates, two over
// unnested arrays) cost more than reading them, 2.5-3 of 7-9.5 ms of backend CPU for the sample
// of "set lab" at a million functions.
//
// A text search with filters reads its samples from one probe of the text's first probeRows
// matches (Options.SearchProbe): the planner takes a word and a tag for independent, so where they
// go together ("network" and the tag "networking") it read the two through both indexes at once (a
// BitmapAnd of some 30,000 rows each) to find 501 rows that the first 2,000 rows of the table hold.
//
// An unfiltered text search reads its sample first from the rows whose id is divisible by
// sampleMod (Options.SearchSample), through partial indexes an eighth the size of the full ones,
// and only when those hold fewer than CountCap+1 matches from all rows. GIN reads a query's
// matches whole into a bitmap before the first row, so a sample of 501 cost the whole match set:
// two common words at a million functions, 10,000-15,000 matches, took 8-16 ms; from the eighth,
// 2-4 ms. The sample is still only matches, so the counts keep their meaning (at least this
// many); a search with fewer than 4,008 matches reads both, the small index first. A text the
// statistics take for broad (more than sampleBelow of all functions, such as one common word) is
// sampled as before: the planner reads the table in order and has its sample within a few thousand
// rows, where a bitmap of even an eighth of its matches would cost more.
func countStatement(q SearchQuery, t text, probeRows, sampleMod int) (sql string, args []any, parts [countTotal + 1]int) {
	c := &counts{b: newSearchSQL(), q: q, withText: t.tsquery != "", filters: filterCount(q), samples: map[string]int{},
		sampleMod: sampleMod, expanded: t.expanded, share: t.share}
	if c.withText {
		c.base = append(c.base, c.b.match(t))
		if c.filters > 0 {
			c.probeSize = probeRows
			c.probe = c.with("probe", c.probeRows())
		}
	}
	for part := countPublisher; part <= countTotal; part++ {
		skip := ""
		if part != countTotal {
			skip = facetNames[part]
		}
		filterConds := c.b.filters(q, skip, c.withText)
		if facet, value, ok := c.kept(part, filterConds); ok {
			c.selects = append(c.selects, c.keptRows(part, facet, value))
			parts[part] = -1
			continue
		}
		parts[part] = c.sample(filterConds)
	}
	for k := range len(c.samples) {
		c.selects = append(c.selects, sampleRows(k, parts))
	}
	return c.statement(), c.b.args, parts
}

// sampleRows selects the matches of the k-th sample, with the columns that the parts counting it
// count: NULL arrays cost the store nothing to decode.
func sampleRows(k int, parts [countTotal + 1]int) string {
	cols := [...]string{countPublisher: "NULL::text", countTag: "NULL::text[]", countRuntime: "NULL::text[]"}
	for part, column := range [...]string{countPublisher: "publisher", countTag: "tags", countRuntime: "runtimes"} {
		if parts[part] == k {
			cols[part] = column
		}
	}
	return "SELECT " + strconv.Itoa(sampleSource(k)) + ", " + cols[countPublisher] + ", NULL::int, " + cols[countTag] + ", " + cols[countRuntime] + " FROM m" + strconv.Itoa(k)
}

// sampleSource is the source column of the rows of the k-th sample of a count statement.
func sampleSource(k int) int { return -1 - k }

// counts is one count statement as it is built: its CTEs (the probe, the samples) and the selects
// whose rows it unites.
type counts struct {
	b         *searchSQL
	q         SearchQuery
	withText  bool
	filters   int
	base      []string       // what every match meets: the text, if any
	probe     string         // the probe's CTE, "" without one
	probeSize int            // how many rows the probe reads
	sampleMod int            // the modulus of the ids an unfiltered text search samples first
	expanded  bool           // the text was expanded (text.query)
	share     float64        // text.share
	samples   map[string]int // a sample's conditions -> its number
	ctes      []string
	selects   []string
}

// sampleColumns are what the counts read of a match.
const sampleColumns = "f.id, f.publisher, f.tags, f.runtimes"

// with adds a materialized CTE and returns its name.
func (c *counts) with(name, body string) string {
	c.ctes = append(c.ctes, name+" AS MATERIALIZED ("+body+")")
	return name
}

// sampleLimit is the limit of a sample: one match more than a count promises, to know it stopped.
func (c *counts) sampleLimit() string { return " LIMIT " + c.b.arg("sample", CountCap+1) }

// matches selects the matches that also meet filterConds, in the planner's own plan.
func (c *counts) matches(filterConds []string) string {
	conds := append(slices.Clone(c.base), filterConds...)
	if len(conds) == 0 {
		conds = []string{"true"}
	}
	return "SELECT " + sampleColumns + " FROM function_facets f WHERE " + and(conds)
}

// probeRows is the probe's body: the text's first probeSize matches, filters aside.
func (c *counts) probeRows() string {
	return c.matches(nil) + " LIMIT " + c.b.arg("probe", c.probeSize)
}

// sample returns the number of the sample of up to CountCap+1 matches that meet filterConds,
// adding its CTE unless a part with the same conditions added it already.
func (c *counts) sample(filterConds []string) int {
	key := and(filterConds)
	if k, ok := c.samples[key]; ok {
		return k
	}
	k := len(c.samples)
	c.samples[key] = k
	name := "m" + strconv.Itoa(k)
	switch {
	case c.probe == "" && c.withText && len(filterConds) == 0 && c.expanded && c.share <= sampleBelow:
		c.with(name, c.sampledFirst(name))
	case c.probe == "":
		c.with(name, c.matches(filterConds)+c.sampleLimit())
	case len(filterConds) == 0:
		c.with(name, "SELECT * FROM "+c.probe+c.sampleLimit())
	default:
		c.with(name, c.probedSample(filterConds))
	}
	return k
}

// sampleBelow is the share of all functions below which an unfiltered text search samples the
// eighth first: two words of 10-35% each, 1-5% together, cost 8-16 ms through the full index at a
// million, 2-4 ms through the eighth; one word of 8-35% costs 1.5-3 ms read in table order.
const sampleBelow = 0.05

// sampledFirst is the sample of an unfiltered text search: CountCap+1 matches among the rows whose
// id is divisible by sampleMod when they hold as many, else from all rows. The test of the first
// is a one-time filter on the second: PostgreSQL does not start the second when it fails.
func (c *counts) sampledFirst(name string) string {
	first := c.with(name+"s", c.matches([]string{"f.id % " + strconv.Itoa(c.sampleMod) + " = 0"})+c.sampleLimit())
	enough := "(SELECT count(*) FROM " + first + ") = " + c.b.arg("sample", CountCap+1)
	return "(SELECT * FROM " + first + " WHERE " + enough + ")\n  UNION ALL (" +
		c.matches([]string{"NOT " + enough}) + c.sampleLimit() + ")"
}

// probedSample is a sample of a filtered text search: the probe's rows that pass the filters, read
// only as far as the sample needs; and when the probe stopped at its limit before the sample was
// full, the rest of the matches through the planner's own plan.
func (c *counts) probedSample(filterConds []string) string {
	fromProbe := "SELECT * FROM " + c.probe + " f WHERE " + and(filterConds) + c.sampleLimit()
	probeFull := "(SELECT count(*) FROM " + c.probe + ") = " + c.b.arg("probe", c.probeSize)
	rest := c.matches(filterConds) + " AND " + probeFull + " AND f.id NOT IN (SELECT id FROM " + c.probe + ")"
	return "(" + fromProbe + ")\n  UNION ALL (" + rest + ")" + c.sampleLimit()
}

// kept says whether a part is read from what a publish keeps (facet_totals) and, if so, which
// facet, and which value of it for a total: without text, a part that applies no filter, or the
// total of one filter.
func (c *counts) kept(part int, filterConds []string) (facet, value string, ok bool) {
	switch {
	case c.withText:
		return "", "", false
	case len(filterConds) == 0 && part != countTotal:
		return facetNames[part], "", true
	case len(filterConds) == 0:
		return "publisher", "", true
	case part == countTotal && c.filters == 1:
		facet, value := keptFilter(c.q)
		return facet, value, true
	}
	return "", "", false
}

// keptRows selects a part's rows from facet_totals: a facet's counts, or the total as one row.
func (c *counts) keptRows(part int, facet, value string) string {
	cond := "facet = '" + facet + "' AND count > 0"
	if value != "" {
		cond += " AND value = " + c.b.arg("kept", value)
	}
	if part == countTotal {
		return "SELECT " + strconv.Itoa(countKeptTotal) + ", NULL::text, coalesce(sum(count), 0)::int, NULL::text[], NULL::text[] FROM facet_totals WHERE " + cond
	}
	return "SELECT " + strconv.Itoa(part) + ", value, count, NULL::text[], NULL::text[] FROM facet_totals WHERE " + cond
}

// statement is the whole: the CTEs, then the union of the selects.
func (c *counts) statement() string {
	sql := strings.Join(c.selects, "\nUNION ALL ")
	if len(c.ctes) > 0 {
		sql = "WITH " + strings.Join(c.ctes, ",\n") + "\n" + sql
	}
	return sql
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
