package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/krm-catalog/krm-catalog/identity"
)

// Key is a public key a publisher registered, with proof; removed keys stay as history.
type Key = identity.Key

// maxOpenChallenges bounds the challenges a publisher may hold at once, so a token cannot fill the
// table; issuing one more drops the oldest.
const maxOpenChallenges = 16

const (
	sqlPurgeChallenges = `DELETE FROM key_challenges WHERE expires_at < now()`
	sqlInsertChallenge = `
INSERT INTO key_challenges (nonce, publisher_id, expires_at)
VALUES ($1, $2, date_trunc('second', now()) + make_interval(secs => $3))
RETURNING expires_at`
	sqlTrimChallenges = `
DELETE FROM key_challenges WHERE publisher_id = $1 AND nonce NOT IN (
    SELECT nonce FROM key_challenges WHERE publisher_id = $1 ORDER BY id DESC LIMIT $2)`
	sqlConsumeChallenge = `
DELETE FROM key_challenges c USING publishers p
WHERE p.id = c.publisher_id AND p.name = $1 AND c.nonce = $2
RETURNING c.expires_at, c.expires_at > now()`
)

// IssueChallenge issues a challenge for publisher to sign with the key it wants to register, valid
// for ttl and usable once.
func (s *Store) IssueChallenge(ctx context.Context, publisher string, ttl time.Duration) (identity.Challenge, error) {
	nonce, err := identity.NewNonce()
	if err != nil {
		return identity.Challenge{}, err
	}
	c := identity.Challenge{Publisher: publisher, Nonce: nonce}
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		pubID, err := publisherID(ctx, tx, publisher)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, sqlPurgeChallenges); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, sqlInsertChallenge, nonce, pubID, ttl.Seconds()).Scan(&c.ExpiresAt); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, sqlTrimChallenges, pubID, maxOpenChallenges)
		return err
	})
	if err != nil {
		return identity.Challenge{}, fmt.Errorf("issue a key challenge for %q: %w", publisher, err)
	}
	c.ExpiresAt = c.ExpiresAt.UTC()
	return c, nil
}

// consumeChallenge takes publisher's challenge nonce out of the store, so that it serves once,
// whatever the proof's outcome.
func (s *Store) consumeChallenge(ctx context.Context, publisher, nonce string) (identity.Challenge, error) {
	c := identity.Challenge{Publisher: publisher, Nonce: nonce}
	var live bool
	err := s.pool.QueryRow(ctx, sqlConsumeChallenge, publisher, nonce).Scan(&c.ExpiresAt, &live)
	if errors.Is(err, pgx.ErrNoRows) {
		return c, Errorf(ErrForbidden, "publisher %q has no open challenge %q (unknown, used, or another publisher's): request a new one", publisher, nonce)
	}
	if err != nil {
		return c, fmt.Errorf("consume challenge: %w", err)
	}
	if !live {
		return c, Errorf(ErrForbidden, "the challenge expired at %s: request a new one", c.ExpiresAt.UTC().Format(time.RFC3339))
	}
	c.ExpiresAt = c.ExpiresAt.UTC()
	return c, nil
}

const (
	sqlInsertKey = `
INSERT INTO publisher_keys (publisher_id, fingerprint, pem, proven_at) VALUES ($1, $2, $3, now())
ON CONFLICT (publisher_id, fingerprint) WHERE removed_at IS NULL DO NOTHING
RETURNING created_at, proven_at`
	sqlActiveKey = `
SELECT pem, created_at, proven_at FROM publisher_keys WHERE publisher_id = $1 AND fingerprint = $2 AND removed_at IS NULL`
	// a new key can turn "signed" into "verified"; a publisher registering a key has likely just
	// signed too, so every check of the publisher is made again
	sqlForgetChecks = `DELETE FROM signature_checks WHERE publisher_id = $1`
	// a removed key can turn "verified" into "signed": forget what it, or an unrecorded key, verified
	sqlForgetVerified = `
DELETE FROM signature_checks
WHERE publisher_id = $1 AND status = 'verified'
  AND (key_fingerprint = $2 OR (key_fingerprint IS NULL AND signer_issuer IS NULL))`
	sqlKeys = `
SELECT p.name, k.fingerprint, k.pem, k.created_at, k.proven_at, k.removed_at, coalesce(k.removed_reason, '')
FROM publisher_keys k JOIN publishers p ON p.id = k.publisher_id
WHERE p.name = $1 AND ($2 OR k.removed_at IS NULL) ORDER BY k.id`
	sqlRemoveKey = `
UPDATE publisher_keys k SET removed_at = now(), removed_reason = $3
FROM publishers p
WHERE p.id = k.publisher_id AND p.name = $1 AND k.fingerprint = $2 AND k.removed_at IS NULL
RETURNING k.publisher_id`
)

// AddKey registers a public key for publisher, given proof that the publisher holds its private
// half: a signature over a challenge IssueChallenge issued to this publisher, unexpired and not
// used before (the challenge is used up by this call, whatever its outcome). A proof that does not
// verify is ErrForbidden; a malformed one ErrInvalid. Registering an active key again returns
// created false. The publisher's recorded signature checks are dropped, since the key may verify
// what was only signed.
func (s *Store) AddKey(ctx context.Context, publisher string, proof identity.Proof) (Key, bool, error) {
	c, err := s.consumeChallenge(ctx, publisher, proof.Nonce)
	if err != nil {
		return Key{}, false, fmt.Errorf("add key for %q: %w", publisher, err)
	}
	pk, err := c.Verify(proof)
	switch {
	case errors.Is(err, identity.ErrBadProof):
		return Key{}, false, fmt.Errorf("add key for %q: %w", publisher, Errorf(ErrForbidden,
			"no proof of possession: the signature over the challenge does not verify with key %s; sign the challenge with that key's private half (krm-catalog publisher add-key --key cosign.key)", pk.ID()))
	case err != nil:
		return Key{}, false, fmt.Errorf("add key for %q: %w", publisher, Errorf(ErrInvalid, "%s", err))
	}
	// stored as re-encoded from the proven key, not as posted
	canonical, err := pk.PEM()
	if err != nil {
		return Key{}, false, fmt.Errorf("add key for %q: %w", publisher, err)
	}
	k := Key{Publisher: publisher, Fingerprint: pk.ID(), PEM: canonical}
	created := false
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		pubID, err := publisherID(ctx, tx, publisher)
		if err != nil {
			return err
		}
		err = tx.QueryRow(ctx, sqlInsertKey, pubID, k.Fingerprint, k.PEM).Scan(&k.CreatedAt, &k.ProvenAt)
		if errors.Is(err, pgx.ErrNoRows) {
			return tx.QueryRow(ctx, sqlActiveKey, pubID, k.Fingerprint).Scan(&k.PEM, &k.CreatedAt, &k.ProvenAt)
		}
		if err != nil {
			return err
		}
		created = true
		if _, err := tx.Exec(ctx, sqlForgetChecks, pubID); err != nil {
			return err
		}
		return audit(ctx, tx, publisher, "key.add", "key "+k.Fingerprint, map[string]any{"proof": "challenge signature", "challengeExpiresAt": c.ExpiresAt})
	})
	if err != nil {
		return Key{}, false, fmt.Errorf("add key for %q: %w", publisher, err)
	}
	return k, created, nil
}

// ListKeys lists a publisher's active keys, oldest first: the keys that make signatures verified.
func (s *Store) ListKeys(ctx context.Context, publisher string) ([]Key, error) {
	return s.keys(ctx, publisher, false)
}

// KeyHistory lists every key a publisher registered, removed ones included, oldest first.
func (s *Store) KeyHistory(ctx context.Context, publisher string) ([]Key, error) {
	return s.keys(ctx, publisher, true)
}

func (s *Store) keys(ctx context.Context, publisher string, removed bool) ([]Key, error) {
	rows, err := s.pool.Query(ctx, sqlKeys, publisher, removed)
	if err != nil {
		return nil, fmt.Errorf("list keys of %q: %w", publisher, err)
	}
	keys, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Key])
	if err != nil {
		return nil, fmt.Errorf("list keys of %q: %w", publisher, err)
	}
	return keys, nil
}

// DeleteKey removes a publisher's active key, or returns ErrNotFound. The key stays in the history,
// marked removed, and the signature checks it verified are made again when next read.
func (s *Store) DeleteKey(ctx context.Context, publisher, fingerprint string) error {
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var pubID int64
		if err := tx.QueryRow(ctx, sqlRemoveKey, publisher, fingerprint, "removed by the publisher").Scan(&pubID); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return Errorf(ErrNotFound, "publisher %q has no key %s", publisher, fingerprint)
			}
			return err
		}
		tag, err := tx.Exec(ctx, sqlForgetVerified, pubID, fingerprint)
		if err != nil {
			return err
		}
		return audit(ctx, tx, publisher, "key.delete", "key "+fingerprint, map[string]any{"checksToRedo": tag.RowsAffected()})
	})
	if err != nil {
		return fmt.Errorf("delete key of %q: %w", publisher, err)
	}
	return nil
}

// SignatureCheck is the recorded signature status of an artifact for its publisher.
type SignatureCheck struct {
	Subject string `json:"subject"`
	Status  string `json:"status"`
	// Signer made the signature that verified: a key (its fingerprint) or a certificate identity.
	Signer       identity.Signer        `json:"signer"`
	CheckedAt    time.Time              `json:"checkedAt"`
	Attestations *identity.Attestations `json:"attestations,omitempty"`
}

const (
	sqlSignatureChecks = `
SELECT c.subject, c.status, coalesce(c.key_fingerprint, ''), coalesce(c.signer_issuer, ''),
       coalesce(c.signer_subject, ''), c.checked_at, c.attestations
FROM signature_checks c JOIN publishers p ON p.id = c.publisher_id
WHERE p.name = $1 AND c.subject = ANY($2) AND c.checked_at > now() - make_interval(secs => $3)`
	sqlSaveSignatureCheck = `
INSERT INTO signature_checks (subject, publisher_id, status, key_fingerprint, signer_issuer, signer_subject, attestations, checked_at)
SELECT $1, p.id, $3, nullif($4, ''), nullif($5, ''), nullif($6, ''), $7, now() FROM publishers p WHERE p.name = $2
ON CONFLICT (subject, publisher_id) DO UPDATE
SET status = EXCLUDED.status, key_fingerprint = EXCLUDED.key_fingerprint, signer_issuer = EXCLUDED.signer_issuer,
    signer_subject = EXCLUDED.signer_subject, attestations = EXCLUDED.attestations, checked_at = EXCLUDED.checked_at`
)

// SignatureChecks returns the checks of subjects for publisher made within maxAge, by subject.
func (s *Store) SignatureChecks(ctx context.Context, publisher string, subjects []string, maxAge time.Duration) (map[string]SignatureCheck, error) {
	rows, err := s.pool.Query(ctx, sqlSignatureChecks, publisher, subjects, maxAge.Seconds())
	if err != nil {
		return nil, fmt.Errorf("read signature checks: %w", err)
	}
	checks, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (SignatureCheck, error) {
		var c SignatureCheck
		err := row.Scan(&c.Subject, &c.Status, &c.Signer.Key, &c.Signer.Issuer, &c.Signer.Subject, &c.CheckedAt, &c.Attestations)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("read signature checks: %w", err)
	}
	out := make(map[string]SignatureCheck, len(checks))
	for _, c := range checks {
		out[c.Subject] = c
	}
	return out, nil
}

// SaveSignatureCheck records a check.
func (s *Store) SaveSignatureCheck(ctx context.Context, publisher string, c SignatureCheck) error {
	var att *identity.Attestations
	if c.Attestations != nil && !c.Attestations.IsZero() {
		att = c.Attestations
	}
	if _, err := s.pool.Exec(ctx, sqlSaveSignatureCheck, c.Subject, publisher, c.Status, c.Signer.Key, c.Signer.Issuer, c.Signer.Subject, att); err != nil {
		return fmt.Errorf("save signature check of %s: %w", c.Subject, err)
	}
	return nil
}
