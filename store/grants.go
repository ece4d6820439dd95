package store

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/krm-catalog/krm-catalog/identity"
)

// How a publisher owns a group.
const (
	OwnedByName  = identity.OwnedByName
	OwnedByGrant = identity.OwnedByGrant
)

// GroupOwner says who owns a group, and why.
type GroupOwner = identity.GroupOwner

// Grant is a group an admin granted to a publisher.
type Grant struct {
	Group     string    `json:"group"`
	Publisher string    `json:"publisher"`
	Reason    string    `json:"reason,omitempty"`
	GrantedAt time.Time `json:"grantedAt"`
	// Overrides names the publisher that owned the group before the grant, when another did.
	Overrides string `json:"overrides,omitempty"`
}

// GroupConflict is a group migration 0006 could not give an owner without guessing.
type GroupConflict struct {
	Group string `json:"group"`
	// NameOwner is the publisher whose name covers the group, if any.
	NameOwner string `json:"nameOwner,omitempty"`
	// Functions lists, per publisher, the kinds it had registered in the group.
	Functions  map[string][]string `json:"functions"`
	DetectedAt time.Time           `json:"detectedAt"`
}

// The owner of each group: of its ancestors (the group first), the most specific that has a
// grant or is a publisher's name; at one level, a grant wins over a name.
const sqlGroupOwners = `
SELECT DISTINCT ON (t.g) t.g, coalesce(gp.name, np.name), CASE WHEN gr.fn_group IS NOT NULL THEN 'grant' ELSE 'name' END,
       t.a, gr.granted_at
FROM unnest($1::text[], $2::text[], $3::int[]) AS t (g, a, depth)
LEFT JOIN group_grants gr ON gr.fn_group = t.a
LEFT JOIN publishers gp ON gp.id = gr.publisher_id
LEFT JOIN publishers np ON np.name = t.a
WHERE gr.fn_group IS NOT NULL OR np.id IS NOT NULL
ORDER BY t.g, t.depth`

// querier is what reads need of a pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// groupOwners returns the owner of each group; a group nobody owns has an empty Owner.
func groupOwners(ctx context.Context, q querier, groups []string) (map[string]GroupOwner, error) {
	var gs, as []string
	var depths []int32
	for _, g := range groups {
		for i, a := range identity.Ancestors(g) {
			gs, as, depths = append(gs, g), append(as, a), append(depths, int32(i))
		}
	}
	rows, err := q.Query(ctx, sqlGroupOwners, gs, as, depths)
	if err != nil {
		return nil, fmt.Errorf("find group owners: %w", err)
	}
	found, err := pgx.CollectRows(rows, pgx.RowToStructByPos[GroupOwner])
	if err != nil {
		return nil, fmt.Errorf("find group owners: %w", err)
	}
	out := make(map[string]GroupOwner, len(groups))
	for _, g := range groups {
		out[g] = GroupOwner{Group: g}
	}
	for _, o := range found {
		out[o.Group] = o
	}
	return out, nil
}

// authorizeGroups is the one ownership check of every publish: publisher may register new kinds in
// a group only if it owns the group, by name or by grant. Otherwise ErrForbidden, naming the owner.
func authorizeGroups(ctx context.Context, q querier, publisher string, groups []string) error {
	owners, err := groupOwners(ctx, q, groups)
	if err != nil {
		return err
	}
	var refused []string
	for _, g := range groups {
		o := owners[g]
		switch {
		case o.Owner == publisher:
		case o.Owner == "":
			refused = append(refused, fmt.Sprintf("group %q has no owner; an admin can grant it (krm-catalog publisher grant --publisher %s %s)", g, publisher, g))
		default:
			refused = append(refused, fmt.Sprintf("group %q belongs to publisher %q (%s)", g, o.Owner, o.How()))
		}
	}
	if len(refused) > 0 {
		sort.Strings(refused)
		return Errorf(ErrForbidden, "publisher %q may not publish here: %s", publisher, strings.Join(refused, "; "))
	}
	return nil
}

// GetGroupOwner says who owns group; a group nobody owns has an empty Owner.
func (s *Store) GetGroupOwner(ctx context.Context, group string) (GroupOwner, error) {
	if err := identity.ValidateGroup(group); err != nil {
		return GroupOwner{}, Errorf(ErrNotFound, "%s", err)
	}
	owners, err := groupOwners(ctx, s.pool, []string{group})
	if err != nil {
		return GroupOwner{}, err
	}
	return owners[group], nil
}

const (
	sqlFindGrant = `
SELECT p.name FROM group_grants g JOIN publishers p ON p.id = g.publisher_id WHERE g.fn_group = $1 FOR UPDATE OF g`
	sqlInsertGrant = `
INSERT INTO group_grants (fn_group, publisher_id, reason) VALUES ($1, $2, $3) RETURNING granted_at`
	sqlResolveConflict = `DELETE FROM group_conflicts WHERE fn_group = $1`
	sqlDeleteGrant     = `
DELETE FROM group_grants g USING publishers p
WHERE p.id = g.publisher_id AND g.fn_group = $1 AND p.name = $2
RETURNING g.reason`
	sqlListGrants = `
SELECT g.fn_group, p.name, g.reason, g.granted_at, ''
FROM group_grants g JOIN publishers p ON p.id = g.publisher_id
WHERE $1 = '' OR p.name = $1
ORDER BY g.fn_group`
	sqlGroupConflicts = `SELECT fn_group, coalesce(name_owner, ''), functions, detected_at FROM group_conflicts ORDER BY fn_group`
)

// GrantGroup lets publisher add new kinds to group and the groups under it (an admin's act). The
// kinds others registered there stay theirs, and they keep publishing them. Granting the
// same again returns created false; a group granted to another publisher is ErrConflict (revoke
// it first). A grant resolves the group's migration conflict, if any.
func (s *Store) GrantGroup(ctx context.Context, group, publisher, reason string) (Grant, bool, error) {
	g := Grant{Group: group, Publisher: publisher, Reason: reason}
	if err := identity.ValidateGroup(group); err != nil {
		return Grant{}, false, Errorf(ErrInvalid, "%s", err)
	}
	created := false
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		pubID, err := publisherID(ctx, tx, publisher)
		if err != nil {
			return err
		}
		var holder string
		switch err := tx.QueryRow(ctx, sqlFindGrant, group).Scan(&holder); {
		case err == nil && holder == publisher:
			return nil
		case err == nil:
			return Errorf(ErrConflict, "group %q is granted to publisher %q; revoke that grant first", group, holder)
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		owners, err := groupOwners(ctx, tx, []string{group})
		if err != nil {
			return err
		}
		if o := owners[group].Owner; o != "" && o != publisher {
			g.Overrides = o
		}
		if err := tx.QueryRow(ctx, sqlInsertGrant, group, pubID, reason).Scan(&g.GrantedAt); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, sqlResolveConflict, group)
		if err != nil {
			return err
		}
		created = true
		details := map[string]any{"by": "admin", "reason": reason, "resolvedConflict": tag.RowsAffected() > 0}
		if g.Overrides != "" {
			details["overrides"] = g.Overrides
		}
		return audit(ctx, tx, publisher, "group.grant", "group "+group, details)
	})
	if err != nil {
		return Grant{}, false, fmt.Errorf("grant group %q to %q: %w", group, publisher, err)
	}
	return g, created, nil
}

// RevokeGroup takes back a grant. The functions the publisher registered in the group stay its
// own, but it can add no new kinds there. An unknown grant is ErrNotFound.
func (s *Store) RevokeGroup(ctx context.Context, group, publisher string) error {
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var reason string
		if err := tx.QueryRow(ctx, sqlDeleteGrant, group, publisher).Scan(&reason); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return Errorf(ErrNotFound, "publisher %q has no grant of group %q", publisher, group)
			}
			return err
		}
		return audit(ctx, tx, publisher, "group.revoke", "group "+group, map[string]any{"by": "admin", "grantReason": reason})
	})
	if err != nil {
		return fmt.Errorf("revoke group %q of %q: %w", group, publisher, err)
	}
	return nil
}

// ListGrants lists the grants of publisher, or every grant when publisher is "", by group.
func (s *Store) ListGrants(ctx context.Context, publisher string) ([]Grant, error) {
	rows, err := s.pool.Query(ctx, sqlListGrants, publisher)
	if err != nil {
		return nil, fmt.Errorf("list grants: %w", err)
	}
	grants, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Grant])
	if err != nil {
		return nil, fmt.Errorf("list grants: %w", err)
	}
	return grants, nil
}

// GroupConflicts lists the groups migration 0006 left without an owner it could be sure of.
func (s *Store) GroupConflicts(ctx context.Context) ([]GroupConflict, error) {
	rows, err := s.pool.Query(ctx, sqlGroupConflicts)
	if err != nil {
		return nil, fmt.Errorf("list group conflicts: %w", err)
	}
	cs, err := pgx.CollectRows(rows, pgx.RowToStructByPos[GroupConflict])
	if err != nil {
		return nil, fmt.Errorf("list group conflicts: %w", err)
	}
	return cs, nil
}

const (
	sqlFindFunctionForRetire = `SELECT id, publisher FROM functions WHERE fn_group = $1 AND kind = $2 FOR UPDATE`
	sqlRetireVersions        = `DELETE FROM function_versions WHERE function_id = $1`
	sqlRetireDefinitions     = `DELETE FROM definition_revisions WHERE function_id = $1`
	sqlRetireFunction        = `DELETE FROM functions WHERE id = $1`
)

// RetireFunction takes a registered function (group and kind) out of the index (an admin's act):
// it no longer resolves, is no longer found or listed, and its kind is no longer registered, so
// only the group's owner may register it again. The bytes of published catalogs stay as they were
// (versions are immutable); a catalog version that lists the kind still serves it. It returns the
// publisher that had registered it. An unknown function is ErrNotFound.
func (s *Store) RetireFunction(ctx context.Context, group, kind, reason string) (string, error) {
	var publisher string
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var id int64
		if err := tx.QueryRow(ctx, sqlFindFunctionForRetire, group, kind).Scan(&id, &publisher); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return Errorf(ErrNotFound, "no function %s/%s", group, kind)
			}
			return err
		}
		if _, err := tx.Exec(ctx, sqlRetireVersions, id); err != nil {
			return err
		}
		// with no versions left, the refresh takes the function out of the facet totals
		if err := refreshFunctions(ctx, tx, []int64{id}); err != nil {
			return err
		}
		for _, q := range []string{sqlRetireDefinitions, sqlRetireFunction} {
			if _, err := tx.Exec(ctx, q, id); err != nil {
				return err
			}
		}
		if err := audit(ctx, tx, publisher, "function.retire", "function "+group+"/"+kind, map[string]any{"by": "admin", "reason": reason}); err != nil {
			return err
		}
		return notify(ctx, tx, "function:"+group+"/"+kind)
	})
	if err != nil {
		return "", fmt.Errorf("retire function %s/%s: %w", group, kind, err)
	}
	return publisher, nil
}
