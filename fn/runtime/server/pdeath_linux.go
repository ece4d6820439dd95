package server

import (
	"os/exec"
	"syscall"
)

// setParentDeath makes the kernel kill a function server when krm-catalog dies without stopping it
// (killed by a signal it cannot catch): servers must not outlive the run that started them.
func setParentDeath(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
