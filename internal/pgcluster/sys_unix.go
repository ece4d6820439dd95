//go:build unix

package pgcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func setProcAttr(cmd *exec.Cmd, r *runner, detached bool) {
	attr := &syscall.SysProcAttr{Setpgid: detached}
	if r.uid >= 0 {
		attr.Credential = &syscall.Credential{Uid: uint32(r.uid), Gid: uint32(r.gid), Groups: r.groups}
	}
	cmd.SysProcAttr = attr
}

// lockDir takes an exclusive lock on dir, waiting for ctx.
func lockDir(ctx context.Context, dir string) (unlock func(), err error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", dir, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", dir, context.Cause(ctx))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

type procState int

const (
	processPostgres procState = iota // alive, and (as far as we can tell) postgres
	processGone
	processOther // alive, but another program: the pid was reused
)

func processState(pid int) procState {
	if pid <= 0 {
		return processGone
	}
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return processGone
	}
	comm, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil {
		return processPostgres // no procfs: trust the pid
	}
	switch strings.TrimSpace(string(comm)) {
	case "postgres", "postmaster":
		return processPostgres
	}
	return processOther
}
