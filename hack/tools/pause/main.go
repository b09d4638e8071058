// Command pause is the sandbox ("infra") process of nodekit's test pods
// (image nodekit.local/pause:1, entrypoint /pause).
//
// It blocks until SIGTERM or SIGINT and then exits 0. As PID 1 of a pod's PID
// namespace it also reaps zombie children: on every SIGCHLD it calls wait4
// with WNOHANG until no exited child is left.
//
// It must be built static (CGO_ENABLED=0): the image has no libc.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	reap() // children that exited before the handler was installed
	for s := range sigs {
		if s == syscall.SIGCHLD {
			reap()
			continue
		}
		os.Exit(0)
	}
}

// reap collects every exited child without blocking.
func reap() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if pid <= 0 || err != nil {
			return
		}
	}
}
