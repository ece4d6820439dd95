//go:build !unix

package pgcluster

import (
	"errors"
	"os/exec"
)

func setProcAttr(*exec.Cmd, *runner, bool) {}

func tryLockDir(string) (func(), error) {
	return nil, errors.ErrUnsupported
}

type procState int

const (
	processPostgres procState = iota
	processGone
	processOther
)

func processState(int) procState { return processPostgres }
