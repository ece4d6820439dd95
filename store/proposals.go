package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/krm-catalog/krm-catalog/catalog"
	"github.com/krm-catalog/krm-catalog/schemas"
)

// Bounds on proposals, which any publisher may make to any catalog: they bound what the catalog's
// page and GET .../proposals show, and what one publisher can pile on another's catalog.
const (
	// MaxOpenProposalsPerProposer is how many open proposals one publisher may hold for one catalog.
	MaxOpenProposalsPerProposer = 5
	// MaxOpenProposals is how many open proposals a catalog may have.
	MaxOpenProposals = 100
	// MaxProposalBytes bounds a proposal's definition document.
	MaxProposalBytes = 256 << 10
	// MaxReasonLength bounds a rejection's reason, in bytes.
	MaxReasonLength = 1000
)

// Proposal states.
const (
	ProposalOpen     = "open"
	ProposalApproved = "approved"
	ProposalRejected = "rejected"
)

// Proposal is an entry a function's publisher proposes for a catalog another publisher publishes.
type Proposal struct {
	ID        int64     `json:"id"`
	Catalog   string    `json:"catalog"`
	Proposer  string    `json:"proposer"`
	Group     string    `json:"group"`
	Kind      string    `json:"kind"`
	Versions  []string  `json:"versions"`
	Digest    string    `json:"digest"`
	Status    string    `json:"status"`
	CreatedAt time.Time `json:"createdAt"`
	// Reason, ClosedBy, ClosedAt and CatalogVersion say how a closed proposal was decided.
	Reason         string     `json:"reason,omitempty"`
	ClosedBy       string     `json:"closedBy,omitempty"`
	ClosedAt       *time.Time `json:"closedAt,omitempty"`
	CatalogVersion string     `json:"catalogVersion,omitempty"`
	// Definition is the KRMFunctionDefinition as posted; a list leaves it out.
	Definition string `json:"definition,omitempty"`
}

// CreateProposalParams is a proposal to store.
type CreateProposalParams struct {
	Catalog    string
	Proposer   string
	Content    []byte
	Document   *catalog.Document
	Definition *catalog.Definition
}

const (
	sqlFindCatalog = `
SELECT c.id, p.id, p.name FROM catalogs c JOIN publishers p ON p.id = c.publisher_id
WHERE c.name = $1 FOR UPDATE OF c`
	sqlOpenProposals = `
SELECT count(*), count(*) FILTER (WHERE proposer_id = $2), max(id) FILTER (WHERE proposer_id = $2 AND digest = $3)
FROM catalog_proposals WHERE catalog_id = $1 AND status = 'open'`
	sqlInsertProposal = `
INSERT INTO catalog_proposals (catalog_id, proposer_id, fn_group, kind, content, digest, spec)
VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id`
	// $4: whether to read the definitions, which a list leaves out
	sqlProposals = `
SELECT cp.id, c.name, pp.name, cp.fn_group, cp.kind,
       coalesce((SELECT array_agg(v->>'name') FROM jsonb_array_elements(cp.spec->'versions') AS v), '{}'),
       cp.digest, cp.status, cp.created_at, cp.reason, coalesce(cb.name, ''), cp.closed_at,
       coalesce(cp.catalog_version, ''), CASE WHEN $4 THEN convert_from(cp.content, 'UTF8') ELSE '' END
FROM catalog_proposals cp
JOIN catalogs c ON c.id = cp.catalog_id
JOIN publishers pp ON pp.id = cp.proposer_id
LEFT JOIN publishers cb ON cb.id = cp.closed_by
WHERE c.name = $1 AND ($2 = 0 OR cp.id = $2) AND ($3 = '' OR cp.status = $3)
ORDER BY cp.id`
)

// lockedCatalog is a catalog row locked for the transaction, with its publisher.
type lockedCatalog struct {
	id, ownerID int64
	owner       string
}

func lockCatalog(ctx context.Context, tx pgx.Tx, name string) (lockedCatalog, error) {
	var c lockedCatalog
	err := tx.QueryRow(ctx, sqlFindCatalog, name).Scan(&c.id, &c.ownerID, &c.owner)
	if errors.Is(err, pgx.ErrNoRows) {
		return c, Errorf(ErrNotFound, "no catalog %q", name)
	}
	return c, err
}

// CreateProposal stores a proposal of the definition's function for a catalog. The proposer must
// own the function (have registered it, or own its group when it is new), else ErrForbidden naming
// the owner. The same definition proposed again while open returns the open proposal with created
// false. Past MaxOpenProposalsPerProposer open proposals of the proposer for the catalog, or
// MaxOpenProposals of the catalog, it is ErrConflict.
func (s *Store) CreateProposal(ctx context.Context, p CreateProposalParams) (Proposal, bool, error) {
	digest := Digest(p.Content)
	f := p.Definition.Function
	var (
		id      int64
		created bool
	)
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		pubID, err := publisherID(ctx, tx, p.Proposer)
		if err != nil {
			return err
		}
		c, err := lockCatalog(ctx, tx, p.Catalog)
		if err != nil {
			return err
		}
		owners, err := functionOwners(ctx, tx, []string{f.Group}, []string{f.Kind})
		if err != nil {
			return err
		}
		if o, ok := owners[functionKey{f.Group, f.Kind}]; ok && o.publisherID != pubID {
			return Errorf(ErrForbidden, "%s is publisher %q's: only it may propose it", f.ID(), o.publisher)
		} else if !ok {
			if err := authorizeGroups(ctx, tx, p.Proposer, []string{f.Group}); err != nil {
				return err
			}
		}
		var (
			open, mine int
			same       *int64
		)
		if err := tx.QueryRow(ctx, sqlOpenProposals, c.id, pubID, digest).Scan(&open, &mine, &same); err != nil {
			return err
		}
		switch {
		case same != nil:
			id = *same
			return nil
		case mine >= MaxOpenProposalsPerProposer:
			return Errorf(ErrConflict, "publisher %q has %d open proposals for catalog %q, the most it may hold; wait until %q decides one", p.Proposer, mine, p.Catalog, c.owner)
		case open >= MaxOpenProposals:
			return Errorf(ErrConflict, "catalog %q has %d open proposals, the most it takes; wait until %q decides one", p.Catalog, open, c.owner)
		}
		spec, _ := schemas.Lookup(p.Document.Value, "/spec").(map[string]any)
		if err := tx.QueryRow(ctx, sqlInsertProposal, c.id, pubID, f.Group, f.Kind, p.Content, digest, spec).Scan(&id); err != nil {
			return err
		}
		created = true
		return audit(ctx, tx, p.Proposer, "proposal.create", proposalSubject(p.Catalog, id),
			map[string]any{"function": f.ID(), "digest": digest, "catalogPublisher": c.owner})
	})
	if err != nil {
		return Proposal{}, false, fmt.Errorf("propose %s for catalog %q: %w", f.ID(), p.Catalog, err)
	}
	out, err := s.GetProposal(ctx, p.Catalog, id)
	return out, created, err
}

func proposalSubject(catalogName string, id int64) string {
	return catalogName + "#" + strconv.FormatInt(id, 10)
}

// ListProposals returns a catalog's open proposals, oldest first (at most MaxOpenProposals),
// without their definitions (GetProposal has one: a list of a hundred would be 25 MiB), or
// ErrNotFound for no such catalog.
func (s *Store) ListProposals(ctx context.Context, catalogName string) ([]Proposal, error) {
	if _, err := s.GetCatalog(ctx, catalogName); err != nil {
		return nil, err
	}
	ps, err := s.proposals(ctx, catalogName, 0, ProposalOpen, false)
	if err != nil {
		return nil, fmt.Errorf("list proposals of catalog %q: %w", catalogName, err)
	}
	return ps, nil
}

// GetProposal returns one proposal of a catalog, whatever its state, or ErrNotFound.
func (s *Store) GetProposal(ctx context.Context, catalogName string, id int64) (Proposal, error) {
	ps, err := s.proposals(ctx, catalogName, id, "", true)
	if err != nil {
		return Proposal{}, fmt.Errorf("get proposal %d of catalog %q: %w", id, catalogName, err)
	}
	if len(ps) == 0 {
		return Proposal{}, Errorf(ErrNotFound, "catalog %q has no proposal %d", catalogName, id)
	}
	return ps[0], nil
}

const sqlOpenProposalIDs = `
SELECT c.id::text || ' ' || coalesce(string_agg(cp.id::text, ',' ORDER BY cp.id), '')
FROM catalogs c LEFT JOIN catalog_proposals cp ON cp.catalog_id = c.id AND cp.status = 'open'
WHERE c.name = $1 GROUP BY c.id`

// ProposalsDigest says which list ListProposals would return, without reading it: a digest of the
// catalog's open proposals, which changes when one is made or decided. A cache keyed by it needs
// no other invalidation.
func (s *Store) ProposalsDigest(ctx context.Context, catalogName string) (string, error) {
	var state string
	err := s.pool.QueryRow(ctx, sqlOpenProposalIDs, catalogName).Scan(&state)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", Errorf(ErrNotFound, "no catalog %q", catalogName)
	}
	if err != nil {
		return "", fmt.Errorf("list proposals of catalog %q: %w", catalogName, err)
	}
	return Digest([]byte("proposals " + catalogName + " " + state)), nil
}

func (s *Store) proposals(ctx context.Context, catalogName string, id int64, status string, definitions bool) ([]Proposal, error) {
	rows, err := s.pool.Query(ctx, sqlProposals, catalogName, id, status, definitions)
	if err != nil {
		return nil, err
	}
	ps, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Proposal])
	if err != nil {
		return nil, err
	}
	if ps == nil {
		ps = []Proposal{}
	}
	return ps, nil
}

const (
	sqlLockProposal = `
SELECT cp.catalog_id, cp.status, coalesce(cp.catalog_version, ''), cp.proposer_id, p.name, cp.fn_group, cp.kind
FROM catalog_proposals cp JOIN publishers p ON p.id = cp.proposer_id
WHERE cp.id = $1 FOR UPDATE OF cp`
	sqlCloseProposal = `
UPDATE catalog_proposals SET status = $2, reason = $3, catalog_version = nullif($4, ''), closed_at = now(), closed_by = $5
WHERE id = $1`
)

// openProposal is a locked open proposal: who proposed which function.
type openProposal struct {
	proposerID int64
	proposer   string
	function   catalog.Function // its group and kind
}

// lockOpenProposal locks a proposal of a catalog that is still open; a decided one is ErrConflict.
func lockOpenProposal(ctx context.Context, tx pgx.Tx, catalogID int64, catalogName string, id int64) (openProposal, error) {
	var (
		of              int64
		status, version string
		p               openProposal
	)
	err := tx.QueryRow(ctx, sqlLockProposal, id).Scan(&of, &status, &version, &p.proposerID, &p.proposer, &p.function.Group, &p.function.Kind)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && of != catalogID {
		return p, Errorf(ErrNotFound, "catalog %q has no proposal %d", catalogName, id)
	}
	if err != nil {
		return p, err
	}
	switch status {
	case ProposalOpen:
		return p, nil
	case ProposalApproved:
		return p, Errorf(ErrConflict, "proposal %d of catalog %q is already approved, in version %s", id, catalogName, version)
	}
	return p, Errorf(ErrConflict, "proposal %d of catalog %q is already %s", id, catalogName, status)
}

// claimProposed locks an open proposal for its approval and registers its function for its
// proposer when the function is new, so that the catalog lists it by reference; the proposer must
// still own the function's group.
func claimProposed(ctx context.Context, tx pgx.Tx, catalogID int64, catalogName string, id int64) error {
	p, err := lockOpenProposal(ctx, tx, catalogID, catalogName, id)
	if err != nil {
		return err
	}
	if _, err := claimFunctions(ctx, tx, p.proposerID, p.proposer, []catalog.Function{p.function}); err != nil {
		return fmt.Errorf("proposal %d: %w", id, err)
	}
	return nil
}

// approveProposal closes a locked open proposal as approved in version.
func approveProposal(ctx context.Context, tx pgx.Tx, pubID int64, publisher, catalogName, version string, id int64) error {
	if _, err := tx.Exec(ctx, sqlCloseProposal, id, ProposalApproved, "", version, pubID); err != nil {
		return err
	}
	return audit(ctx, tx, publisher, "proposal.approve", proposalSubject(catalogName, id), map[string]any{"catalogVersion": version})
}

// RejectProposal closes an open proposal with a reason. Only the catalog's publisher decides its
// proposals (else ErrForbidden naming it); a decided proposal is ErrConflict.
func (s *Store) RejectProposal(ctx context.Context, catalogName string, id int64, publisher, reason string) (Proposal, error) {
	if reason == "" || len(reason) > MaxReasonLength {
		return Proposal{}, Errorf(ErrInvalid, "a rejection needs a reason of 1 to %d bytes", MaxReasonLength)
	}
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		pubID, err := publisherID(ctx, tx, publisher)
		if err != nil {
			return err
		}
		c, err := lockCatalog(ctx, tx, catalogName)
		if err != nil {
			return err
		}
		if c.ownerID != pubID {
			return Errorf(ErrForbidden, "only catalog %q's publisher %q decides its proposals", catalogName, c.owner)
		}
		if _, err := lockOpenProposal(ctx, tx, c.id, catalogName, id); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, sqlCloseProposal, id, ProposalRejected, reason, "", pubID); err != nil {
			return err
		}
		return audit(ctx, tx, publisher, "proposal.reject", proposalSubject(catalogName, id), map[string]any{"reason": reason})
	})
	if err != nil {
		return Proposal{}, fmt.Errorf("reject proposal %d of catalog %q: %w", id, catalogName, err)
	}
	return s.GetProposal(ctx, catalogName, id)
}
