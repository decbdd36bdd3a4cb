package testenv

import (
	"os/exec"
	"syscall"
)

// setDeathSignal makes the kernel kill cmd when the test process dies
// without stopping it (a test binary killed by its -timeout runs no
// cleanups): no broker outlives its test.
func setDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
