package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Change is what Subscribe reports: the subject a publish changed ("catalog:NAME" or
// "function:GROUP/KIND"), or, with Resync set, that the subscription has just started listening,
// so that changes made before it may have been missed.
type Change struct {
	Subject string
	Resync  bool
}

// Subscribe follows the publishes of every replica on NotifyChannel, calling fn for each, until
// ctx ends or the connection fails; it returns why it stopped. fn is first called with Resync set
// once the subscription is in place. Its connection is its own, outside the pool, so that a
// LISTEN never takes a pooled connection away from requests. Callers reconnect by calling again.
func (s *Store) Subscribe(ctx context.Context, fn func(Change)) error {
	cfg := s.connConfig.Copy()
	s.hosts.order(&cfg.Config)
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("subscribe to changes: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+NotifyChannel); err != nil {
		return fmt.Errorf("subscribe to changes: %w", err)
	}
	fn(Change{Resync: true})
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return fmt.Errorf("wait for changes: %w", err)
		}
		fn(Change{Subject: n.Payload})
	}
}
