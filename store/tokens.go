package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/krm-catalog/krm-catalog/identity"
)

// TokenPrefix starts every API token, so that secret scanners and people can recognise one.
const TokenPrefix = "krmc_"

// Token describes an API token; the token itself is never stored.
type Token struct {
	ID          int64      `json:"id"`
	Publisher   string     `json:"publisher"`
	Hint        string     `json:"hint"` // the first characters, to tell tokens apart
	Description string     `json:"description,omitempty"`
	CreatedAt   time.Time  `json:"createdAt"`
	LastUsedAt  *time.Time `json:"lastUsedAt,omitempty"`
	RevokedAt   *time.Time `json:"revokedAt,omitempty"`
}

func hashToken(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

const (
	sqlEnsurePublisher = `INSERT INTO publishers (name) VALUES ($1) ON CONFLICT (name) DO UPDATE SET name = EXCLUDED.name RETURNING id`
	sqlInsertToken     = `INSERT INTO api_tokens (publisher_id, token_hash, hint, description) VALUES ($1, $2, $3, $4) RETURNING id, created_at`
)

// CreateToken makes a new token for publisher, creating the publisher if it is new. The token is
// returned once and cannot be recovered later. The name must be a lower-case DNS name
// (identity.ValidateName), else ErrInvalid.
func (s *Store) CreateToken(ctx context.Context, publisher, description string) (string, Token, error) {
	// the name owns groups by itself (identity.Covers), so it must be exactly a DNS name
	if err := identity.ValidateName(publisher); err != nil {
		return "", Token{}, fmt.Errorf("create token: %w", Errorf(ErrInvalid, "%s", err))
	}
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return "", Token{}, fmt.Errorf("create token: %w", err)
	}
	token := TokenPrefix + base64.RawURLEncoding.EncodeToString(secret)
	t := Token{Publisher: publisher, Hint: token[:len(TokenPrefix)+6], Description: description}
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var pubID int64
		if err := tx.QueryRow(ctx, sqlEnsurePublisher, publisher).Scan(&pubID); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, sqlInsertToken, pubID, hashToken(token), t.Hint, description).Scan(&t.ID, &t.CreatedAt); err != nil {
			return err
		}
		return audit(ctx, tx, publisher, "token.create", fmt.Sprintf("token %d", t.ID), map[string]any{"hint": t.Hint})
	})
	if err != nil {
		return "", Token{}, fmt.Errorf("create token for %q: %w", publisher, err)
	}
	return token, t, nil
}

const sqlListTokens = `
SELECT t.id, p.name, t.hint, t.description, t.created_at, t.last_used_at, t.revoked_at
FROM api_tokens t JOIN publishers p ON p.id = t.publisher_id
WHERE p.name = $1
ORDER BY t.id`

// ListTokens lists a publisher's tokens, revoked ones included.
func (s *Store) ListTokens(ctx context.Context, publisher string) ([]Token, error) {
	rows, err := s.pool.Query(ctx, sqlListTokens, publisher)
	if err != nil {
		return nil, fmt.Errorf("list tokens of %q: %w", publisher, err)
	}
	tokens, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Token])
	if err != nil {
		return nil, fmt.Errorf("list tokens of %q: %w", publisher, err)
	}
	return tokens, nil
}

const sqlRevokeToken = `
UPDATE api_tokens t SET revoked_at = now()
FROM publishers p
WHERE p.id = t.publisher_id AND p.name = $1 AND t.id = $2 AND t.revoked_at IS NULL
RETURNING t.hint`

// RevokeToken revokes one of a publisher's tokens. Revoking a revoked or unknown token is ErrNotFound.
func (s *Store) RevokeToken(ctx context.Context, publisher string, id int64) error {
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		var hint string
		if err := tx.QueryRow(ctx, sqlRevokeToken, publisher, id).Scan(&hint); err != nil {
			if errors.Is(err, pgx.ErrNoRows) {
				return Errorf(ErrNotFound, "no active token %d of publisher %q", id, publisher)
			}
			return err
		}
		return audit(ctx, tx, publisher, "token.revoke", fmt.Sprintf("token %d", id), map[string]any{"hint": hint})
	})
	if err != nil {
		return fmt.Errorf("revoke token %d: %w", id, err)
	}
	return nil
}

// The last-used time is written at most once a minute per token, so that authenticating stays a read.
const sqlAuthenticate = `
WITH t AS (
    SELECT t.id, p.name
    FROM api_tokens t JOIN publishers p ON p.id = t.publisher_id
    WHERE t.token_hash = $1 AND t.revoked_at IS NULL
), touched AS (
    UPDATE api_tokens SET last_used_at = now()
    WHERE id = (SELECT id FROM t) AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')
)
SELECT id, name FROM t`

// Principal is who a token authenticates: the publisher it acts for, and the token's id (which
// the audit log records).
type Principal struct {
	Publisher string
	TokenID   int64
}

// Authenticate returns the publisher a token acts for, or ErrUnauthorized.
func (s *Store) Authenticate(ctx context.Context, token string) (Principal, error) {
	if !strings.HasPrefix(token, TokenPrefix) {
		return Principal{}, Errorf(ErrUnauthorized, "invalid or revoked token")
	}
	var p Principal
	err := s.pool.QueryRow(ctx, sqlAuthenticate, hashToken(token)).Scan(&p.TokenID, &p.Publisher)
	if errors.Is(err, pgx.ErrNoRows) {
		return Principal{}, Errorf(ErrUnauthorized, "invalid or revoked token")
	}
	if err != nil {
		return Principal{}, fmt.Errorf("authenticate: %w", err)
	}
	return p, nil
}
