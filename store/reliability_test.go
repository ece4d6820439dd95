package store_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/krm-catalog/krm-catalog/catalog/catalogtest"
	"github.com/krm-catalog/krm-catalog/store"
)

func TestIsUnavailable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		want bool
	}{
		{nil, false},
		{store.ErrUnavailable, true},
		{fmt.Errorf("list: %w", context.DeadlineExceeded), true},
		{&pgconn.PgError{Code: "57P01"}, true},              // admin_shutdown
		{&pgconn.PgError{Code: "57P03"}, true},              // cannot_connect_now: starting up, recovering
		{&pgconn.PgError{Code: "08006"}, true},              // connection_failure
		{&pgconn.PgError{Code: "57014"}, true},              // statement_timeout
		{&pgconn.PgError{Code: "25006"}, true},              // read-only: a standby
		{&pgconn.PgError{Code: "23505"}, false},             // unique_violation: a bug, not an outage
		{&pgconn.PgError{Code: "42601"}, false},             // syntax_error
		{fmt.Errorf("read: %w", io.ErrUnexpectedEOF), true}, // the server died mid-answer
		{&net.OpError{Op: "dial", Err: errors.New("connection refused")}, true},
		{store.Errorf(store.ErrNotFound, "no"), false},
		{errors.New("something else"), false},
	}
	for _, tc := range tests {
		if got := store.IsUnavailable(tc.err); got != tc.want {
			t.Errorf("IsUnavailable(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// TestPushHoldsNoConnection checks that a publish with a registry push runs the push with no
// transaction open and no connection taken from the pool, and that a publish that fails pushes
// nothing.
func TestPushHoldsNoConnection(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openStore(t)
	mustToken(t, s, "example.com")
	mustToken(t, s, "other.example.com")
	data := catalogtest.Catalog(catalogtest.Options{Name: "pushed", Functions: 2})
	doc, c := catalogtest.Decode(t, data)
	pushes := 0
	params := store.PublishCatalogParams{Name: "pushed", Version: "1.0.0", Publisher: "example.com", Content: data, Document: doc, Catalog: c,
		Push: func(context.Context) (string, string, error) {
			pushes++
			if st := s.Stats(); st.Acquired != 0 {
				t.Errorf("the push runs with %d pooled connections held", st.Acquired)
			}
			return "127.0.0.1:5000/catalogs/pushed:1.0.0", "sha256:aa", nil
		}}
	if _, created, err := s.PublishCatalog(ctx, params); err != nil || !created {
		t.Fatalf("publish: %v %v", created, err)
	}
	if _, created, err := s.PublishCatalog(ctx, params); err != nil || created {
		t.Fatalf("republish: %v %v", created, err)
	}
	other := params
	other.Content = append(append([]byte{}, data...), "\n# other bytes\n"...)
	if _, _, err := s.PublishCatalog(ctx, other); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("conflicting publish: %v", err)
	}
	foreign := params
	foreign.Publisher, foreign.Version = "other.example.com", "2.0.0"
	if _, _, err := s.PublishCatalog(ctx, foreign); !errors.Is(err, store.ErrForbidden) {
		t.Fatalf("foreign publish: %v", err)
	}
	if pushes != 1 {
		t.Errorf("%d pushes, want 1: a no-op or failing publish must not push", pushes)
	}
}

func TestSubscribe(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := openStore(t)
	mustToken(t, s, "example.com")
	changes := make(chan store.Change, 10)
	done := make(chan error, 1)
	go func() { done <- s.Subscribe(ctx, func(c store.Change) { changes <- c }) }()
	if c := <-changes; !c.Resync {
		t.Fatalf("first change %+v, want a resync", c)
	}
	if st := s.Stats(); st.Acquired != 0 {
		t.Errorf("the subscription holds %d pooled connections", st.Acquired)
	}
	if _, _, err := publish(t, s, "example.com", "subscribed", "1.0.0", catalogtest.Catalog(catalogtest.Options{Name: "subscribed", Functions: 1})); err != nil {
		t.Fatal(err)
	}
	if c := <-changes; c.Subject != "catalog:subscribed" {
		t.Errorf("change %+v, want catalog:subscribed", c)
	}
	cancel()
	if err := <-done; err == nil {
		t.Error("Subscribe returned nil after its context ended")
	}
}
