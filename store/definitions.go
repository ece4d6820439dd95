package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"go.yaml.in/yaml/v3"

	"github.com/krm-catalog/krm-catalog/catalog"
	"github.com/krm-catalog/krm-catalog/schemas"
)

// DefinitionRevision is one published revision of a standalone KRMFunctionDefinition.
type DefinitionRevision struct {
	Group       string    `json:"group"`
	Kind        string    `json:"kind"`
	Digest      string    `json:"digest"`
	Publisher   string    `json:"publisher"`
	PublishedAt time.Time `json:"publishedAt"`
	Versions    []string  `json:"versions"`
	// Added lists the versions this revision added.
	Added []string `json:"added"`
}

// PublishDefinitionParams is a definition document to publish.
type PublishDefinitionParams struct {
	Publisher  string
	Content    []byte
	Document   *catalog.Document
	Definition *catalog.Definition
}

const (
	sqlLockFunction     = `SELECT id FROM functions WHERE fn_group = $1 AND kind = $2 FOR NO KEY UPDATE`
	sqlLatestRevision   = `SELECT id, digest, published_at FROM definition_revisions WHERE function_id = $1 ORDER BY id DESC LIMIT 1`
	sqlRevisionVersions = `SELECT version, spec FROM function_versions WHERE definition_revision_id = $1 ORDER BY id`
	sqlInsertRevision   = `
INSERT INTO definition_revisions (function_id, content, digest, publisher_id)
VALUES ($1, $2, $3, $4) RETURNING id, published_at`
	sqlRetireRevision = `UPDATE function_versions SET current = false WHERE definition_revision_id = $1`
)

// PublishDefinition stores a new revision of a function's definition. Published versions are
// immutable: a revision must keep every version already published, unchanged (else ErrConflict),
// and may add new ones. The same bytes as the latest revision return it with created false.
func (s *Store) PublishDefinition(ctx context.Context, p PublishDefinitionParams) (DefinitionRevision, bool, error) {
	f := p.Definition.Function
	digest := Digest(p.Content)
	out := DefinitionRevision{Group: f.Group, Kind: f.Kind, Digest: digest, Publisher: p.Publisher, Added: []string{}}
	for _, v := range f.Versions {
		out.Versions = append(out.Versions, v.Name)
	}
	created := false
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		pubID, err := publisherID(ctx, tx, p.Publisher)
		if err != nil {
			return err
		}
		ids, err := claimFunctions(ctx, tx, pubID, p.Publisher, []catalog.Function{f})
		if err != nil {
			return err
		}
		fnID := ids[functionKey{f.Group, f.Kind}]
		if _, err := tx.Exec(ctx, sqlLockFunction, f.Group, f.Kind); err != nil {
			return err
		}
		var (
			prevID     int64
			prevDigest string
		)
		err = tx.QueryRow(ctx, sqlLatestRevision, fnID).Scan(&prevID, &prevDigest, &out.PublishedAt)
		switch {
		case err == nil && prevDigest == digest:
			return nil
		case err == nil:
			added, err := checkImmutable(ctx, tx, prevID, p.Document, f)
			if err != nil {
				return err
			}
			out.Added = added
		case errors.Is(err, pgx.ErrNoRows):
			out.Added = slices.Clone(out.Versions)
		default:
			return err
		}
		var revID int64
		if err := tx.QueryRow(ctx, sqlInsertRevision, fnID, p.Content, digest, pubID).Scan(&revID, &out.PublishedAt); err != nil {
			return err
		}
		if prevID != 0 {
			if _, err := tx.Exec(ctx, sqlRetireRevision, prevID); err != nil {
				return err
			}
		}
		if err := insertFunctionVersions(ctx, tx, ids, p.Document, []catalog.Function{f}, source{definitionRevisionID: revID}, nil); err != nil {
			return err
		}
		if err := refreshFunctions(ctx, tx, []int64{fnID}); err != nil {
			return err
		}
		created = true
		if err := audit(ctx, tx, p.Publisher, "definition.publish", f.ID(),
			map[string]any{"digest": digest, "versions": out.Versions, "added": out.Added}); err != nil {
			return err
		}
		return notify(ctx, tx, "function:"+f.ID())
	})
	if err != nil {
		return DefinitionRevision{}, false, fmt.Errorf("publish definition %s: %w", f.ID(), err)
	}
	return out, created, nil
}

// checkImmutable compares a new definition with the previous revision's versions and returns the
// versions it adds.
func checkImmutable(ctx context.Context, tx pgx.Tx, prevID int64, doc *catalog.Document, f catalog.Function) ([]string, error) {
	rows, err := tx.Query(ctx, sqlRevisionVersions, prevID)
	if err != nil {
		return nil, err
	}
	type stored struct {
		version string
		spec    versionSpec
	}
	prev, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (stored, error) {
		var s stored
		err := r.Scan(&s.version, &s.spec)
		return s, err
	})
	if err != nil {
		return nil, err
	}
	next := map[string]map[string]any{}
	for j, v := range f.Versions {
		raw, _ := schemas.Lookup(doc.Value, fmt.Sprintf("%s/versions/%d", f.Pointer, j)).(map[string]any)
		next[v.Name] = raw
	}
	known := map[string]bool{}
	for _, old := range prev {
		known[old.version] = true
		now, ok := next[old.version]
		if !ok {
			return nil, Errorf(ErrConflict, "version %s was published and cannot be removed", old.version)
		}
		if !sameJSON(old.spec.Version, now) {
			return nil, Errorf(ErrConflict, "version %s is already published with other content; publish it as a new version", old.version)
		}
	}
	added := []string{}
	for _, v := range f.Versions {
		if !known[v.Name] {
			added = append(added, v.Name)
		}
	}
	return added, nil
}

// sameJSON compares two JSON-compatible values after a round trip through JSON, which is how the
// stored one was read back (numbers become float64).
func sameJSON(a, b map[string]any) bool {
	norm := func(v map[string]any) any {
		data, err := json.Marshal(v)
		if err != nil {
			return nil
		}
		var out any
		if err := json.Unmarshal(data, &out); err != nil {
			return nil
		}
		return out
	}
	return reflect.DeepEqual(norm(a), norm(b))
}

const (
	sqlDefinitionContent = `
SELECT r.content, r.digest
FROM definition_revisions r JOIN functions f ON f.id = r.function_id
WHERE f.fn_group = $1 AND f.kind = $2
ORDER BY r.id DESC LIMIT 1`
	sqlCurrentSpecs = `
SELECT fv.spec
FROM function_versions fv JOIN functions f ON f.id = fv.function_id
LEFT JOIN catalog_versions cv ON cv.id = fv.catalog_version_id
LEFT JOIN catalogs c ON c.id = cv.catalog_id
WHERE f.fn_group = $1 AND f.kind = $2 AND fv.current
ORDER BY c.name NULLS FIRST, fv.id`
)

const (
	sqlDefinitionDigest = `
SELECT r.digest
FROM definition_revisions r JOIN functions f ON f.id = r.function_id
WHERE f.fn_group = $1 AND f.kind = $2
ORDER BY r.id DESC LIMIT 1`
	sqlCurrentSources = `
SELECT string_agg(fv.id::text, ',' ORDER BY fv.id)
FROM function_versions fv JOIN functions f ON f.id = fv.function_id
WHERE f.fn_group = $1 AND f.kind = $2 AND fv.current`
)

// DefinitionDigest says which definition.yaml DefinitionContent would return, without reading or
// generating it: the digest of the latest published definition, or, for one generated from the
// catalogs that list the function (derived), a digest of the entries it is generated from, which
// changes when they do. A cache keyed by it needs no other invalidation.
func (s *Store) DefinitionDigest(ctx context.Context, group, kind string) (digest string, derived bool, err error) {
	err = s.pool.QueryRow(ctx, sqlDefinitionDigest, group, kind).Scan(&digest)
	if err == nil {
		return digest, false, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return "", false, fmt.Errorf("read definition %s/%s: %w", group, kind, err)
	}
	var ids *string
	if err := s.pool.QueryRow(ctx, sqlCurrentSources, group, kind).Scan(&ids); err != nil {
		return "", false, fmt.Errorf("read definition %s/%s: %w", group, kind, err)
	}
	if ids == nil {
		return "", false, Errorf(ErrNotFound, "no function %s/%s", group, kind)
	}
	return Digest([]byte("derived " + group + "/" + kind + " " + *ids)), true, nil
}

// DefinitionContent returns the definition of a function: the latest published definition's bytes,
// or, for a function that only catalogs list, a KRMFunctionDefinition generated from its current
// catalog entries (Content.Derived).
func (s *Store) DefinitionContent(ctx context.Context, group, kind string) (Content, error) {
	c := Content{Name: group + "/" + kind}
	err := s.pool.QueryRow(ctx, sqlDefinitionContent, group, kind).Scan(&c.Bytes, &c.Digest)
	if err == nil {
		return c, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return Content{}, fmt.Errorf("read definition %s/%s: %w", group, kind, err)
	}
	rows, err := s.pool.Query(ctx, sqlCurrentSpecs, group, kind)
	if err != nil {
		return Content{}, fmt.Errorf("read definition %s/%s: %w", group, kind, err)
	}
	specs, err := pgx.CollectRows(rows, pgx.RowTo[versionSpec])
	if err != nil {
		return Content{}, fmt.Errorf("read definition %s/%s: %w", group, kind, err)
	}
	if len(specs) == 0 {
		return Content{}, Errorf(ErrNotFound, "no function %s/%s", group, kind)
	}
	c.Bytes, err = derivedDefinition(group, kind, specs)
	if err != nil {
		return Content{}, fmt.Errorf("derive definition %s/%s: %w", group, kind, err)
	}
	c.Digest, c.Derived = Digest(c.Bytes), true
	return c, nil
}

// MaxDerivedBytes bounds the definition.yaml the service generates for a function that only
// catalogs list, from its current entries: a publish that would make it larger is refused
// (ErrTooLarge). Generated YAML can be many times its source (a nested list written [[0],[0]]
// becomes lines of dashes, each indented), so the bound is checked on the generated form itself.
const MaxDerivedBytes = 4 << 20

// derivedDefinition writes a KRMFunctionDefinition from catalog entries; the first entry of each
// version wins, as in resolution.
func derivedDefinition(group, kind string, specs []versionSpec) ([]byte, error) {
	var b bytes.Buffer
	if err := encodeDerived(&b, group, kind, specs); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// derivedSize is the size of derivedDefinition's document, found without keeping it; past limit
// it stops, and reports false.
func derivedSize(group, kind string, specs []versionSpec, limit int) (int, bool) {
	meta, versions := derivedParts(specs)
	return encodedSize(group, kind, meta, versions, limit)
}

func encodedSize(group, kind string, meta functionMeta, versions []map[string]any, limit int) (int, bool) {
	w := &countingWriter{left: limit}
	if err := encodeDefinition(w, group, kind, meta, versions); err != nil {
		return limit + 1, false
	}
	return limit - w.left, true
}

// A generated definition is its header (what derivedHeaderSize counts: every field but the
// versions, written as "versions: []") and its versions, each an item of the list written the
// same wherever it stands (derivedItemSize): the size of one made of many sources is the sum of
// their parts, and its parts can be measured one source at a time, without holding them all.

// emptyList is what an empty versions list adds to "versions:" in the header.
const emptyList = len(" []")

// derivedHeaderSize is the size of a generated definition with no version.
func derivedHeaderSize(group, kind string, meta functionMeta) int {
	n, _ := encodedSize(group, kind, meta, nil, MaxDerivedBytes)
	return n
}

// derivedItemSize is the size one version adds to a generated definition; past limit it stops
// and reports false.
func derivedItemSize(version map[string]any, limit int) (int, bool) {
	header := derivedHeaderSize("g", "K", functionMeta{})
	with, ok := encodedSize("g", "K", functionMeta{}, []map[string]any{version}, limit+header)
	if !ok {
		return limit + 1, false
	}
	return with - header + emptyList, true
}

// derivedItemBound is more than derivedItemSize, found by a walk of the version, without writing
// it (yaml.v3 writes through reflection, as long as decoding the whole catalog again): a line a
// value, indented four spaces a level below the definition's own, a string in at most six bytes a
// byte (an escape) and each of its line breaks a line of its own.
func derivedItemBound(v any) int {
	return yamlBound(v, 3)
}

func yamlBound(v any, depth int) int {
	indent := 4*depth + 8
	switch x := v.(type) {
	case map[string]any:
		n := 8
		for k, c := range x {
			n += indent + stringBound(k, indent) + 2 + yamlBound(c, depth+1)
		}
		return n
	case []any:
		n := 8
		for _, c := range x {
			n += indent + 2 + yamlBound(c, depth+1)
		}
		return n
	case string:
		return stringBound(x, indent)
	case json.Number:
		return stringBound(string(x), indent)
	}
	return 40 // a number, a boolean, null
}

func stringBound(s string, indent int) int {
	return 8 + 6*len(s) + strings.Count(s, "\n")*(indent+8)
}

// derivedHeaderBound is more than derivedHeaderSize, found without writing the header: YAML
// writes a string in at most six bytes a byte (an escape), with its key and line around it.
func derivedHeaderBound(group, kind string, meta functionMeta) int {
	n := len(group) + len(kind) + len(meta.Description) + len(meta.Publisher) + len(meta.Home)
	for _, m := range meta.Maintainers {
		n += len(m) + 16
	}
	for _, t := range meta.Tags {
		n += len(t) + 16
	}
	return 1024 + 8*n
}

// countingWriter counts what is written to it, and fails a write past what it has left.
type countingWriter struct{ left int }

var errPastLimit = errors.New("past the limit")

func (w *countingWriter) Write(p []byte) (int, error) {
	if len(p) > w.left {
		w.left = -1
		return 0, errPastLimit
	}
	w.left -= len(p)
	return len(p), nil
}

func encodeDerived(w io.Writer, group, kind string, specs []versionSpec) error {
	meta, versions := derivedParts(specs)
	return encodeDefinition(w, group, kind, meta, versions)
}

// derivedParts are the metadata and the versions a generated definition takes from its sources:
// the first's metadata, the first entry of each version.
func derivedParts(specs []versionSpec) (functionMeta, []map[string]any) {
	meta := specs[0].Meta
	seen := map[string]bool{}
	var versions []map[string]any
	for _, s := range specs {
		name, _ := s.Version["name"].(string)
		if seen[name] {
			continue
		}
		seen[name] = true
		versions = append(versions, s.Version)
	}
	return meta, versions
}

func encodeDefinition(w io.Writer, group, kind string, meta functionMeta, versions []map[string]any) error {
	if versions == nil {
		versions = []map[string]any{}
	}
	spec := map[string]any{
		"group":       group,
		"names":       map[string]any{"kind": kind},
		"description": meta.Description,
		"publisher":   meta.Publisher,
		"versions":    versions,
	}
	if meta.Home != "" {
		spec["home"] = meta.Home
	}
	if len(meta.Maintainers) > 0 {
		spec["maintainers"] = meta.Maintainers
	}
	if len(meta.Tags) > 0 {
		spec["tags"] = meta.Tags
	}
	// map keys marshal sorted, which happens to be the conventional apiVersion, kind, spec order
	enc := yaml.NewEncoder(w)
	if err := enc.Encode(map[string]any{"apiVersion": catalog.APIVersion, "kind": catalog.KindDefinition, "spec": spec}); err != nil {
		return err
	}
	return enc.Close()
}
