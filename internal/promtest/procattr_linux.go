package promtest

import "syscall"

// sysProcAttr: prometheus is killed if the test's process dies first (a
// panic, a timeout's exit), so that no server outlives its test.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
