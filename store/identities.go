package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/krm-catalog/krm-catalog/identity"
)

// Identity is a keyless identity a publisher registered, with proof; removed ones stay as history.
type Identity = identity.Identity

// ChallengeVerifier checks a keyless answer to a challenge against the service's trusted root.
type ChallengeVerifier interface {
	VerifyChallenge(c identity.Challenge, p identity.KeylessProof) (identity.Signer, error)
}

const (
	sqlInsertIdentity = `
INSERT INTO publisher_identities (publisher_id, issuer, subject, proven_issuer, proven_subject)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (publisher_id, issuer, subject) WHERE removed_at IS NULL DO NOTHING
RETURNING created_at, proven_at`
	sqlActiveIdentity = `
SELECT created_at, proven_at FROM publisher_identities
WHERE publisher_id = $1 AND issuer = $2 AND subject = $3 AND removed_at IS NULL`
	sqlIdentities = `
SELECT p.name, i.issuer, i.subject, i.created_at, i.proven_at, i.removed_at, coalesce(i.removed_reason, '')
FROM publisher_identities i JOIN publishers p ON p.id = i.publisher_id
WHERE p.name = $1 AND ($2 OR i.removed_at IS NULL) ORDER BY i.id`
	sqlRemoveIdentity = `
UPDATE publisher_identities i SET removed_at = now(), removed_reason = $4
FROM publishers p
WHERE p.id = i.publisher_id AND p.name = $1 AND i.issuer = $2 AND i.subject = $3 AND i.removed_at IS NULL
RETURNING i.publisher_id`
	// a removed identity can turn "verified" into "signed": forget what any identity verified
	sqlForgetKeylessVerified = `
DELETE FROM signature_checks WHERE publisher_id = $1 AND status = 'verified' AND signer_issuer IS NOT NULL`
)

// AddIdentity registers a keyless identity for publisher, given a sigstore bundle over a challenge
// IssueChallenge issued to this publisher (used up by this call, whatever its outcome), signed by a
// certificate the identity's pattern matches, as v verifies it. A proof that does not verify or
// does not match is ErrForbidden; a malformed one ErrInvalid. Registering an active identity again
// returns created false. The publisher's recorded signature checks are dropped, since the
// identity may verify what was only signed.
func (s *Store) AddIdentity(ctx context.Context, publisher string, proof identity.KeylessProof, v ChallengeVerifier) (Identity, bool, error) {
	if err := proof.Pattern.Validate(); err != nil {
		return Identity{}, false, fmt.Errorf("add identity for %q: %w", publisher, Errorf(ErrInvalid, "%s", err))
	}
	c, err := s.consumeChallenge(ctx, publisher, proof.Nonce)
	if err != nil {
		return Identity{}, false, fmt.Errorf("add identity for %q: %w", publisher, err)
	}
	signer, err := v.VerifyChallenge(c, proof)
	switch {
	case errors.Is(err, identity.ErrKeylessMismatch), errors.Is(err, identity.ErrKeylessUnverified):
		return Identity{}, false, fmt.Errorf("add identity for %q: %w", publisher, Errorf(ErrForbidden,
			"no proof of the identity %s: %s; sign the challenge keylessly as that identity (krm-catalog publisher add-identity)", proof.Pattern, err))
	case err != nil:
		return Identity{}, false, fmt.Errorf("add identity for %q: %w", publisher, Errorf(ErrInvalid, "%s", err))
	}
	id := Identity{Publisher: publisher, Pattern: proof.Pattern}
	created := false
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		pubID, err := publisherID(ctx, tx, publisher)
		if err != nil {
			return err
		}
		err = tx.QueryRow(ctx, sqlInsertIdentity, pubID, id.Issuer, id.Subject, signer.Issuer, signer.Subject).Scan(&id.CreatedAt, &id.ProvenAt)
		if errors.Is(err, pgx.ErrNoRows) {
			return tx.QueryRow(ctx, sqlActiveIdentity, pubID, id.Issuer, id.Subject).Scan(&id.CreatedAt, &id.ProvenAt)
		}
		if err != nil {
			return err
		}
		created = true
		if _, err := tx.Exec(ctx, sqlForgetChecks, pubID); err != nil {
			return err
		}
		return audit(ctx, tx, publisher, "identity.add", "identity "+id.Pattern.String(), map[string]any{
			"proof": "keyless challenge signature", "certificateIssuer": signer.Issuer, "certificateSubject": signer.Subject, "challengeExpiresAt": c.ExpiresAt})
	})
	if err != nil {
		return Identity{}, false, fmt.Errorf("add identity for %q: %w", publisher, err)
	}
	return id, created, nil
}

// ListIdentities lists a publisher's active identities, oldest first.
func (s *Store) ListIdentities(ctx context.Context, publisher string) ([]Identity, error) {
	return s.identities(ctx, publisher, false)
}

// IdentityHistory lists every identity a publisher registered, removed ones included.
func (s *Store) IdentityHistory(ctx context.Context, publisher string) ([]Identity, error) {
	return s.identities(ctx, publisher, true)
}

func (s *Store) identities(ctx context.Context, publisher string, removed bool) ([]Identity, error) {
	rows, err := s.pool.Query(ctx, sqlIdentities, publisher, removed)
	if err != nil {
		return nil, fmt.Errorf("list identities of %q: %w", publisher, err)
	}
	ids, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Identity, error) {
		var i Identity
		err := row.Scan(&i.Publisher, &i.Issuer, &i.Subject, &i.CreatedAt, &i.ProvenAt, &i.RemovedAt, &i.RemovedReason)
		return i, err
	})
	if err != nil {
		return nil, fmt.Errorf("list identities of %q: %w", publisher, err)
	}
	return ids, nil
}

// DeleteIdentity removes a publisher's active identity, or returns ErrNotFound. It stays in the
// history, and the signature checks an identity verified are made again when next read.
func (s *Store) DeleteIdentity(ctx context.Context, publisher string, p identity.Pattern) error {
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var pubID int64
		if err := tx.QueryRow(ctx, sqlRemoveIdentity, publisher, p.Issuer, p.Subject, "removed by the publisher").Scan(&pubID); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return Errorf(ErrNotFound, "publisher %q has no identity %s", publisher, p)
			}
			return err
		}
		tag, err := tx.Exec(ctx, sqlForgetKeylessVerified, pubID)
		if err != nil {
			return err
		}
		return audit(ctx, tx, publisher, "identity.delete", "identity "+p.String(), map[string]any{"checksToRedo": tag.RowsAffected()})
	})
	if err != nil {
		return fmt.Errorf("delete identity of %q: %w", publisher, err)
	}
	return nil
}
