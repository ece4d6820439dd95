package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Key is a public key a publisher registered.
type Key struct {
	Publisher   string    `json:"publisher"`
	Fingerprint string    `json:"fingerprint"`
	PEM         string    `json:"pem"`
	CreatedAt   time.Time `json:"createdAt"`
}

const (
	sqlInsertKey = `
INSERT INTO publisher_keys (publisher_id, fingerprint, pem) VALUES ($1, $2, $3)
ON CONFLICT (publisher_id, fingerprint) DO NOTHING
RETURNING created_at`
	sqlForgetChecks = `DELETE FROM signature_checks WHERE publisher_id = $1`
	sqlListKeys     = `
SELECT p.name, k.fingerprint, k.pem, k.created_at
FROM publisher_keys k JOIN publishers p ON p.id = k.publisher_id
WHERE p.name = $1 ORDER BY k.id`
	sqlDeleteKey = `
DELETE FROM publisher_keys k USING publishers p
WHERE p.id = k.publisher_id AND p.name = $1 AND k.fingerprint = $2
RETURNING k.publisher_id`
)

// AddKey registers a public key for publisher; registering the same key again returns created false.
// The publisher's recorded signature checks are dropped, since what counts as verified changed.
func (s *Store) AddKey(ctx context.Context, publisher, fingerprint, pem string) (Key, bool, error) {
	k := Key{Publisher: publisher, Fingerprint: fingerprint, PEM: pem}
	created := false
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		pubID, err := publisherID(ctx, tx, publisher)
		if err != nil {
			return err
		}
		err = tx.QueryRow(ctx, sqlInsertKey, pubID, fingerprint, pem).Scan(&k.CreatedAt)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		created = true
		if _, err := tx.Exec(ctx, sqlForgetChecks, pubID); err != nil {
			return err
		}
		return audit(ctx, tx, publisher, "key.add", "key "+fingerprint, nil)
	})
	if err != nil {
		return Key{}, false, fmt.Errorf("add key for %q: %w", publisher, err)
	}
	return k, created, nil
}

// ListKeys lists a publisher's registered keys, oldest first.
func (s *Store) ListKeys(ctx context.Context, publisher string) ([]Key, error) {
	rows, err := s.pool.Query(ctx, sqlListKeys, publisher)
	if err != nil {
		return nil, fmt.Errorf("list keys of %q: %w", publisher, err)
	}
	keys, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Key])
	if err != nil {
		return nil, fmt.Errorf("list keys of %q: %w", publisher, err)
	}
	return keys, nil
}

// DeleteKey removes a publisher's key, or returns ErrNotFound.
func (s *Store) DeleteKey(ctx context.Context, publisher, fingerprint string) error {
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var pubID int64
		if err := tx.QueryRow(ctx, sqlDeleteKey, publisher, fingerprint).Scan(&pubID); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return Errorf(ErrNotFound, "publisher %q has no key %s", publisher, fingerprint)
			}
			return err
		}
		if _, err := tx.Exec(ctx, sqlForgetChecks, pubID); err != nil {
			return err
		}
		return audit(ctx, tx, publisher, "key.delete", "key "+fingerprint, nil)
	})
	if err != nil {
		return fmt.Errorf("delete key of %q: %w", publisher, err)
	}
	return nil
}

// SignatureCheck is the recorded signature status of an artifact for its publisher.
type SignatureCheck struct {
	Subject        string    `json:"subject"`
	Status         string    `json:"status"`
	KeyFingerprint string    `json:"keyFingerprint,omitempty"`
	CheckedAt      time.Time `json:"checkedAt"`
}

const (
	sqlSignatureChecks = `
SELECT c.subject, c.status, coalesce(c.key_fingerprint, ''), c.checked_at
FROM signature_checks c JOIN publishers p ON p.id = c.publisher_id
WHERE p.name = $1 AND c.subject = ANY($2) AND c.checked_at > now() - make_interval(secs => $3)`
	sqlSaveSignatureCheck = `
INSERT INTO signature_checks (subject, publisher_id, status, key_fingerprint, checked_at)
SELECT $1, p.id, $3, nullif($4, ''), now() FROM publishers p WHERE p.name = $2
ON CONFLICT (subject, publisher_id) DO UPDATE
SET status = EXCLUDED.status, key_fingerprint = EXCLUDED.key_fingerprint, checked_at = EXCLUDED.checked_at`
)

// SignatureChecks returns the checks of subjects for publisher made within maxAge, by subject.
func (s *Store) SignatureChecks(ctx context.Context, publisher string, subjects []string, maxAge time.Duration) (map[string]SignatureCheck, error) {
	rows, err := s.pool.Query(ctx, sqlSignatureChecks, publisher, subjects, maxAge.Seconds())
	if err != nil {
		return nil, fmt.Errorf("read signature checks: %w", err)
	}
	checks, err := pgx.CollectRows(rows, pgx.RowToStructByPos[SignatureCheck])
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
	if _, err := s.pool.Exec(ctx, sqlSaveSignatureCheck, c.Subject, publisher, c.Status, c.KeyFingerprint); err != nil {
		return fmt.Errorf("save signature check of %s: %w", c.Subject, err)
	}
	return nil
}
