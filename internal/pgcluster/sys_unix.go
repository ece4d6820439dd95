//go:build unix

package pgcluster

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
)

func setProcAttr(cmd *exec.Cmd, r *runner, detached bool) {
	attr := &syscall.SysProcAttr{Setpgid: detached}
	if r.uid >= 0 {
		attr.Credential = &syscall.Credential{Uid: uint32(r.uid), Gid: uint32(r.gid), Groups: r.groups}
	}
	cmd.SysProcAttr = attr
}

// tryLockDir tries to take an exclusive lock on dir, returning a nil unlock
// if another open file holds it.
func tryLockDir(dir string) (unlock func(), err error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err == nil {
		return func() { f.Close() }, nil
	}
	f.Close()
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return nil, nil
	}
	return nil, fmt.Errorf("lock %s: %w", dir, err)
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
	// /proc/PID/stat: "PID (COMM) STATE ...".
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return processPostgres // no procfs: trust the pid
	}
	open, end := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
	if open < 0 || end < open || len(stat) < end+3 {
		return processPostgres
	}
	if state := stat[end+2]; state == 'Z' || state == 'X' {
		return processGone // exited, not yet reaped
	}
	switch string(stat[open+1 : end]) {
	case "postgres", "postmaster":
		return processPostgres
	}
	return processOther
}
