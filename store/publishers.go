package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Publisher is a publisher and how much it has published.
type Publisher struct {
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"createdAt"`
	// Functions counts the publisher's functions that a current catalog version or definition lists.
	Functions int `json:"functions"`
	Catalogs  int `json:"catalogs"`
}

const sqlPublisher = `
SELECT p.name, p.created_at,
       (SELECT count(*) FROM functions f WHERE f.publisher_id = p.id AND cardinality(f.versions) > 0),
       (SELECT count(*) FROM catalogs c WHERE c.publisher_id = p.id)
FROM publishers p
WHERE p.name = $1`

// GetPublisher returns a publisher with the number of its functions and catalogs, or ErrNotFound.
func (s *Store) GetPublisher(ctx context.Context, name string) (Publisher, error) {
	var p Publisher
	err := s.pool.QueryRow(ctx, sqlPublisher, name).Scan(&p.Name, &p.CreatedAt, &p.Functions, &p.Catalogs)
	if errors.Is(err, pgx.ErrNoRows) {
		return Publisher{}, Errorf(ErrNotFound, "no publisher %q", name)
	}
	if err != nil {
		return Publisher{}, fmt.Errorf("get publisher %q: %w", name, err)
	}
	return p, nil
}

// The functions table keeps the owner's name beside its id (and indexes it), so this reads one table.
const sqlPublisherFunctions = `
SELECT f.fn_group, f.kind, f.publisher, f.description, f.tags, f.runtimes, f.versions, f.catalogs, 0::real
FROM functions f
WHERE f.publisher = $1 AND cardinality(f.versions) > 0
ORDER BY f.fn_group, f.kind
LIMIT $2`

// PublisherFunctions returns up to limit (at most MaxSearchLimit) of the publisher's current
// functions, by group and kind. An unknown publisher has none: GetPublisher tells it apart.
func (s *Store) PublisherFunctions(ctx context.Context, name string, limit int) ([]FunctionSummary, error) {
	if limit <= 0 || limit > MaxSearchLimit {
		limit = MaxSearchLimit
	}
	rows, err := s.pool.Query(ctx, sqlPublisherFunctions, name, limit)
	if err != nil {
		return nil, fmt.Errorf("list functions of publisher %q: %w", name, err)
	}
	fns, err := pgx.CollectRows(rows, pgx.RowToStructByPos[FunctionSummary])
	if err != nil {
		return nil, fmt.Errorf("list functions of publisher %q: %w", name, err)
	}
	return fns, nil
}

const sqlPublisherCatalogs = `
SELECT c.name, c.created_at,
       (SELECT count(*) FROM catalog_versions cv WHERE cv.catalog_id = c.id),
       v.version, v.digest, v.published_at, length(v.content),
       (SELECT count(DISTINCT fv.position) FROM function_versions fv WHERE fv.catalog_version_id = v.id)
FROM catalogs c
JOIN publishers p ON p.id = c.publisher_id
LEFT JOIN catalog_versions v ON v.id = c.latest_version_id
WHERE p.name = $1
ORDER BY c.name`

// publisherCatalogRow is one row of sqlPublisherCatalogs; the latest version's columns are null
// for a catalog whose first publish has not committed.
type publisherCatalogRow struct {
	Name        string
	CreatedAt   time.Time
	Versions    int
	Version     *string
	Digest      *string
	PublishedAt *time.Time
	Size        *int
	Functions   int
}

// PublisherCatalogs lists the catalogs a publisher owns, by name, each with its latest version.
func (s *Store) PublisherCatalogs(ctx context.Context, name string) ([]CatalogSummary, error) {
	rows, err := s.pool.Query(ctx, sqlPublisherCatalogs, name)
	if err != nil {
		return nil, fmt.Errorf("list catalogs of publisher %q: %w", name, err)
	}
	found, err := pgx.CollectRows(rows, pgx.RowToStructByPos[publisherCatalogRow])
	if err != nil {
		return nil, fmt.Errorf("list catalogs of publisher %q: %w", name, err)
	}
	out := make([]CatalogSummary, 0, len(found))
	for _, r := range found {
		c := CatalogSummary{Name: r.Name, Publisher: name, CreatedAt: r.CreatedAt, Versions: r.Versions}
		if r.Version != nil {
			c.Latest = &CatalogVersion{Catalog: r.Name, Version: *r.Version, Digest: *r.Digest, Publisher: name,
				PublishedAt: *r.PublishedAt, Size: *r.Size, Latest: true, Functions: r.Functions}
		}
		out = append(out, c)
	}
	return out, nil
}
