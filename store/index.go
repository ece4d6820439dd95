package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode"

	"github.com/dustin/go-humanize"
	"github.com/jackc/pgx/v5"

	"github.com/krm-catalog/krm-catalog/catalog"
	"github.com/krm-catalog/krm-catalog/schemas"
)

// source says where a function version comes from: a catalog version or a definition revision.
type source struct {
	catalogVersionID     int64
	definitionRevisionID int64
	// curated holds, for the functions a catalog lists by reference, the id of their publisher
	curated map[functionKey]int64
}

type functionKey struct{ group, kind string }

const (
	sqlClaimFunctions = `
INSERT INTO functions (fn_group, kind, publisher_id, publisher)
SELECT g, k, $3, $4 FROM unnest($1::text[], $2::text[]) AS t (g, k)
ON CONFLICT (fn_group, kind) DO NOTHING`
	sqlFunctionOwners = `
SELECT f.id, f.fn_group, f.kind, f.publisher_id, f.publisher
FROM functions f JOIN unnest($1::text[], $2::text[]) AS t (g, k) ON f.fn_group = t.g AND f.kind = t.k`
)

// claimFunctions makes sure every function belongs to the publisher, registering the new ones, and
// returns their ids. A group the publisher does not own (authorizeGroups), or a function another
// publisher registered first, is ErrForbidden.
func claimFunctions(ctx context.Context, tx pgx.Tx, pubID int64, publisher string, fns []catalog.Function) (map[functionKey]int64, error) {
	keys := map[functionKey]bool{}
	for _, f := range fns {
		keys[functionKey{f.Group, f.Kind}] = true
	}
	sorted := make([]functionKey, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	// a fixed order, so that concurrent publishes claim rows in the same order and cannot deadlock
	sort.Slice(sorted, func(i, j int) bool {
		return sorted[i].group < sorted[j].group || sorted[i].group == sorted[j].group && sorted[i].kind < sorted[j].kind
	})
	groups, kinds := make([]string, len(sorted)), make([]string, len(sorted))
	for i, k := range sorted {
		groups[i], kinds[i] = k.group, k.kind
	}
	// a group's owner decides who adds new kinds to it; a kind stays its registrant's, who keeps
	// publishing it after the group is granted to another (or a grant is revoked)
	before, err := functionOwners(ctx, tx, groups, kinds)
	if err != nil {
		return nil, err
	}
	var newGroups []string
	for _, k := range sorted {
		if before[k].publisherID != pubID {
			newGroups = append(newGroups, k.group)
		}
	}
	if err := authorizeGroups(ctx, tx, publisher, slices.Compact(newGroups)); err != nil {
		return nil, err
	}
	if _, err := tx.Exec(ctx, sqlClaimFunctions, groups, kinds, pubID, publisher); err != nil {
		return nil, fmt.Errorf("register functions: %w", err)
	}
	after, err := functionOwners(ctx, tx, groups, kinds)
	if err != nil {
		return nil, err
	}
	ids := make(map[functionKey]int64, len(sorted))
	var foreign []string
	for key, o := range after {
		if o.publisherID != pubID {
			foreign = append(foreign, fmt.Sprintf("%s/%s (publisher %q)", key.group, key.kind, o.publisher))
		}
		ids[key] = o.id
	}
	if len(foreign) > 0 {
		sort.Strings(foreign)
		return nil, Errorf(ErrForbidden, "functions registered by another publisher: %s", strings.Join(foreign, ", "))
	}
	return ids, nil
}

// functionOwner is who registered a function, and its id.
type functionOwner struct {
	id, publisherID int64
	publisher       string
}

// functionOwners are the registered functions among groups[i]/kinds[i].
func functionOwners(ctx context.Context, tx pgx.Tx, groups, kinds []string) (map[functionKey]functionOwner, error) {
	rows, err := tx.Query(ctx, sqlFunctionOwners, groups, kinds)
	if err != nil {
		return nil, fmt.Errorf("find function owners: %w", err)
	}
	defer rows.Close()
	out := map[functionKey]functionOwner{}
	for rows.Next() {
		var (
			key functionKey
			o   functionOwner
		)
		if err := rows.Scan(&o.id, &key.group, &key.kind, &o.publisherID, &o.publisher); err != nil {
			return nil, fmt.Errorf("find function owners: %w", err)
		}
		out[key] = o
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("find function owners: %w", err)
	}
	return out, nil
}

// derivedSizes measures what each version of fns adds to its function's generated definition, by
// function and version: below exactAbove its bound (derivedItemBound), stored negated; above, its
// size (derivedItemSize; past the limit, the limit and one, which the publish's refresh refuses).
// It runs before the publish's transaction, which no measuring should keep open.
func derivedSizes(doc *catalog.Document, fns []catalog.Function) [][]int {
	out := make([][]int, len(fns))
	for i, f := range fns {
		out[i] = make([]int, len(f.Versions))
		for j := range f.Versions {
			raw, _ := schemas.Lookup(doc.Value, fmt.Sprintf("%s/versions/%d", f.Pointer, j)).(map[string]any)
			if b := derivedItemBound(raw); b < exactAbove {
				out[i][j] = -b
			} else {
				out[i][j], _ = derivedItemSize(raw, MaxDerivedBytes)
			}
		}
	}
	return out
}

// exactAbove is the bound of a version's part of its generated definition above which it is
// measured exactly: below, the bound costs a walk of the values, and a function of versions
// that small needs hundreds before their bounds reach MaxDerivedBytes.
const exactAbove = 64 << 10

// versionSpec is what the index keeps of one function version: the function's metadata and the
// version object exactly as the document wrote it.
type versionSpec struct {
	Meta    functionMeta   `json:"meta"`
	Version map[string]any `json:"version"`
}

type functionMeta struct {
	Description string   `json:"description"`
	Publisher   string   `json:"publisher"`
	Home        string   `json:"home,omitempty"`
	Maintainers []string `json:"maintainers,omitempty"`
	Tags        []string `json:"tags,omitempty"`
}

// insertFunctionVersions indexes every version of every function, in document order, with COPY.
// Rows of a definition revision start current; those of a catalog version become current when it is
// the catalog's latest.
func insertFunctionVersions(ctx context.Context, tx pgx.Tx, ids map[functionKey]int64, doc *catalog.Document, fns []catalog.Function, src source, sizes [][]int) error {
	var rows [][]any
	for pos, f := range fns {
		meta := functionMeta{Description: f.Description, Publisher: f.Publisher, Home: f.Home, Maintainers: f.Maintainers, Tags: f.Tags}
		for j, v := range f.Versions {
			raw, _ := schemas.Lookup(doc.Value, fmt.Sprintf("%s/versions/%d", f.Pointer, j)).(map[string]any)
			var image, imageDigest *string
			if c := v.Runtime.Container; c != nil {
				img := c.Image
				image = &img
				if ref, err := catalog.ParseImage(c.Image); err == nil && ref.Digest != "" {
					imageDigest = &ref.Digest
				} else if c.SHA256 != "" {
					d := "sha256:" + c.SHA256
					imageDigest = &d
				}
			}
			var catalogVersion, definitionRevision *int64
			if src.catalogVersionID != 0 {
				catalogVersion = &src.catalogVersionID
			} else {
				definitionRevision = &src.definitionRevisionID
			}
			var curatedFrom *int64
			if owner, ok := src.curated[functionKey{f.Group, f.Kind}]; ok {
				curatedFrom = &owner
			}
			// what the version adds to the function's generated definition (derivedSizes), none
			// for a definition's, which is served as published
			var derived *int32
			if sizes != nil {
				n := int32(sizes[pos][j])
				derived = &n
			}
			rows = append(rows, []any{
				ids[functionKey{f.Group, f.Kind}], v.Name, catalogVersion, definitionRevision, pos,
				v.Runtime.Kinds(), image, imageDigest, versionSpec{Meta: meta, Version: raw}, src.definitionRevisionID != 0, curatedFrom, derived,
			})
		}
	}
	_, err := tx.CopyFrom(ctx, pgx.Identifier{"function_versions"},
		[]string{"function_id", "version", "catalog_version_id", "definition_revision_id", "position", "runtimes", "image", "image_digest", "spec", "current", "curated_from", "derived_size"},
		pgx.CopyFromRows(rows))
	if err != nil {
		return fmt.Errorf("index function versions: %w", err)
	}
	return nil
}

const (
	// the version object is read only where its size in the generated definition was not
	// measured when it was indexed (migrations/0013)
	sqlCurrentOfFunctions = `
SELECT fv.function_id, fv.id, fv.version, fv.runtimes, fv.spec->'meta', c.name, fv.definition_revision_id IS NOT NULL,
       fv.derived_size, CASE WHEN fv.derived_size IS NULL AND fv.definition_revision_id IS NULL THEN fv.spec->'version' END
FROM function_versions fv
LEFT JOIN catalog_versions cv ON cv.id = fv.catalog_version_id
LEFT JOIN catalogs c ON c.id = cv.catalog_id
WHERE fv.current AND fv.function_id = ANY($1)
ORDER BY fv.function_id, fv.curated_from IS NULL, fv.id`
	// Locking the functions first makes concurrent publishes that list the same function refresh
	// it one after the other, each from the versions the other committed. NO KEY UPDATE, because
	// indexing versions takes KEY SHARE locks on these rows (the foreign key), which FOR UPDATE
	// would conflict with, deadlocking two such publishes.
	sqlLockFunctions = `
SELECT id, fn_group, kind, publisher, tags, runtimes, cardinality(versions) > 0
FROM functions WHERE id = ANY($1) ORDER BY id FOR NO KEY UPDATE`
	sqlAddFacetTotals = `
INSERT INTO facet_totals (facet, value, count)
SELECT f, v, d FROM unnest($1::text[], $2::text[], $3::int[]) AS t (f, v, d)
ON CONFLICT (facet, value) DO UPDATE SET count = facet_totals.count + EXCLUDED.count`
	// the words of the refreshed functions' search column, for prefix expansion (search.go); in
	// lexeme order, so that concurrent publishes lock the words' keys in the same order
	sqlAddLexemes = `
INSERT INTO search_lexemes
SELECT DISTINCT l FROM functions, unnest(tsvector_to_array(search)) AS l WHERE id = ANY($1) ORDER BY l
ON CONFLICT DO NOTHING`
	// function_facets follows the refreshed functions (migrations/0011): the current ones are
	// written where they changed, the others removed
	sqlSyncFacets = `
WITH f AS (
    SELECT id, cardinality(versions) > 0 AS current, lower(kind) AS kind_lower, publisher, tags, runtimes, search
    FROM functions WHERE id = ANY($1)),
gone AS (DELETE FROM function_facets c USING f WHERE c.id = f.id AND NOT f.current)
INSERT INTO function_facets (id, kind_lower, publisher, tags, runtimes, search)
SELECT id, kind_lower, publisher, tags, runtimes, search FROM f WHERE current ORDER BY id
ON CONFLICT (id) DO UPDATE SET tags = EXCLUDED.tags, runtimes = EXCLUDED.runtimes, search = EXCLUDED.search
WHERE (function_facets.tags, function_facets.runtimes, function_facets.search) IS DISTINCT FROM
    (EXCLUDED.tags, EXCLUDED.runtimes, EXCLUDED.search)`
	sqlUpdateFunction = `
UPDATE functions SET description = $2, tags = $3, runtimes = $4, versions = $5, catalogs = $6,
    name_words = $7, tag_words = $8, updated_at = now()
WHERE id = $1`
)

// functionView is the current view of one function, merged from every current source.
type functionView struct {
	description string
	tags        []string
	runtimes    []string
	versions    []string
	catalogs    []string
}

// refreshFunctions recomputes the search view of the given functions from their current versions.
func refreshFunctions(ctx context.Context, tx pgx.Tx, ids []int64) error {
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	if len(ids) == 0 {
		return nil
	}
	type function struct {
		group, kind, publisher string
		tags, runtimes         []string
		visible                bool
	}
	locked, err := tx.Query(ctx, sqlLockFunctions, ids)
	if err != nil {
		return fmt.Errorf("refresh functions: %w", err)
	}
	before := make(map[int64]function, len(ids))
	for locked.Next() {
		var (
			id int64
			f  function
		)
		if err := locked.Scan(&id, &f.group, &f.kind, &f.publisher, &f.tags, &f.runtimes, &f.visible); err != nil {
			locked.Close()
			return fmt.Errorf("refresh functions: %w", err)
		}
		before[id] = f
	}
	locked.Close()
	if err := locked.Err(); err != nil {
		return fmt.Errorf("refresh functions: %w", err)
	}

	views := make(map[int64]*functionView, len(ids))
	for _, id := range ids {
		views[id] = &functionView{}
	}
	// each source's part of the function's generated definition, measured as it is read: the
	// decoded specs are not held
	sources := make(map[int64][]derivedSource, len(ids))
	defined := map[int64]bool{} // functions with a published definition, whose definition.yaml is not generated
	rows, err := tx.Query(ctx, sqlCurrentOfFunctions, ids)
	if err != nil {
		return fmt.Errorf("refresh functions: %w", err)
	}
	for rows.Next() {
		var (
			id, fvID   int64
			version    string
			runtimes   []string
			meta       functionMeta
			catName    *string
			definition bool
			derived    *int32
			raw        map[string]any
		)
		if err := rows.Scan(&id, &fvID, &version, &runtimes, &meta, &catName, &definition, &derived, &raw); err != nil {
			rows.Close()
			return fmt.Errorf("refresh functions: %w", err)
		}
		if definition {
			defined[id] = true
		}
		if !definition && !defined[id] {
			src := derivedSource{catalog: catName, id: fvID, version: version, meta: meta}
			switch {
			case derived == nil: // indexed before its size was measured
				src.size, _ = derivedItemSize(raw, MaxDerivedBytes)
			case *derived < 0:
				src.size, src.bound = int(-*derived), true
			default:
				src.size = int(*derived)
			}
			sources[id] = append(sources[id], src)
		}
		v := views[id]
		v.description = meta.Description // the newest source wins, a curator's never over the publisher's
		v.tags = append(v.tags, meta.Tags...)
		v.runtimes = append(v.runtimes, runtimes...)
		v.versions = append(v.versions, version)
		if catName != nil {
			v.catalogs = append(v.catalogs, *catName)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("refresh functions: %w", err)
	}
	for _, id := range ids {
		if defined[id] || len(sources[id]) == 0 {
			continue
		}
		f := before[id]
		within := derivedWithinBound(f.group, f.kind, sources[id])
		if !within && slices.ContainsFunc(sources[id], func(s derivedSource) bool { return s.bound }) {
			// bounds took it past the limit: measure those versions exactly
			if err := measureExactly(ctx, tx, sources[id]); err != nil {
				return fmt.Errorf("refresh functions: %w", err)
			}
			within = derivedWithinBound(f.group, f.kind, sources[id])
		}
		if !within {
			return Errorf(ErrTooLarge, "the definition.yaml generated for function %s/%s from the catalogs that list it would be larger than %s, the limit: give its schemas smaller defaults and examples, or list fewer versions",
				f.group, f.kind, humanize.IBytes(MaxDerivedBytes))
		}
	}

	batch := &pgx.Batch{}
	deltas := facetDeltas{}
	for _, id := range ids {
		old, v := before[id], views[id]
		tags, runtimes := uniqueSorted(v.tags), uniqueSorted(v.runtimes)
		batch.Queue(sqlUpdateFunction, id, v.description, tags, runtimes, uniqueSorted(v.versions),
			uniqueSorted(v.catalogs), nameWords(old.group, old.kind), strings.Join(tags, " "))
		if old.visible {
			deltas.add(-1, old.publisher, old.tags, old.runtimes)
		}
		if len(v.versions) > 0 {
			deltas.add(+1, old.publisher, tags, runtimes)
		}
	}
	facets, values, counts := deltas.rows()
	if len(facets) > 0 {
		batch.Queue(sqlAddFacetTotals, facets, values, counts)
	}
	batch.Queue(sqlAddLexemes, ids)
	batch.Queue(sqlSyncFacets, ids)
	if err := tx.SendBatch(ctx, batch).Close(); err != nil {
		return fmt.Errorf("refresh functions: %w", err)
	}
	return nil
}

// derivedSource is one current entry of a function, a source of its generated definition, and
// the size of its version there (or, when bound is set, more than its size).
type derivedSource struct {
	catalog *string // nil: a published definition
	id      int64
	version string
	meta    functionMeta
	size    int
	bound   bool
}

const sqlVersionObjects = `SELECT id, spec->'version' FROM function_versions WHERE id = ANY($1)`

// measureExactly replaces the bounds among a function's sources by their sizes.
func measureExactly(ctx context.Context, tx pgx.Tx, src []derivedSource) error {
	var ids []int64
	at := map[int64]int{}
	for i, s := range src {
		if s.bound {
			ids = append(ids, s.id)
			at[s.id] = i
		}
	}
	rows, err := tx.Query(ctx, sqlVersionObjects, ids)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			id  int64
			raw map[string]any
		)
		if err := rows.Scan(&id, &raw); err != nil {
			return err
		}
		s := &src[at[id]]
		s.size, _ = derivedItemSize(raw, MaxDerivedBytes)
		s.bound = false
	}
	return rows.Err()
}

// derivedWithinBound reports whether the definition generated from a function's sources (its
// header, from the first source's metadata, and the first source of each version, in the order
// the generation takes them: DefinitionContent's, by catalog, the definition first, then as
// indexed) is within MaxDerivedBytes, writing its header only when the header's bound does not
// settle it: a function's header is small, and a publish refreshes thousands of functions.
func derivedWithinBound(group, kind string, src []derivedSource) bool {
	versions := derivedVersionsSize(src)
	if versions+derivedHeaderBound(group, kind, src[0].meta) <= MaxDerivedBytes {
		return true
	}
	return versions+derivedHeaderSize(group, kind, src[0].meta)-emptyList <= MaxDerivedBytes
}

// derivedVersionsSize is what the versions of a function's sources add, the first source of each
// version in the order the generation takes them.
func derivedVersionsSize(src []derivedSource) int {
	slices.SortStableFunc(src, func(a, b derivedSource) int {
		switch {
		case (a.catalog == nil) != (b.catalog == nil):
			if a.catalog == nil {
				return -1
			}
			return 1
		case a.catalog != nil && *a.catalog != *b.catalog:
			return strings.Compare(*a.catalog, *b.catalog)
		}
		return cmp.Compare(a.id, b.id)
	})
	size := 0
	seen := map[string]bool{}
	for _, s := range src {
		if !seen[s.version] {
			seen[s.version] = true
			size += s.size
		}
	}
	return size
}

// facetDeltas accumulates the changes a refresh makes to facet_totals.
type facetDeltas map[[2]string]int32

func (d facetDeltas) add(n int32, publisher string, tags, runtimes []string) {
	d[[2]string{"publisher", publisher}] += n
	for _, t := range tags {
		d[[2]string{"tag", t}] += n
	}
	for _, r := range runtimes {
		d[[2]string{"runtime", r}] += n
	}
}

// rows returns the non-zero changes in key order, so concurrent publishes touch the rows of
// facet_totals in the same order and cannot deadlock.
func (d facetDeltas) rows() (facets, values []string, counts []int32) {
	keys := make([][2]string, 0, len(d))
	for k, n := range d {
		if n != 0 {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b [2]string) int { return strings.Compare(a[0]+"\x00"+a[1], b[0]+"\x00"+b[1]) })
	for _, k := range keys {
		facets, values, counts = append(facets, k[0]), append(values, k[1]), append(counts, d[k])
	}
	return facets, values, counts
}

func uniqueSorted(s []string) []string {
	if len(s) == 0 {
		return []string{}
	}
	return slices.Compact(slices.Sorted(slices.Values(s)))
}

// nameWords spells a function's group and kind so that full-text search finds their parts:
// "fn.example.com SetNamespace2" yields "fn.example.com fn example com Set Namespace 2". The kind
// is not a word of its own: kinds are unique, so each would add a word to the index that only one
// function holds, and a prefix such as "set" would expand to every kind that starts with it (12,500
// words at 100,000 generated functions, the main cost of such a search). A search finds a kind by
// its beginning through the kind's own index instead (store/search.go).
func nameWords(group, kind string) string {
	words := []string{group}
	words = append(words, strings.FieldsFunc(group, func(r rune) bool { return r == '.' || r == '-' })...)
	start := 0
	var prev rune
	for i, r := range kind {
		if i > 0 && (unicode.IsUpper(r) || unicode.IsDigit(r) != unicode.IsDigit(prev)) {
			words = append(words, kind[start:i])
			start = i
		}
		prev = r
	}
	words = append(words, kind[start:])
	return strings.Join(words, " ")
}
