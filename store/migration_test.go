package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/jackc/pgx/v5"

	"github.com/krm-catalog/krm-catalog/migrations"
	"github.com/krm-catalog/krm-catalog/store"
	"github.com/krm-catalog/krm-catalog/store/storetest"
)

// TestMigration0006CarriesOwnersOver builds a database as release 0004 left it, with today's
// per-kind owners written the way that release wrote them, migrates it, and checks that every
// group went to its one publisher, or was reported as a conflict, and that unproven keys stopped
// counting.
func TestMigration0006CarriesOwnersOver(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := storetest.NewDatabase(t)
	if err := migrations.To(ctx, url, 4); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	// what CreateToken, the claim of functions and AddKey of release 0004 inserted
	const old = `
INSERT INTO publishers (name) VALUES ('example.com'), ('other.org'), ('acme.example'), ('Team X'), ('example.org'), ('x.example'), ('y.example');
INSERT INTO functions (fn_group, kind, publisher_id, publisher)
SELECT g, k, p.id, p.name FROM (VALUES
    ('fn.example.com', 'SetNamespace', 'example.com'),      -- covered by its own name
    ('fn.example.com', 'SetNamespaceV2', 'other.org'),      -- a squatter: a conflict
    ('fn.shared.io', 'Lint', 'acme.example'),               -- nobody's name: granted to its one publisher
    ('fn.shared.io', 'Format', 'acme.example'),
    ('tools.internal', 'Check', 'Team X'),                   -- a name that is no DNS name still gets its grant
    ('fn.example.org', 'Thing', 'other.org'),               -- one publisher, but example.org's name covers it
    ('fn.common.dev', 'A', 'x.example'),                    -- two publishers, nobody's name
    ('fn.common.dev', 'B', 'y.example')
) AS t (g, k, owner) JOIN publishers p ON p.name = t.owner;
INSERT INTO publisher_keys (publisher_id, fingerprint, pem) SELECT id, 'ab12', 'other.org''s key' FROM publishers WHERE name = 'example.com';
INSERT INTO signature_checks (subject, publisher_id, status) SELECT s, id, st FROM publishers, (VALUES ('r/a@sha256:0a', 'verified'), ('r/b@sha256:0b', 'unsigned')) AS t (s, st) WHERE name = 'example.com';
`
	if _, err := conn.Exec(ctx, old); err != nil {
		t.Fatal(err)
	}
	if err := conn.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := migrations.Up(ctx, url); err != nil {
		t.Fatal(err)
	}

	s, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	grants, err := s.ListGrants(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	wantGrants := []store.Grant{
		{Group: "fn.shared.io", Publisher: "acme.example", Reason: "migration 0006: it registered every function of the group"},
		{Group: "tools.internal", Publisher: "Team X", Reason: "migration 0006: it registered every function of the group"},
	}
	if diff := cmp.Diff(wantGrants, grants, cmpopts.IgnoreFields(store.Grant{}, "GrantedAt")); diff != "" {
		t.Errorf("grants (-want +got):\n%s", diff)
	}
	conflicts, err := s.GroupConflicts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantConflicts := []store.GroupConflict{
		{Group: "fn.common.dev", Functions: map[string][]string{"x.example": {"A"}, "y.example": {"B"}}},
		{Group: "fn.example.com", NameOwner: "example.com", Functions: map[string][]string{"example.com": {"SetNamespace"}, "other.org": {"SetNamespaceV2"}}},
		{Group: "fn.example.org", NameOwner: "example.org", Functions: map[string][]string{"other.org": {"Thing"}}},
	}
	if diff := cmp.Diff(wantConflicts, conflicts, cmpopts.IgnoreFields(store.GroupConflict{}, "DetectedAt")); diff != "" {
		t.Errorf("conflicts (-want +got):\n%s", diff)
	}

	// the squatter can add nothing more to example.com's group; the grantee can add to its group
	mustToken(t, s, "other.org")
	if err := publishIn(t, s, "other.org", "more", "fn.example.com", 1); !errors.Is(err, store.ErrForbidden) || !strings.Contains(err.Error(), `belongs to publisher "example.com"`) {
		t.Errorf("other.org adding to fn.example.com after the migration: %v", err)
	}
	if err := publishIn(t, s, "acme.example", "lint", "fn.shared.io", 2); err != nil {
		t.Errorf("acme.example in its granted group: %v", err)
	}
	// an admin resolves a conflict with a grant
	if _, _, err := s.GrantGroup(ctx, "fn.common.dev", "x.example", "x maintains it"); err != nil {
		t.Fatal(err)
	}
	if conflicts, _ := s.GroupConflicts(ctx); len(conflicts) != 2 {
		t.Errorf("after granting fn.common.dev, %d conflicts remain, want 2", len(conflicts))
	}

	// the key registered without proof no longer counts, but is kept; what it verified is redone
	if keys, err := s.ListKeys(ctx, "example.com"); err != nil || len(keys) != 0 {
		t.Errorf("active keys after the migration: %+v %v", keys, err)
	}
	history, err := s.KeyHistory(ctx, "example.com")
	if err != nil || len(history) != 1 || history[0].RemovedAt == nil || !strings.Contains(history[0].RemovedReason, "without proof") {
		t.Errorf("key history after the migration: %+v %v", history, err)
	}
	checks, err := s.SignatureChecks(ctx, "example.com", []string{"r/a@sha256:0a", "r/b@sha256:0b"}, 1<<62)
	if err != nil || len(checks) != 1 || checks["r/b@sha256:0b"].Status != "unsigned" {
		t.Errorf("signature checks after the migration: %+v %v", checks, err)
	}

	// and back: 0006 reverts cleanly
	if err := migrations.To(ctx, url, 4); err != nil {
		t.Errorf("migrating down from 0006: %v", err)
	}
}

// TestMigration0014RoundTrips: keyless identities and the signer columns go away with 0014's down
// migration, keeping key-verified checks, and come back with up.
func TestMigration0014RoundTrips(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := storetest.NewDatabase(t)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	const rows = `
INSERT INTO publishers (name) VALUES ('example.com');
INSERT INTO publisher_identities (publisher_id, issuer, subject, proven_issuer, proven_subject)
SELECT id, 'https://issuer.example', 'https://h/o/*', 'https://issuer.example', 'https://h/o/r' FROM publishers;
INSERT INTO signature_checks (subject, publisher_id, status, key_fingerprint, signer_issuer, signer_subject, attestations)
SELECT 'r/a@sha256:0a', id, 'verified', 'ab12', NULL, NULL, '{"sboms": []}' FROM publishers;`
	if _, err := conn.Exec(ctx, rows); err != nil {
		t.Fatal(err)
	}
	tableExists := func() bool {
		t.Helper()
		var ok bool
		if err := conn.QueryRow(ctx, `SELECT to_regclass('publisher_identities') IS NOT NULL`).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	for _, step := range []struct {
		name  string
		apply func() error
		want  bool
	}{
		{"down to 0013", func() error { return migrations.To(ctx, url, 13) }, false},
		{"up again", func() error { return migrations.Up(ctx, url) }, true},
	} {
		if err := step.apply(); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if got := tableExists(); got != step.want {
			t.Errorf("%s: publisher_identities exists %v, want %v", step.name, got, step.want)
		}
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM signature_checks WHERE key_fingerprint = 'ab12'`).Scan(&n); err != nil || n != 1 {
			t.Errorf("%s: the key's check: %d rows, %v", step.name, n, err)
		}
	}
}
