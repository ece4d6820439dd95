package store

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/krm-catalog/krm-catalog/store/storetest"
)

// TestAcquireTimeout checks that when every pooled connection is busy, a query fails with
// ErrUnavailable after the acquire timeout instead of queueing until its caller gives up, and
// that a statement over the read class's statement_timeout is canceled by the server.
func TestAcquireTimeout(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := OpenWith(ctx, storetest.NewDatabase(t), Options{MaxConns: 1, AcquireTimeout: 200 * time.Millisecond, ReadTimeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	busy := make(chan error, 1)
	go func() {
		_, err := s.pool.Exec(ctx, "SELECT pg_sleep(10)")
		busy <- err
	}()
	for s.Stats().Acquired == 0 {
		time.Sleep(time.Millisecond)
	}
	start := time.Now()
	_, err = s.ListCatalogs(ctx)
	if !errors.Is(err, ErrUnavailable) || !IsUnavailable(err) {
		t.Errorf("a read with every connection busy: %v, want ErrUnavailable", err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("it took %s to give up", took)
	}
	if err := <-busy; !IsUnavailable(err) {
		t.Errorf("a statement past statement_timeout: %v, want an unavailable error", err)
	}
}
