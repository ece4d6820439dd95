package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/krm-catalog/krm-catalog/catalog/catalogtest"
	"github.com/krm-catalog/krm-catalog/store"
)

func TestPublishers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t)
	mustToken(t, s, "example.com")
	mustToken(t, s, "other.example")
	mustToken(t, s, "idle.example") // has a token, has published nothing

	// example.com: "alpha" drops its third function in 2.0.0, which stops being current; "beta"
	// lists two functions of another group.
	for _, p := range []struct {
		name, version string
		n             int
	}{{"alpha", "1.0.0", 3}, {"alpha", "2.0.0", 2}} {
		if _, _, err := publish(t, s, "example.com", p.name, p.version, catalogtest.Catalog(catalogtest.Options{Name: p.name, Functions: p.n})); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := publish(t, s, "example.com", "beta", "1.0.0", catalogtest.Catalog(catalogtest.Options{Name: "beta", Functions: 2, Group: "a.example.com"})); err != nil {
		t.Fatal(err)
	}
	if _, _, err := publish(t, s, "other.example", "gamma", "1.0.0", catalogtest.Catalog(catalogtest.Options{Name: "gamma", Functions: 1, Publisher: "other.example", Group: "other.example"})); err != nil {
		t.Fatal(err)
	}

	t.Run("get", func(t *testing.T) {
		t.Parallel()
		tests := []struct {
			name                string
			wantFns, wantCatals int
			wantErr             error
		}{
			{"example.com", 4, 2, nil},
			{"other.example", 1, 1, nil},
			{"idle.example", 0, 0, nil},
			{"nobody.example", 0, 0, store.ErrNotFound},
		}
		for _, tc := range tests {
			p, err := s.GetPublisher(ctx, tc.name)
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("GetPublisher(%q) error = %v, want %v", tc.name, err, tc.wantErr)
				continue
			}
			if err != nil {
				continue
			}
			if p.Name != tc.name || p.Functions != tc.wantFns || p.Catalogs != tc.wantCatals || p.CreatedAt.IsZero() {
				t.Errorf("GetPublisher(%q) = %+v, want %d functions and %d catalogs", tc.name, p, tc.wantFns, tc.wantCatals)
			}
		}
	})

	t.Run("functions", func(t *testing.T) {
		t.Parallel()
		kinds := func(fns []store.FunctionSummary) []string {
			var out []string
			for _, f := range fns {
				out = append(out, f.Group+"/"+f.Kind)
			}
			return out
		}
		tests := []struct {
			name  string
			limit int
			want  []string
		}{
			// by group, then kind: Kind(1) is EnsureNamespace1, Kind(0) SetNamespace0
			{"example.com", 0, []string{"a.example.com/" + catalogtest.Kind(1), "a.example.com/" + catalogtest.Kind(0), "fn.example.com/" + catalogtest.Kind(1), "fn.example.com/" + catalogtest.Kind(0)}},
			{"example.com", 2, []string{"a.example.com/" + catalogtest.Kind(1), "a.example.com/" + catalogtest.Kind(0)}},
			{"other.example", 10, []string{"other.example/" + catalogtest.Kind(0)}},
			{"idle.example", 10, nil},
			{"nobody.example", 10, nil},
		}
		for _, tc := range tests {
			fns, err := s.PublisherFunctions(ctx, tc.name, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, kinds(fns)); diff != "" {
				t.Errorf("PublisherFunctions(%q, %d) (-want +got):\n%s", tc.name, tc.limit, diff)
			}
		}
		// a summary reads as search returns it
		fns, err := s.PublisherFunctions(ctx, "other.example", 1)
		if err != nil {
			t.Fatal(err)
		}
		found, err := s.SearchFunctions(ctx, store.SearchQuery{Publisher: "other.example"})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(found.Functions, fns); diff != "" {
			t.Errorf("PublisherFunctions differs from search (-search +publisher):\n%s", diff)
		}
	})

	t.Run("catalogs", func(t *testing.T) {
		t.Parallel()
		all, err := s.ListCatalogs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"example.com", "other.example", "idle.example", "nobody.example"} {
			var want []store.CatalogSummary
			for _, c := range all {
				if c.Publisher == name {
					want = append(want, c)
				}
			}
			got, err := s.PublisherCatalogs(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("PublisherCatalogs(%q) differs from ListCatalogs (-want +got):\n%s", name, diff)
			}
		}
		got, err := s.PublisherCatalogs(ctx, "example.com")
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[0].Name != "alpha" || got[0].Versions != 2 || got[0].Latest == nil || got[0].Latest.Version != "2.0.0" || got[0].Latest.Functions != 2 {
			t.Errorf("PublisherCatalogs(example.com) = %+v", got)
		}
	})
}
