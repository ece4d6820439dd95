package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/krm-catalog/krm-catalog/identity"
)

// FunctionVersion is one version of a function as one source (catalog version or definition) lists it.
type FunctionVersion struct {
	Group       string         `json:"group"`
	Kind        string         `json:"kind"`
	Version     string         `json:"version"`
	APIVersion  string         `json:"apiVersion"`
	Publisher   string         `json:"publisher"`
	Description string         `json:"description"`
	Home        string         `json:"home,omitempty"`
	Maintainers []string       `json:"maintainers,omitempty"`
	Tags        []string       `json:"tags,omitempty"`
	Runtimes    []string       `json:"runtimes"`
	Image       string         `json:"image,omitempty"`
	ImageDigest string         `json:"imageDigest,omitempty"`
	Spec        map[string]any `json:"spec"`
	Source      Source         `json:"source"`
	// Signature is verified, signed or unsigned for a version whose artifacts are in OCI
	// registries; the server fills it in.
	Signature string `json:"signature,omitempty"`
	// SignedBy names who made the signature that verified: a registered key or identity.
	SignedBy *identity.Signer `json:"signedBy,omitempty"`
	// Provenance is what a verified SLSA provenance attestation of the version's artifact says
	// of its build; SBOMs are the SBOMs attached to it. The server fills them in.
	Provenance *identity.Provenance `json:"provenance,omitempty"`
	SBOMs      []identity.SBOM      `json:"sboms,omitempty"`
}

// Source is where a function version was published.
type Source struct {
	Catalog        string `json:"catalog,omitempty"`
	CatalogVersion string `json:"catalogVersion,omitempty"`
	Definition     bool   `json:"definition,omitempty"`
	// CuratedBy is the catalog's publisher when the catalog lists the function by reference: a
	// copy of what the function's publisher published, made by another publisher.
	CuratedBy   string    `json:"curatedBy,omitempty"`
	Digest      string    `json:"digest"`
	PublishedAt time.Time `json:"publishedAt"`
}

// FunctionDetail is a function with every current version.
type FunctionDetail struct {
	FunctionSummary
	Home        string            `json:"home,omitempty"`
	Maintainers []string          `json:"maintainers,omitempty"`
	Entries     []FunctionVersion `json:"entries"`
}

const sqlFunctionVersions = `
SELECT f.fn_group, f.kind, fv.version, f.publisher, fv.runtimes, coalesce(fv.image, ''), coalesce(fv.image_digest, ''), fv.spec,
       coalesce(c.name, ''), coalesce(cv.version, ''), fv.definition_revision_id IS NOT NULL,
       coalesce(cv.digest, dr.digest), coalesce(cv.published_at, dr.published_at),
       CASE WHEN fv.curated_from IS NOT NULL THEN cp.name ELSE '' END
FROM function_versions fv
JOIN functions f ON f.id = fv.function_id
LEFT JOIN catalog_versions cv ON cv.id = fv.catalog_version_id
LEFT JOIN catalogs c ON c.id = cv.catalog_id
LEFT JOIN publishers cp ON cp.id = c.publisher_id
LEFT JOIN definition_revisions dr ON dr.id = fv.definition_revision_id
WHERE f.fn_group = $1 AND f.kind = $2 AND fv.current AND ($3 = '' OR fv.version = $3)
ORDER BY fv.definition_revision_id IS NULL, fv.curated_from IS NOT NULL, c.name, fv.position, fv.id`

func (s *Store) functionVersions(ctx context.Context, group, kind, version string) ([]FunctionVersion, error) {
	rows, err := s.pool.Query(ctx, sqlFunctionVersions, group, kind, version)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (FunctionVersion, error) {
		var (
			fv   FunctionVersion
			spec versionSpec
		)
		err := r.Scan(&fv.Group, &fv.Kind, &fv.Version, &fv.Publisher, &fv.Runtimes, &fv.Image, &fv.ImageDigest, &spec,
			&fv.Source.Catalog, &fv.Source.CatalogVersion, &fv.Source.Definition, &fv.Source.Digest, &fv.Source.PublishedAt, &fv.Source.CuratedBy)
		fv.APIVersion = fv.Group + "/" + fv.Version
		fv.Description, fv.Home, fv.Maintainers, fv.Tags = spec.Meta.Description, spec.Meta.Home, spec.Meta.Maintainers, spec.Meta.Tags
		fv.Spec = spec.Version
		return fv, err
	})
}

const sqlFunctionDigest = `
SELECT f.updated_at::text || ' ' || coalesce(string_agg(fv.id::text, ',' ORDER BY fv.id), '')
FROM functions f LEFT JOIN function_versions fv ON fv.function_id = f.id AND fv.current
WHERE f.fn_group = $1 AND f.kind = $2 AND cardinality(f.versions) > 0
GROUP BY f.id`

// FunctionDigest says which function GetFunction would return, without reading its entries: a
// digest of the function's row and of its current entries, which changes when either does. A
// cache keyed by it needs no other invalidation.
func (s *Store) FunctionDigest(ctx context.Context, group, kind string) (string, error) {
	var state string
	err := s.pool.QueryRow(ctx, sqlFunctionDigest, group, kind).Scan(&state)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", Errorf(ErrNotFound, "no function %s/%s", group, kind)
	}
	if err != nil {
		return "", fmt.Errorf("get function %s/%s: %w", group, kind, err)
	}
	return Digest([]byte(group + "/" + kind + " " + state)), nil
}

const sqlFunction = `
SELECT fn_group, kind, publisher, description, tags, runtimes, versions, catalogs
FROM functions WHERE fn_group = $1 AND kind = $2 AND cardinality(versions) > 0`

// GetFunction returns a function and its current versions from every source, or ErrNotFound.
func (s *Store) GetFunction(ctx context.Context, group, kind string) (FunctionDetail, error) {
	var d FunctionDetail
	err := s.pool.QueryRow(ctx, sqlFunction, group, kind).Scan(&d.Group, &d.Kind, &d.Publisher, &d.Description, &d.Tags, &d.Runtimes, &d.Versions, &d.Catalogs)
	if errors.Is(err, pgx.ErrNoRows) {
		return FunctionDetail{}, Errorf(ErrNotFound, "no function %s/%s", group, kind)
	}
	if err != nil {
		return FunctionDetail{}, fmt.Errorf("get function %s/%s: %w", group, kind, err)
	}
	d.Entries, err = s.functionVersions(ctx, group, kind, "")
	if err != nil {
		return FunctionDetail{}, fmt.Errorf("get function %s/%s: %w", group, kind, err)
	}
	if len(d.Entries) > 0 {
		d.Home, d.Maintainers = d.Entries[0].Home, d.Entries[0].Maintainers
	}
	return d, nil
}

// GetFunctionVersion returns the current entries of one version of a function (a version listed by
// several catalogs has several), or ErrNotFound.
func (s *Store) GetFunctionVersion(ctx context.Context, group, kind, version string) ([]FunctionVersion, error) {
	fvs, err := s.functionVersions(ctx, group, kind, version)
	if err != nil {
		return nil, fmt.Errorf("get function %s/%s version %s: %w", group, kind, version, err)
	}
	if len(fvs) == 0 {
		return nil, Errorf(ErrNotFound, "function %s/%s has no version %s", group, kind, version)
	}
	return fvs, nil
}

// Resolution is the runtime found for an apiVersion and kind.
type Resolution struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	Function   FunctionVersion `json:"function"`
	Runtime    any             `json:"runtime"`
	// Searched lists the catalogs searched, in order.
	Searched []string `json:"searched"`
}

// ErrNotResolved is returned when no searched source has the function; the error names them.

// Resolve finds the runtime for apiVersion/kind. With catalogs, their latest versions are searched
// in the order given and the first entry that matches wins, also inside one catalog. Without, the
// published definition comes first, then the function's publisher's catalogs by name, then those
// that list it by reference.
func (s *Store) Resolve(ctx context.Context, apiVersion, kind string, catalogs []string) (Resolution, error) {
	res := Resolution{APIVersion: apiVersion, Kind: kind, Searched: catalogs}
	group, version, ok := strings.Cut(apiVersion, "/")
	if !ok || group == "" || version == "" || kind == "" {
		return res, Errorf(ErrNotFound, "apiVersion %q must be group/version, and kind must be given", apiVersion)
	}
	fvs, err := s.functionVersions(ctx, group, kind, version)
	if err != nil {
		return res, fmt.Errorf("resolve %s %s: %w", apiVersion, kind, err)
	}
	pick := func(fv FunctionVersion) Resolution {
		res.Function, res.Runtime = fv, fv.Spec["runtime"]
		return res
	}
	if len(catalogs) == 0 {
		res.Searched = []string{"every published catalog and definition"}
		if len(fvs) > 0 {
			return pick(fvs[0]), nil
		}
	}
	for _, name := range catalogs {
		for _, fv := range fvs {
			if fv.Source.Catalog == name {
				return pick(fv), nil
			}
		}
	}
	return res, Errorf(ErrNotFound, "no function serves apiVersion %s kind %s; searched %s", apiVersion, kind, strings.Join(res.Searched, ", "))
}
