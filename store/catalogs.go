package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/krm-catalog/krm-catalog/catalog"
	"github.com/krm-catalog/krm-catalog/identity"

	"golang.org/x/mod/semver"
)

// CatalogVersion is one published version of a catalog.
type CatalogVersion struct {
	Catalog     string    `json:"catalog"`
	Version     string    `json:"version"`
	Digest      string    `json:"digest"`
	Publisher   string    `json:"publisher"`
	PublishedAt time.Time `json:"publishedAt"`
	Size        int       `json:"size"`
	Latest      bool      `json:"latest"`
	Functions   int       `json:"functions"`
	// OCIReference and OCIDigest say where the service pushed the version (serve --registry).
	OCIReference string `json:"ociReference,omitempty"`
	OCIDigest    string `json:"ociDigest,omitempty"`
	// Signature is verified, signed or unsigned for a pushed version; the server fills it in.
	Signature string `json:"signature,omitempty"`
	// SignedBy names who made the signature that verified: a registered key or identity.
	SignedBy *identity.Signer `json:"signedBy,omitempty" db:"-"`
}

// CatalogSummary describes a catalog and its latest version.
type CatalogSummary struct {
	Name      string          `json:"name"`
	Publisher string          `json:"publisher"`
	CreatedAt time.Time       `json:"createdAt"`
	Versions  int             `json:"versions"`
	Latest    *CatalogVersion `json:"latest,omitempty"`
}

// Content is a stored document: the bytes as published, and their digest ("sha256:<hex>").
type Content struct {
	Name    string // catalog name, or group/kind for a definition
	Version string // catalog version; empty for definitions
	Bytes   []byte
	Digest  string
	// Derived is set when the document was generated from a catalog entry rather than published
	// as it is (a definition.yaml for a function only catalogs list).
	Derived bool
}

// Digest returns the content digest of b in OCI form.
func Digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// PublishCatalogParams is a catalog version to publish: the exact bytes and what was decoded from them.
type PublishCatalogParams struct {
	Name      string
	Version   string
	Publisher string
	Content   []byte
	Document  *catalog.Document
	Catalog   *catalog.Catalog
	// Push, when set, copies the new version to a registry before it is committed, outside any
	// transaction, and returns where (reference, manifest digest); a failed push fails the publish.
	Push func(ctx context.Context) (reference, digest string, err error)
	// Proposal, when not 0, is the open proposal of this catalog that the publish approves; it is
	// closed as approved with the version in the same transaction.
	Proposal int64
}

const (
	sqlEnsureCatalog = `INSERT INTO catalogs (name, publisher_id) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING`
	sqlLockCatalog   = `
SELECT c.id, p.id, p.name, v.id, v.version
FROM catalogs c
JOIN publishers p ON p.id = c.publisher_id
LEFT JOIN catalog_versions v ON v.id = c.latest_version_id
WHERE c.name = $1
FOR UPDATE OF c`
	sqlFindCatalogVersion = `
SELECT digest, published_at, length(content), coalesce(oci_reference, ''), coalesce(oci_digest, '')
FROM catalog_versions WHERE catalog_id = $1 AND version = $2`
	sqlInsertCatalogVer = `
INSERT INTO catalog_versions (catalog_id, version, content, digest, publisher_id)
VALUES ($1, $2, $3, $4, $5) RETURNING id, published_at`
	sqlSetLatestCatalog = `UPDATE catalogs SET latest_version_id = $2 WHERE id = $1`
	sqlSetCatalogOCI    = `UPDATE catalog_versions SET oci_reference = $2, oci_digest = $3 WHERE id = $1`
	sqlSwapCurrent      = `
UPDATE function_versions SET current = (catalog_version_id = $2)
WHERE catalog_version_id = $2 OR catalog_version_id = $1
RETURNING function_id`
)

// errRehearsed rolls back the rehearsal of a publish that pushes to a registry.
var errRehearsed = errors.New("publish rehearsed")

// PublishCatalog stores a catalog version in one transaction. Publishing the same bytes again
// returns the stored version with created false; other bytes under a published version are
// ErrConflict. The catalog name must belong to the publisher (or be new, and so become theirs), and
// every function it lists too, unless the entry lists another publisher's function exactly as
// that publisher published it (curation by reference); else ErrForbidden.
//
// With p.Push, the publish is rehearsed first (the same transaction, rolled back where the push
// belongs), so that a publish that would fail does not push; then the push runs with no
// transaction open, no row locked and no connection held, however long the registry takes; then
// the transaction runs again and commits the version with where it was pushed. Nothing is visible
// before that commit, and a failed push publishes nothing.
func (s *Store) PublishCatalog(ctx context.Context, p PublishCatalogParams) (CatalogVersion, bool, error) {
	sizes := derivedSizes(p.Document, p.Catalog.Functions)
	var pushed *pushResult
	if p.Push != nil {
		out, created, err := s.publishCatalog(ctx, p, nil, sizes)
		if !errors.Is(err, errRehearsed) {
			return out, created, err // a no-op republish, or a publish that would fail
		}
		ref, dgst, err := p.Push(ctx)
		if err != nil {
			return CatalogVersion{}, false, fmt.Errorf("publish catalog %q version %s: %w", p.Name, p.Version, err)
		}
		pushed = &pushResult{reference: ref, digest: dgst}
	}
	return s.publishCatalog(ctx, p, pushed, sizes)
}

// pushResult is where a catalog version was pushed.
type pushResult struct{ reference, digest string }

// publishCatalog is PublishCatalog's transaction. With p.Push set and pushed nil, it stops with
// errRehearsed where the push result is needed.
func (s *Store) publishCatalog(ctx context.Context, p PublishCatalogParams, pushed *pushResult, sizes [][]int) (CatalogVersion, bool, error) {
	digest := Digest(p.Content)
	out := CatalogVersion{Catalog: p.Name, Version: p.Version, Digest: digest, Publisher: p.Publisher, Size: len(p.Content), Functions: len(p.Catalog.Functions)}
	created := false
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		pubID, err := publisherID(ctx, tx, p.Publisher)
		if err != nil {
			return err
		}
		if domain, ok := identity.CatalogDomain(p.Name); ok {
			if err := authorizeGroups(ctx, tx, p.Publisher, []string{domain}); err != nil {
				return fmt.Errorf("catalog name %q claims the domain %s: %w", p.Name, domain, err)
			}
		}
		if _, err := tx.Exec(ctx, sqlEnsureCatalog, p.Name, pubID); err != nil {
			return err
		}
		var (
			catalogID, ownerID int64
			owner              string
			latestID           *int64
			latestVersion      *string
		)
		if err := tx.QueryRow(ctx, sqlLockCatalog, p.Name).Scan(&catalogID, &ownerID, &owner, &latestID, &latestVersion); err != nil {
			return err
		}
		if ownerID != pubID {
			return Errorf(ErrForbidden, "catalog %q belongs to publisher %q", p.Name, owner)
		}
		var existing string
		err = tx.QueryRow(ctx, sqlFindCatalogVersion, catalogID, p.Version).Scan(&existing, &out.PublishedAt, &out.Size, &out.OCIReference, &out.OCIDigest)
		switch {
		case err == nil && existing == digest:
			out.Latest = latestVersion != nil && *latestVersion == p.Version
			return nil
		case err == nil:
			return Errorf(ErrConflict, "version %s of catalog %q is already published with other content (%s); publish a new version", p.Version, p.Name, existing)
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		if p.Proposal != 0 {
			if err := claimProposed(ctx, tx, catalogID, p.Name, p.Proposal); err != nil {
				return err
			}
		}
		entries, err := authorizeEntries(ctx, tx, pubID, p.Publisher, catalogID, p.Proposal, p.Catalog.Functions)
		if err != nil {
			return err
		}
		var versionID int64
		if err := tx.QueryRow(ctx, sqlInsertCatalogVer, catalogID, p.Version, p.Content, digest, pubID).Scan(&versionID, &out.PublishedAt); err != nil {
			return err
		}
		if err := insertFunctionVersions(ctx, tx, entries.ids, p.Document, p.Catalog.Functions, source{catalogVersionID: versionID, curated: entries.curated}, sizes); err != nil {
			return err
		}
		if p.Proposal != 0 {
			if err := approveProposal(ctx, tx, pubID, p.Publisher, p.Name, p.Version, p.Proposal); err != nil {
				return err
			}
		}
		if p.Push != nil {
			if pushed == nil {
				return errRehearsed
			}
			if _, err := tx.Exec(ctx, sqlSetCatalogOCI, versionID, pushed.reference, pushed.digest); err != nil {
				return err
			}
			out.OCIReference, out.OCIDigest = pushed.reference, pushed.digest
		}
		created = true
		out.Latest = latestVersion == nil || newerVersion(p.Version, *latestVersion)
		if out.Latest {
			if _, err := tx.Exec(ctx, sqlSetLatestCatalog, catalogID, versionID); err != nil {
				return err
			}
			var oldLatest int64
			if latestID != nil {
				oldLatest = *latestID
			}
			rows, err := tx.Query(ctx, sqlSwapCurrent, oldLatest, versionID)
			if err != nil {
				return err
			}
			changed, err := pgx.CollectRows(rows, pgx.RowTo[int64])
			if err != nil {
				return err
			}
			if err := refreshFunctions(ctx, tx, changed); err != nil {
				return err
			}
		}
		if err := audit(ctx, tx, p.Publisher, "catalog.publish", p.Name+"@"+p.Version,
			map[string]any{"digest": digest, "functions": len(p.Catalog.Functions), "latest": out.Latest, "curated": entries.curatedNames(p.Catalog.Functions)}); err != nil {
			return err
		}
		return notify(ctx, tx, "catalog:"+p.Name)
	})
	if errors.Is(err, errRehearsed) {
		return CatalogVersion{}, false, err
	}
	if err != nil {
		return CatalogVersion{}, false, fmt.Errorf("publish catalog %q version %s: %w", p.Name, p.Version, err)
	}
	return out, created, nil
}

// newerVersion reports whether version a supersedes b as the latest: by semantic version when both
// are one (with or without a leading v), else by publishing order (a is the newer publish).
func newerVersion(a, b string) bool {
	va, vb := catalog.Semver(a), catalog.Semver(b)
	if va == "" || vb == "" {
		return true
	}
	return semver.Compare(va, vb) > 0
}

const sqlListCatalogs = `
SELECT c.name, p.name, c.created_at,
       (SELECT count(*) FROM catalog_versions cv WHERE cv.catalog_id = c.id),
       v.version, v.digest, v.published_at, length(v.content),
       (SELECT count(DISTINCT fv.position) FROM function_versions fv WHERE fv.catalog_version_id = v.id),
       coalesce(v.oci_reference, ''), coalesce(v.oci_digest, '')
FROM catalogs c
JOIN publishers p ON p.id = c.publisher_id
LEFT JOIN catalog_versions v ON v.id = c.latest_version_id
WHERE ($1 = '' OR c.name = $1)
ORDER BY c.name`

// ListCatalogs lists every catalog with its latest version.
func (s *Store) ListCatalogs(ctx context.Context) ([]CatalogSummary, error) {
	return s.catalogs(ctx, "")
}

// GetCatalog returns one catalog with its latest version, or ErrNotFound.
func (s *Store) GetCatalog(ctx context.Context, name string) (CatalogSummary, error) {
	cs, err := s.catalogs(ctx, name)
	if err != nil {
		return CatalogSummary{}, err
	}
	if len(cs) == 0 {
		return CatalogSummary{}, Errorf(ErrNotFound, "no catalog %q", name)
	}
	return cs[0], nil
}

func (s *Store) catalogs(ctx context.Context, name string) ([]CatalogSummary, error) {
	rows, err := s.pool.Query(ctx, sqlListCatalogs, name)
	if err != nil {
		return nil, fmt.Errorf("list catalogs: %w", err)
	}
	defer rows.Close()
	var out []CatalogSummary
	for rows.Next() {
		var (
			c         CatalogSummary
			version   *string
			digest    *string
			published *time.Time
			size      *int
			fns       int
			ociRef    string
			ociDigest string
		)
		if err := rows.Scan(&c.Name, &c.Publisher, &c.CreatedAt, &c.Versions, &version, &digest, &published, &size, &fns, &ociRef, &ociDigest); err != nil {
			return nil, fmt.Errorf("list catalogs: %w", err)
		}
		if version != nil {
			c.Latest = &CatalogVersion{Catalog: c.Name, Version: *version, Digest: *digest, Publisher: c.Publisher, PublishedAt: *published,
				Size: *size, Latest: true, Functions: fns, OCIReference: ociRef, OCIDigest: ociDigest}
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list catalogs: %w", err)
	}
	return out, nil
}

const sqlListCatalogVersions = `
SELECT c.name, v.version, v.digest, p.name, v.published_at, length(v.content), v.id = c.latest_version_id,
       (SELECT count(DISTINCT fv.position) FROM function_versions fv WHERE fv.catalog_version_id = v.id),
       coalesce(v.oci_reference, ''), coalesce(v.oci_digest, ''), ''
FROM catalog_versions v
JOIN catalogs c ON c.id = v.catalog_id
JOIN publishers p ON p.id = v.publisher_id
WHERE c.name = $1
ORDER BY v.id DESC`

// ListCatalogVersions lists the versions of a catalog, newest publish first, or ErrNotFound.
func (s *Store) ListCatalogVersions(ctx context.Context, name string) ([]CatalogVersion, error) {
	rows, err := s.pool.Query(ctx, sqlListCatalogVersions, name)
	if err != nil {
		return nil, fmt.Errorf("list versions of catalog %q: %w", name, err)
	}
	versions, err := pgx.CollectRows(rows, pgx.RowToStructByPos[CatalogVersion])
	if err != nil {
		return nil, fmt.Errorf("list versions of catalog %q: %w", name, err)
	}
	if len(versions) == 0 {
		return nil, Errorf(ErrNotFound, "no catalog %q", name)
	}
	return versions, nil
}

const (
	sqlCatalogContent = `
SELECT v.version, v.content, v.digest
FROM catalog_versions v JOIN catalogs c ON c.id = v.catalog_id
WHERE c.name = $1 AND v.version = $2`
	sqlLatestCatalogContent = `
SELECT v.version, v.content, v.digest
FROM catalogs c JOIN catalog_versions v ON v.id = c.latest_version_id
WHERE c.name = $1`
)

// CatalogContent returns the bytes of a catalog version as published; version "" is the latest.
func (s *Store) CatalogContent(ctx context.Context, name, version string) (Content, error) {
	c := Content{Name: name}
	var row pgx.Row
	if version == "" {
		row = s.pool.QueryRow(ctx, sqlLatestCatalogContent, name)
	} else {
		row = s.pool.QueryRow(ctx, sqlCatalogContent, name, version)
	}
	err := row.Scan(&c.Version, &c.Bytes, &c.Digest)
	if errors.Is(err, pgx.ErrNoRows) {
		if version == "" {
			return Content{}, Errorf(ErrNotFound, "no catalog %q", name)
		}
		return Content{}, Errorf(ErrNotFound, "catalog %q has no version %s", name, version)
	}
	if err != nil {
		return Content{}, fmt.Errorf("read catalog %q: %w", name, err)
	}
	return c, nil
}
