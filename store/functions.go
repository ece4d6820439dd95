package store

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"

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
	Rank        float32  `json:"rank,omitempty"`
}

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
	Functions     []FunctionSummary `json:"functions"`
	Total         int               `json:"total"`
	Facets        Facets            `json:"facets"`
	NextPageToken string            `json:"nextPageToken,omitempty"`
}

// MaxSearchLimit caps the page size.
const MaxSearchLimit = 100

// ErrBadPageToken is returned for a page token this store did not issue for the same query.
var ErrBadPageToken = errors.New("invalid page token")

// searchSQL builds the two statements of a search: the page, and the facet counts. The SQL text
// differs with the filters present, so each shape gets a plan of its own (a generic plan for
// "$1 = ” OR search @@ ..." would not use the GIN index). Placeholders are numbered as used.
type searchSQL struct {
	args  []any
	slots map[string]string
}

func (b *searchSQL) arg(name string, v any) string {
	if p, ok := b.slots[name]; ok {
		return p
	}
	b.args = append(b.args, v)
	p := "$" + strconv.Itoa(len(b.args))
	b.slots[name] = p
	return p
}

// conds returns the filter conditions on alias a, leaving out the filter of the facet skip.
func (b *searchSQL) conds(q SearchQuery, a, skip string) []string {
	var c []string
	if len(q.Tags) > 0 && skip != "tag" {
		c = append(c, a+".tags @> "+b.arg("tags", q.Tags)+"::text[]")
	}
	if q.Publisher != "" && skip != "publisher" {
		c = append(c, a+".publisher = "+b.arg("publisher", q.Publisher))
	}
	if q.Runtime != "" && skip != "runtime" {
		c = append(c, a+".runtimes @> ARRAY["+b.arg("runtime", q.Runtime)+"::text]")
	}
	return c
}

func where(conds []string) string {
	if len(conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(conds, " AND ")
}

// pageStatement selects one page of ranked results.
func pageStatement(q SearchQuery, tsq string, limit, offset int) (string, []any) {
	b := &searchSQL{slots: map[string]string{}}
	conds := []string{"cardinality(f.versions) > 0"}
	rank := "0::real"
	if tsq != "" {
		p := b.arg("q", tsq)
		conds = append(conds, "f.search @@ to_tsquery('english', "+p+")")
		rank = "ts_rank(f.search, to_tsquery('english', " + p + "))"
	}
	conds = append(conds, b.conds(q, "f", "")...)
	sql := `SELECT f.fn_group, f.kind, f.publisher, f.description, f.tags, f.runtimes, f.versions, f.catalogs, ` + rank + ` AS rank
FROM functions f` + where(conds) + `
ORDER BY rank DESC, f.fn_group, f.kind
LIMIT ` + b.arg("limit", limit) + ` OFFSET ` + b.arg("offset", offset)
	return sql, b.args
}

// facetStatement counts the matches by publisher, tag and runtime. Each facet applies the other
// filters but not its own. With text, the matches are found once and shared by the three counts;
// without, each count scans only the rows its filters select (through their indexes), and a facet
// with no filter to apply at all is read from the totals each publish keeps.
func facetStatement(q SearchQuery, tsq string) (string, []any) {
	b := &searchSQL{slots: map[string]string{}}
	prefix, src, alias, match := "", "functions f", "f", "cardinality(f.versions) > 0"
	if tsq != "" {
		prefix = "WITH m AS MATERIALIZED (SELECT f.publisher, f.tags, f.runtimes FROM functions f WHERE cardinality(f.versions) > 0" +
			" AND f.search @@ to_tsquery('english', " + b.arg("q", tsq) + ")) "
		src, alias, match = "m", "m", ""
	}
	facets := []struct{ name, value, from string }{
		{"publisher", alias + ".publisher", src},
		{"tag", "t", src + ", unnest(" + alias + ".tags) AS t"},
		{"runtime", "r", src + ", unnest(" + alias + ".runtimes) AS r"},
	}
	parts := make([]string, len(facets))
	for i, f := range facets {
		others := b.conds(q, alias, f.name)
		if tsq == "" && len(others) == 0 {
			parts[i] = fmt.Sprintf("SELECT %d, value, count FROM facet_totals WHERE facet = '%s' AND count > 0", i, f.name)
			continue
		}
		if match != "" {
			others = append([]string{match}, others...)
		}
		parts[i] = fmt.Sprintf("SELECT %d, %s, count(*) FROM %s%s GROUP BY 2", i, f.value, f.from, where(others))
	}
	return prefix + strings.Join(parts, "\nUNION ALL "), b.args
}

// pageToken is the opaque continuation of a search: an offset bound to the query it pages.
type pageToken struct {
	Offset int    `json:"o"`
	Query  string `json:"q"`
}

// pageOffset reads the query's page token: the offset it continues from, or ErrBadPageToken for a
// token this store did not issue for this query.
func (q SearchQuery) pageOffset() (int, error) {
	data, err := base64.RawURLEncoding.DecodeString(q.PageToken)
	var pt pageToken
	if err != nil || json.Unmarshal(data, &pt) != nil || pt.Query != q.fingerprint() || pt.Offset < 0 || pt.Offset > maxOffset {
		return 0, ErrBadPageToken
	}
	return pt.Offset, nil
}

// maxOffset bounds how deep a page token may page: far beyond any catalog, and small enough that a
// forged token cannot ask PostgreSQL to skip billions of rows.
const maxOffset = 1_000_000

func (q SearchQuery) fingerprint() string {
	return strings.Join([]string{q.Text, strings.Join(q.Tags, ","), q.Publisher, q.Runtime}, "\x00")
}

// SearchFunctions runs a ranked full-text search over the current functions, with facet counts.
func (s *Store) SearchFunctions(ctx context.Context, q SearchQuery) (SearchResult, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = 20
	}
	limit = min(limit, MaxSearchLimit)
	offset := 0
	if q.PageToken != "" {
		var err error
		if offset, err = q.pageOffset(); err != nil {
			return SearchResult{}, fmt.Errorf("search functions: %w", err)
		}
	}
	tsq := prefixQuery(q.Text)
	// The page and the facet counts are independent: they run at once on two connections, so a
	// search takes as long as the slower of the two.
	res := SearchResult{Facets: Facets{Publisher: []FacetCount{}, Tag: []FacetCount{}, Runtime: []FacetCount{}}}
	var pageErr error
	pageDone := make(chan struct{})
	go func() {
		defer close(pageDone)
		sql, args := pageStatement(q, tsq, limit, offset)
		rows, err := s.pool.Query(ctx, sql, args...)
		if err == nil {
			res.Functions, err = pgx.CollectRows(rows, pgx.RowToStructByPos[FunctionSummary])
		}
		pageErr = err
	}()
	facetErr := s.facets(ctx, q, tsq, &res.Facets)
	<-pageDone
	if pageErr != nil {
		return SearchResult{}, fmt.Errorf("search functions: %w", pageErr)
	}
	if facetErr != nil {
		return SearchResult{}, fmt.Errorf("search facets: %w", facetErr)
	}
	if res.Functions == nil {
		res.Functions = []FunctionSummary{}
	}
	// The publisher facet applies every filter but its own, so the total is its count for the
	// chosen publisher, or its sum.
	for _, fc := range res.Facets.Publisher {
		if q.Publisher == "" || fc.Value == q.Publisher {
			res.Total += fc.Count
		}
	}
	if next := offset + len(res.Functions); len(res.Functions) == limit && next < res.Total {
		data, _ := json.Marshal(pageToken{Offset: next, Query: q.fingerprint()})
		res.NextPageToken = base64.RawURLEncoding.EncodeToString(data)
	}
	return res, nil
}

// facets counts the matches by publisher, tag and runtime.
func (s *Store) facets(ctx context.Context, q SearchQuery, tsq string, out *Facets) error {
	sql, args := facetStatement(q, tsq)
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	facets := []*[]FacetCount{&out.Publisher, &out.Tag, &out.Runtime}
	for rows.Next() {
		var (
			which int
			fc    FacetCount
		)
		if err := rows.Scan(&which, &fc.Value, &fc.Count); err != nil {
			return err
		}
		*facets[which] = append(*facets[which], fc)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for _, f := range facets {
		sortFacet(*f)
	}
	return nil
}

func sortFacet(fc []FacetCount) {
	for i := 1; i < len(fc); i++ {
		for j := i; j > 0 && (fc[j].Count > fc[j-1].Count || fc[j].Count == fc[j-1].Count && fc[j].Value < fc[j-1].Value); j-- {
			fc[j], fc[j-1] = fc[j-1], fc[j]
		}
	}
}

// prefixQuery turns what a person types into a tsquery in which every word must match as a prefix,
// so that results narrow while they type. Only letters and digits pass: the text cannot inject
// tsquery syntax.
func prefixQuery(text string) string {
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	for i, w := range words {
		words[i] = w + ":*"
	}
	return strings.Join(words, " & ")
}

// FunctionVersion is one version of a function as one source (catalog version or definition) lists it.
type FunctionVersion struct {
	Group       string         `json:"group"`
	Kind        string         `json:"kind"`
	Version     string         `json:"version"`
	APIVersion  string         `json:"apiVersion"`
	Publisher   string         `json:"publisher"`
	Description string         `json:"description"`
	Home        string         `json:"home,omitempty"`
	Maintainers []string       `json:"maintainers,omitempty"`
	Tags        []string       `json:"tags,omitempty"`
	Runtimes    []string       `json:"runtimes"`
	Image       string         `json:"image,omitempty"`
	ImageDigest string         `json:"imageDigest,omitempty"`
	Spec        map[string]any `json:"spec"`
	Source      Source         `json:"source"`
	// Signature is verified, signed or unsigned for a version whose artifacts are in OCI
	// registries; the server fills it in.
	Signature string `json:"signature,omitempty"`
}

// Source is where a function version was published.
type Source struct {
	Catalog        string    `json:"catalog,omitempty"`
	CatalogVersion string    `json:"catalogVersion,omitempty"`
	Definition     bool      `json:"definition,omitempty"`
	Digest         string    `json:"digest"`
	PublishedAt    time.Time `json:"publishedAt"`
}

// FunctionDetail is a function with every current version.
type FunctionDetail struct {
	FunctionSummary
	Home        string            `json:"home,omitempty"`
	Maintainers []string          `json:"maintainers,omitempty"`
	Entries     []FunctionVersion `json:"entries"`
}

const sqlFunctionVersions = `
SELECT f.fn_group, f.kind, fv.version, f.publisher, fv.runtimes, coalesce(fv.image, ''), coalesce(fv.image_digest, ''), fv.spec,
       coalesce(c.name, ''), coalesce(cv.version, ''), fv.definition_revision_id IS NOT NULL,
       coalesce(cv.digest, dr.digest), coalesce(cv.published_at, dr.published_at)
FROM function_versions fv
JOIN functions f ON f.id = fv.function_id
LEFT JOIN catalog_versions cv ON cv.id = fv.catalog_version_id
LEFT JOIN catalogs c ON c.id = cv.catalog_id
LEFT JOIN definition_revisions dr ON dr.id = fv.definition_revision_id
WHERE f.fn_group = $1 AND f.kind = $2 AND fv.current AND ($3 = '' OR fv.version = $3)
ORDER BY fv.definition_revision_id IS NULL, c.name, fv.position, fv.id`

func (s *Store) functionVersions(ctx context.Context, group, kind, version string) ([]FunctionVersion, error) {
	rows, err := s.pool.Query(ctx, sqlFunctionVersions, group, kind, version)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (FunctionVersion, error) {
		var (
			fv   FunctionVersion
			spec versionSpec
		)
		err := r.Scan(&fv.Group, &fv.Kind, &fv.Version, &fv.Publisher, &fv.Runtimes, &fv.Image, &fv.ImageDigest, &spec,
			&fv.Source.Catalog, &fv.Source.CatalogVersion, &fv.Source.Definition, &fv.Source.Digest, &fv.Source.PublishedAt)
		fv.APIVersion = fv.Group + "/" + fv.Version
		fv.Description, fv.Home, fv.Maintainers, fv.Tags = spec.Meta.Description, spec.Meta.Home, spec.Meta.Maintainers, spec.Meta.Tags
		fv.Spec = spec.Version
		return fv, err
	})
}

const sqlFunction = `
SELECT fn_group, kind, publisher, description, tags, runtimes, versions, catalogs
FROM functions WHERE fn_group = $1 AND kind = $2 AND cardinality(versions) > 0`

// GetFunction returns a function and its current versions from every source, or ErrNotFound.
func (s *Store) GetFunction(ctx context.Context, group, kind string) (FunctionDetail, error) {
	var d FunctionDetail
	err := s.pool.QueryRow(ctx, sqlFunction, group, kind).Scan(&d.Group, &d.Kind, &d.Publisher, &d.Description, &d.Tags, &d.Runtimes, &d.Versions, &d.Catalogs)
	if errors.Is(err, pgx.ErrNoRows) {
		return FunctionDetail{}, Errorf(ErrNotFound, "no function %s/%s", group, kind)
	}
	if err != nil {
		return FunctionDetail{}, fmt.Errorf("get function %s/%s: %w", group, kind, err)
	}
	d.Entries, err = s.functionVersions(ctx, group, kind, "")
	if err != nil {
		return FunctionDetail{}, fmt.Errorf("get function %s/%s: %w", group, kind, err)
	}
	if len(d.Entries) > 0 {
		d.Home, d.Maintainers = d.Entries[0].Home, d.Entries[0].Maintainers
	}
	return d, nil
}

// GetFunctionVersion returns the current entries of one version of a function (a version listed by
// several catalogs has several), or ErrNotFound.
func (s *Store) GetFunctionVersion(ctx context.Context, group, kind, version string) ([]FunctionVersion, error) {
	fvs, err := s.functionVersions(ctx, group, kind, version)
	if err != nil {
		return nil, fmt.Errorf("get function %s/%s version %s: %w", group, kind, version, err)
	}
	if len(fvs) == 0 {
		return nil, Errorf(ErrNotFound, "function %s/%s has no version %s", group, kind, version)
	}
	return fvs, nil
}

// Resolution is the runtime found for an apiVersion and kind.
type Resolution struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	Function   FunctionVersion `json:"function"`
	Runtime    any             `json:"runtime"`
	// Searched lists the catalogs searched, in order.
	Searched []string `json:"searched"`
}

// ErrNotResolved is returned when no searched source has the function; the error names them.

// Resolve finds the runtime for apiVersion/kind. With catalogs, their latest versions are searched
// in the order given and the first entry that matches wins, also inside one catalog. Without, the
// published definition comes first, then catalogs by name.
func (s *Store) Resolve(ctx context.Context, apiVersion, kind string, catalogs []string) (Resolution, error) {
	res := Resolution{APIVersion: apiVersion, Kind: kind, Searched: catalogs}
	group, version, ok := strings.Cut(apiVersion, "/")
	if !ok || group == "" || version == "" || kind == "" {
		return res, Errorf(ErrNotFound, "apiVersion %q must be group/version, and kind must be given", apiVersion)
	}
	fvs, err := s.functionVersions(ctx, group, kind, version)
	if err != nil {
		return res, fmt.Errorf("resolve %s %s: %w", apiVersion, kind, err)
	}
	pick := func(fv FunctionVersion) Resolution {
		res.Function, res.Runtime = fv, fv.Spec["runtime"]
		return res
	}
	if len(catalogs) == 0 {
		res.Searched = []string{"every published catalog and definition"}
		if len(fvs) > 0 {
			return pick(fvs[0]), nil
		}
	}
	for _, name := range catalogs {
		for _, fv := range fvs {
			if fv.Source.Catalog == name {
				return pick(fv), nil
			}
		}
	}
	return res, Errorf(ErrNotFound, "no function serves apiVersion %s kind %s; searched %s", apiVersion, kind, strings.Join(res.Searched, ", "))
}
