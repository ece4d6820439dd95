//go:build !unix

package pgcluster

import (
	"context"
	"errors"
	"os/exec"
)

func setProcAttr(*exec.Cmd, *runner, bool) {}

func lockDir(context.Context, string) (func(), error) {
	return nil, errors.ErrUnsupported
}

type procState int

const (
	processPostgres procState = iota
	processGone
	processOther
)

func processState(int) procState { return processPostgres }
