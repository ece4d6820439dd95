package store

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/krm-catalog/krm-catalog/catalog"
)

// catalogEntries is what a catalog's functions are to its publisher: the ids of all, and, for the
// functions other publishers registered (listed by reference), the id of that publisher.
type catalogEntries struct {
	ids     map[functionKey]int64
	curated map[functionKey]int64
}

// authorizeEntries checks that a publisher may list every function of a catalog: its own functions
// (and new ones in groups it owns, which it registers, as claimFunctions does), and other
// publishers' functions by reference, exactly as they published them (checkCurated). Either
// refusal is ErrForbidden and names the function's publisher. proposal, when not 0, is the open
// proposal this publish approves: its entry counts as its proposer's.
func authorizeEntries(ctx context.Context, tx pgx.Tx, pubID int64, publisher string, catalogID, proposal int64, fns []catalog.Function) (catalogEntries, error) {
	groups, kinds := make([]string, 0, len(fns)), make([]string, 0, len(fns))
	for _, f := range fns {
		groups, kinds = append(groups, f.Group), append(kinds, f.Kind)
	}
	owners, err := functionOwners(ctx, tx, groups, kinds)
	if err != nil {
		return catalogEntries{}, err
	}
	var own, others []catalog.Function
	for _, f := range fns {
		// an entry that names the publisher who registered the function lists it by reference;
		// one that names another is a claim, which claimFunctions refuses naming the owner
		if o, registered := owners[functionKey{f.Group, f.Kind}]; registered && o.publisherID != pubID && f.Publisher == o.publisher {
			others = append(others, f)
		} else {
			own = append(own, f)
		}
	}
	out := catalogEntries{curated: map[functionKey]int64{}}
	// first the groups, whose refusal names their owner
	if out.ids, err = claimFunctions(ctx, tx, pubID, publisher, own); err != nil {
		return catalogEntries{}, err
	}
	var refused []string
	for _, f := range own {
		if f.Publisher != publisher {
			refused = append(refused, fmt.Sprintf("%s names publisher %q, but the token acts for %q", f.ID(), f.Publisher, publisher))
		}
	}
	if len(refused) > 0 {
		return catalogEntries{}, Errorf(ErrForbidden, "the catalog lists functions of others: %s", strings.Join(refused, "; "))
	}
	for _, f := range others {
		key := functionKey{f.Group, f.Kind}
		o := owners[key]
		reason, err := checkCurated(ctx, tx, f, o, catalogID, proposal)
		if err != nil {
			return catalogEntries{}, err
		}
		if reason != "" {
			refused = append(refused, reason)
			continue
		}
		out.ids[key], out.curated[key] = o.id, o.publisherID
	}
	if len(refused) > 0 {
		sort.Strings(refused)
		return catalogEntries{}, Errorf(ErrForbidden, "publisher %q may list other publishers' functions only as they published them: %s", publisher, strings.Join(refused, "; "))
	}
	return out, nil
}

// sqlPublishedRuntimes are the version objects a function's publisher publishes now for one
// version: those its current catalogs and definition list (not a curator's copies); where they
// list none, those of its latest proposal of the function approved for the catalog, its word for
// that catalog until it says otherwise; and those of the proposal being approved. A runtime its
// publisher replaced, in its own sources or by a later proposal, is no longer one of them.
const sqlPublishedRuntimes = `
WITH own AS (
    SELECT fv.spec->'version' AS v FROM function_versions fv
    WHERE fv.function_id = $1 AND fv.version = $2 AND fv.current AND fv.curated_from IS NULL),
approved AS (
    SELECT cp.spec FROM catalog_proposals cp
    WHERE cp.catalog_id = $3 AND cp.proposer_id = $4 AND cp.fn_group = $5 AND cp.kind = $6 AND cp.status = 'approved'
    ORDER BY cp.id DESC LIMIT 1)
SELECT v FROM own
UNION ALL
SELECT v FROM approved, jsonb_array_elements(approved.spec->'versions') AS v
WHERE v->>'name' = $2 AND NOT EXISTS (SELECT 1 FROM own)
UNION ALL
SELECT v FROM catalog_proposals cp, jsonb_array_elements(cp.spec->'versions') AS v
WHERE cp.id = $7 AND cp.status = 'open' AND cp.catalog_id = $3 AND cp.proposer_id = $4
  AND cp.fn_group = $5 AND cp.kind = $6 AND v->>'name' = $2`

// checkCurated checks one entry of another publisher's function: every version runs exactly what
// that publisher published for it (catalog.SameRuntime). It returns why not, or "".
func checkCurated(ctx context.Context, tx pgx.Tx, f catalog.Function, o functionOwner, catalogID, proposal int64) (string, error) {
	for _, v := range f.Versions {
		rows, err := tx.Query(ctx, sqlPublishedRuntimes, o.id, v.Name, catalogID, o.publisherID, f.Group, f.Kind, proposal)
		if err != nil {
			return "", fmt.Errorf("find what %q published of %s: %w", o.publisher, f.ID(), err)
		}
		published, err := pgx.CollectRows(rows, pgx.RowTo[map[string]any])
		if err != nil {
			return "", fmt.Errorf("find what %q published of %s: %w", o.publisher, f.ID(), err)
		}
		if len(published) == 0 {
			return fmt.Sprintf("%s version %s: publisher %q publishes no such version", f.ID(), v.Name, o.publisher), nil
		}
		same := false
		for _, p := range published {
			if catalog.SameRuntime(catalog.DecodeVersion(p).Runtime, v.Runtime) {
				same = true
				break
			}
		}
		if !same {
			return fmt.Sprintf("%s version %s: the runtime is not the one publisher %q published for it", f.ID(), v.Name, o.publisher), nil
		}
	}
	return "", nil
}

// curatedNames are the functions listed by reference, as "group/Kind from publisher", for the
// audit log.
func (e catalogEntries) curatedNames(fns []catalog.Function) []string {
	out := []string{}
	seen := map[functionKey]bool{}
	for _, f := range fns {
		key := functionKey{f.Group, f.Kind}
		if _, ok := e.curated[key]; ok && !seen[key] {
			seen[key] = true
			out = append(out, f.ID()+" from "+f.Publisher)
		}
	}
	return out
}
