package pgcluster

import (
	"context"
	"errors"
	"fmt"
	"strconv"
)

// StartStandby makes a streaming standby of c in opts.DataDir, which must not hold a cluster yet,
// with pg_basebackup -R (which writes standby.signal and primary_conninfo), and starts it. Only a
// Cluster that owns its server can; opts.Ephemeral is ignored (pg_basebackup decides).
func (c *Cluster) StartStandby(ctx context.Context, opts Options) (*Cluster, error) {
	if !c.owned || c.run == nil {
		return nil, errors.New("start standby: only the owner of the primary can copy it")
	}
	if err := c.run.mkdir(opts.DataDir); err != nil {
		return nil, fmt.Errorf("start standby: %w", err)
	}
	host := c.host
	if host == "" {
		host = c.socketDir
	}
	if _, err := c.run.output(ctx, "pg_basebackup", "-D", opts.DataDir, "-R", "-X", "stream", "-c", "fast",
		"-h", host, "-p", strconv.Itoa(c.port), "-U", Superuser); err != nil {
		return nil, fmt.Errorf("start standby: %w", err)
	}
	opts.BinDir = c.run.binDir
	return Start(ctx, opts)
}

// Promote turns a standby into a primary (pg_ctl promote) and waits until it accepts writes.
func (c *Cluster) Promote(ctx context.Context) error {
	if !c.owned || c.run == nil {
		return errors.New("promote: only the owner of the server can")
	}
	if _, err := c.run.output(ctx, "pg_ctl", "promote", "-D", c.dataDir, "-w", "-s", "-t", strconv.Itoa(waitSeconds(ctx))); err != nil {
		return fmt.Errorf("promote %s: %w", c.dataDir, err)
	}
	return nil
}
