//go:build !linux

package server

import "os/exec"

// setParentDeath has no portable equivalent outside Linux; Pool.Close stops servers on a normal exit.
func setParentDeath(*exec.Cmd) {}
