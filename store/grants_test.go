package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/krm-catalog/krm-catalog/catalog/catalogtest"
	"github.com/krm-catalog/krm-catalog/store"
)

// publishIn publishes a catalog of n functions in group as publisher, under a catalog name of its own.
func publishIn(t *testing.T, s *store.Store, publisher, name, group string, n int) error {
	t.Helper()
	_, _, err := publish(t, s, publisher, name, "1.0.0", catalogtest.Catalog(catalogtest.Options{Name: name, Functions: n, Publisher: publisher, Group: group}))
	return err
}

func TestGroupOwnership(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t)
	for _, p := range []string{"example.com", "other.org", "fn.example.com"} {
		mustToken(t, s, p)
	}

	steps := []struct {
		name, publisher, catalog, group string
		grant, revoke                   string // a grant of this group to publisher (or revocation) before publishing
		wantErr                         string // "" publishes; else ErrForbidden with this text
	}{
		{name: "the publisher's name", publisher: "example.com", catalog: "a", group: "example.com"},
		{name: "under the name", publisher: "example.com", catalog: "b", group: "team.example.com"},
		{name: "a more specific publisher's name wins", publisher: "example.com", catalog: "c", group: "fn.example.com",
			wantErr: `group "fn.example.com" belongs to publisher "fn.example.com" (by its name)`},
		{name: "which owns it", publisher: "fn.example.com", catalog: "d", group: "x.fn.example.com"},
		{name: "another publisher's group", publisher: "other.org", catalog: "e", group: "new.example.com",
			wantErr: `group "new.example.com" belongs to publisher "example.com" (by its name)`},
		{name: "a group nobody owns", publisher: "other.org", catalog: "f", group: "fn.nobody.dev",
			wantErr: `group "fn.nobody.dev" has no owner`},
		{name: "granted", publisher: "other.org", catalog: "g", group: "fn.nobody.dev", grant: "fn.nobody.dev"},
		{name: "under a grant", publisher: "other.org", catalog: "h", group: "deep.fn.nobody.dev"},
		{name: "a grant under another's name", publisher: "other.org", catalog: "i", group: "shared.example.com", grant: "shared.example.com"},
		{name: "takes it from the name's owner", publisher: "example.com", catalog: "j", group: "shared.example.com",
			wantErr: `group "shared.example.com" belongs to publisher "other.org" (by grant)`},
		{name: "and what is under it", publisher: "example.com", catalog: "k", group: "x.shared.example.com",
			wantErr: `belongs to publisher "other.org" (by a grant of shared.example.com)`},
		{name: "revoked", publisher: "other.org", catalog: "l", group: "new.fn.nobody.dev", revoke: "fn.nobody.dev",
			wantErr: `group "new.fn.nobody.dev" has no owner`},
		{name: "but what it registered stays its own", publisher: "other.org", catalog: "m", group: "fn.nobody.dev"},
	}
	for _, st := range steps {
		if st.grant != "" {
			if _, _, err := s.GrantGroup(ctx, st.grant, st.publisher, "test"); err != nil {
				t.Fatalf("%s: grant: %v", st.name, err)
			}
		}
		if st.revoke != "" {
			if err := s.RevokeGroup(ctx, st.revoke, st.publisher); err != nil {
				t.Fatalf("%s: revoke: %v", st.name, err)
			}
		}
		// the generator's first kind: new to the group unless the publisher registered it there
		err := publishIn(t, s, st.publisher, st.catalog, st.group, 1)
		switch {
		case st.wantErr == "" && err != nil:
			t.Errorf("%s: %s publishing in %s: %v", st.name, st.publisher, st.group, err)
		case st.wantErr != "" && (!errors.Is(err, store.ErrForbidden) || !strings.Contains(err.Error(), st.wantErr)):
			t.Errorf("%s: %s publishing in %s: %v, want ErrForbidden with %q", st.name, st.publisher, st.group, err, st.wantErr)
		}
	}

	// a definition takes the same path
	def := `apiVersion: config.kubernetes.io/v1alpha1
kind: KRMFunctionDefinition
spec:
  group: new.example.com
  names: {kind: Intruder}
  description: Not theirs.
  publisher: other.org
  versions:
    - name: v1
      runtime: {container: {image: "registry.example.com/x@sha256:` + strings.Repeat("0", 64) + `"}}
`
	if _, _, err := publishDefinition(t, s, "other.org", def); !errors.Is(err, store.ErrForbidden) || !strings.Contains(err.Error(), `belongs to publisher "example.com"`) {
		t.Errorf("a definition in another's group: %v", err)
	}

	owner, err := s.GetGroupOwner(ctx, "x.shared.example.com")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(store.GroupOwner{Group: "x.shared.example.com", Owner: "other.org", Via: store.OwnedByGrant, Through: "shared.example.com"}, owner, cmpopts.IgnoreFields(store.GroupOwner{}, "GrantedAt")); diff != "" {
		t.Errorf("GetGroupOwner (-want +got):\n%s", diff)
	}
	if owner, err := s.GetGroupOwner(ctx, "fn.nobody.dev"); err != nil || owner.Owner != "" {
		t.Errorf("GetGroupOwner of a revoked group = %+v %v", owner, err)
	}
	grants, err := s.ListGrants(ctx, "")
	if err != nil || len(grants) != 1 || grants[0].Group != "shared.example.com" || grants[0].Publisher != "other.org" {
		t.Errorf("ListGrants = %+v %v", grants, err)
	}
	want := []string{"group.revoke other.org group fn.nobody.dev", "group.grant other.org group shared.example.com", "group.grant other.org group fn.nobody.dev"}
	if diff := cmp.Diff(want, auditLog(t, s, "group.")); diff != "" {
		t.Errorf("audit log (-want +got):\n%s", diff)
	}
}

func TestGrantRules(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t)
	mustToken(t, s, "example.com")
	mustToken(t, s, "other.org")
	g, created, err := s.GrantGroup(ctx, "team.example.com", "other.org", "team moved")
	if err != nil || !created || g.Overrides != "example.com" {
		t.Fatalf("GrantGroup = %+v %v %v, want created, overriding example.com", g, created, err)
	}
	if _, created, err := s.GrantGroup(ctx, "team.example.com", "other.org", "again"); err != nil || created {
		t.Errorf("the same grant again: created %v, %v", created, err)
	}
	for _, tc := range []struct {
		name, group, publisher string
		want                   error
	}{
		{"granted to another", "team.example.com", "example.com", store.ErrConflict},
		{"not a group", "Team.example.com", "other.org", store.ErrInvalid},
		{"an unknown publisher", "fn.nobody.dev", "nobody.example", store.ErrNotFound},
	} {
		if _, _, err := s.GrantGroup(ctx, tc.group, tc.publisher, ""); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	if err := s.RevokeGroup(ctx, "team.example.com", "example.com"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("revoking another's grant: %v", err)
	}
	if err := s.RevokeGroup(ctx, "team.example.com", "other.org"); err != nil {
		t.Fatal(err)
	}
	if err := s.RevokeGroup(ctx, "team.example.com", "other.org"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("revoking twice: %v", err)
	}
}

func TestTokenNamesAreDNSNames(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	for _, name := range []string{"example.com ", "Example.com", "", "com", "example_corp.com"} {
		if _, _, err := s.CreateToken(context.Background(), name, ""); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("CreateToken(%q) = %v, want ErrInvalid", name, err)
		}
	}
	if _, err := s.GetPublisher(context.Background(), "example.com "); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a refused name became a publisher: %v", err)
	}
}

// TestCatalogNamesClaimDomains: a catalog name with a dot claims a domain, which the publisher must
// own as it would a function group; a name without one claims nothing.
func TestCatalogNamesClaimDomains(t *testing.T) {
	t.Parallel()
	s := openStore(t)
	for _, p := range []string{"example.com", "other.org"} {
		mustToken(t, s, p)
	}
	tests := []struct {
		publisher, catalog, group string
		wantErr                   string
	}{
		{"example.com", "example.com", "example.com", ""},
		{"example.com", "example.com-tools", "example.com", ""},
		{"example.com", "fn.example.com-v2", "example.com", ""},
		{"other.org", "example.com-x", "fn.other.org", `catalog name "example.com-x" claims the domain example.com`},
		{"other.org", "team.example.com", "fn.other.org", `belongs to publisher "example.com"`},
		{"other.org", "nobody.dev-catalog", "fn.other.org", `group "nobody.dev" has no owner`},
		{"other.org", "shared-functions", "fn.other.org", ""},
	}
	for _, tc := range tests {
		err := publishIn(t, s, tc.publisher, tc.catalog, tc.group, 1)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s publishing catalog %s: %v", tc.publisher, tc.catalog, err)
		case tc.wantErr != "" && (!errors.Is(err, store.ErrForbidden) || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s publishing catalog %s: %v, want ErrForbidden with %q", tc.publisher, tc.catalog, err, tc.wantErr)
		}
	}
}

// TestGrantKeepsRegisteredKinds: a group's owner decides who adds new kinds; a kind stays its
// registrant's. After a grant of its group to another, the first publisher still publishes the
// kinds it registered, and adds none; after the grant is revoked, the grantee keeps its kinds and
// adds none.
func TestGrantKeepsRegisteredKinds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t)
	for _, p := range []string{"example.com", "other.org"} {
		mustToken(t, s, p)
	}
	catalogOf := func(name, publisher string, n int) error {
		_, _, err := publish(t, s, publisher, name, "1.0."+fmt.Sprint(n), catalogtest.Catalog(catalogtest.Options{Name: name, Functions: n, Publisher: publisher, Group: "shared.example.com"}))
		return err
	}
	steps := []struct {
		name          string
		grant, revoke bool // shared.example.com to other.org before the step
		catalog, pub  string
		functions     int // the generator's first n kinds
		wantErr       string
	}{
		{name: "the name's owner registers two kinds", catalog: "mine", pub: "example.com", functions: 2},
		{name: "after a grant to another, it still publishes them", grant: true, catalog: "mine", pub: "example.com", functions: 2},
		{name: "but adds no new kind", catalog: "mine", pub: "example.com", functions: 3, wantErr: `belongs to publisher "other.org" (by grant)`},
		{name: "the grantee cannot take its kinds", catalog: "theirs", pub: "other.org", functions: 1, wantErr: "functions registered by another publisher"},
	}
	for _, st := range steps {
		if st.grant {
			if _, _, err := s.GrantGroup(ctx, "shared.example.com", "other.org", "test"); err != nil {
				t.Fatal(err)
			}
		}
		err := catalogOf(st.catalog, st.pub, st.functions)
		switch {
		case st.wantErr == "" && err != nil:
			t.Errorf("%s: %v", st.name, err)
		case st.wantErr != "" && (!errors.Is(err, store.ErrForbidden) || !strings.Contains(err.Error(), st.wantErr)):
			t.Errorf("%s: %v, want ErrForbidden with %q", st.name, err, st.wantErr)
		}
	}
}

// TestRetireFunction: after a revocation the former grantee's kinds resolve until an admin retires
// them; retired, a kind is not found, not counted, and only the group's owner registers it again.
func TestRetireFunction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t)
	for _, p := range []string{"example.com", "other.org"} {
		mustToken(t, s, p)
	}
	if _, _, err := s.GrantGroup(ctx, "fn.nobody.dev", "other.org", "test"); err != nil {
		t.Fatal(err)
	}
	if err := publishIn(t, s, "other.org", "lent", "fn.nobody.dev", 2); err != nil {
		t.Fatal(err)
	}
	if err := s.RevokeGroup(ctx, "fn.nobody.dev", "other.org"); err != nil {
		t.Fatal(err)
	}
	kind := catalogtest.Kind(0)
	if _, err := s.GetFunction(ctx, "fn.nobody.dev", kind); err != nil {
		t.Fatalf("a revoked grantee's kind no longer found before it is retired: %v", err)
	}
	pub, err := s.RetireFunction(ctx, "fn.nobody.dev", kind, "grant revoked")
	if err != nil || pub != "other.org" {
		t.Fatalf("RetireFunction = %q, %v", pub, err)
	}
	if _, err := s.GetFunction(ctx, "fn.nobody.dev", kind); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a retired function is still found: %v", err)
	}
	res, err := s.SearchFunctions(ctx, store.SearchQuery{Publisher: "other.org"})
	if err != nil || res.Total != 1 || len(res.Facets.Publisher) != 1 || res.Facets.Publisher[0].Count != 1 {
		t.Errorf("search after retiring one of two: total %d, facets %+v, %v; want 1", res.Total, res.Facets.Publisher, err)
	}
	if _, err := s.RetireFunction(ctx, "fn.nobody.dev", kind, "again"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("retiring it again: %v, want ErrNotFound", err)
	}
	// the former grantee cannot register it again: the group is nobody's now
	if err := publishIn(t, s, "other.org", "relent", "fn.nobody.dev", 1); !errors.Is(err, store.ErrForbidden) {
		t.Errorf("the former grantee publishing the retired kind: %v, want ErrForbidden", err)
	}
	if diff := cmp.Diff([]string{"function.retire other.org function fn.nobody.dev/" + kind}, auditLog(t, s, "function.")); diff != "" {
		t.Errorf("audit log (-want +got):\n%s", diff)
	}
}
