package pgcluster

import (
	"context"
	"os"
	"path/filepath"
	"time"
)

// rotatedLog sends the server's log, once it runs, to log/server-HH.log through PostgreSQL's
// logging collector: a file per hour of the day, truncated when the hour comes round again, so
// the log holds the last day and never grows without bound. The -l file of pg_ctl keeps only
// what is said before the collector starts (such as a port taken).
var rotatedLog = []string{
	"-c", "logging_collector=on",
	"-c", "log_directory=log",
	"-c", "log_filename=server-%H.log",
	"-c", "log_rotation_age=60",
	"-c", "log_rotation_size=0",
	"-c", "log_truncate_on_rotation=on",
}

// logMark is a server log file and its size before a start.
type logMark struct {
	path string
	size int64
}

// currentServerLog marks the rotated log file the server writes to at this hour.
func (c *Cluster) currentServerLog() logMark {
	m := logMark{path: filepath.Join(c.dataDir, "log", "server-"+time.Now().Format("15")+".log")}
	if fi, err := os.Stat(m.path); err == nil {
		m.size = fi.Size()
	}
	return m
}

// Supervision timing: how often the postmaster is looked at, and the backoff between failed
// restarts (a killed postmaster's children take a moment to exit and free shared memory).
const (
	supervisePoll = 200 * time.Millisecond
	minBackoff    = 200 * time.Millisecond
	maxBackoff    = 10 * time.Second
)

// supervise starts the supervisor if the options ask for one.
func (c *Cluster) supervise() {
	if !c.opts.Supervise || !c.owned {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.watch(ctx)
	}()
	c.stopSupervising = func() {
		cancel()
		<-done
	}
}

// watch restarts the server whenever it is found dead, until ctx ends. Each death is logged
// once, and its end once, whatever the number of attempts between.
func (c *Cluster) watch(ctx context.Context) {
	pidPath := filepath.Join(c.dataDir, "postmaster.pid")
	tick := time.NewTicker(supervisePoll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		pf, err := readPidFile(pidPath)
		if err == nil && processState(pf.pid) == processPostgres {
			continue
		}
		died := time.Now()
		c.logger.Warn("postgres: server died; starting it again (crash recovery)", "pid", pf.pid)
		backoff := minBackoff
		for attempt := 1; ; attempt++ {
			opts := c.opts
			opts.Port = c.port // the URLs handed out name this port
			err := c.startServer(ctx, opts)
			if err == nil {
				c.logger.Info("postgres: server back", "attempts", attempt, "down", time.Since(died).Round(time.Millisecond))
				break
			}
			if ctx.Err() != nil {
				return
			}
			if attempt == 1 {
				c.logger.Warn("postgres: restart failed; retrying with backoff until it starts", "error", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, maxBackoff)
		}
	}
}
