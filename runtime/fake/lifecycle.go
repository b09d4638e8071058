package fake

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// exitStatus is how a process ended.
type exitStatus struct {
	code   int32
	oom    bool
	stdout []string // printed on the way out
}

// sigkill is the exit of a SIGKILLed process: 128+9.
var sigkill = exitStatus{code: 137}

// selfExit is how p ends by itself.
func selfExit(p Program) exitStatus {
	if p.OOMKilled {
		return exitStatus{code: 137, oom: true}
	}
	return exitStatus{code: p.ExitCode}
}

// exitLocked moves a running container to EXITED. Timer stops and the
// program's cleanup are left to fx, to run without mu.
func (r *Runtime) exitLocked(c *container, now time.Time, e exitStatus, fx *effects) {
	if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return
	}
	if c.logFile != "" && len(e.stdout) > 0 {
		writeLog(c.logFile, now, Stdout, e.stdout)
	}
	for a := range c.attached {
		for _, l := range e.stdout {
			a.push(Stdout, l)
		}
		a.end()
	}
	c.attached = nil
	c.state = runtimeapi.ContainerState_CONTAINER_EXITED
	c.finishedAt = nanos(now)
	c.exitCode = e.code
	if e.oom {
		c.reason = "OOMKilled"
	}
	close(c.exited)
	fx.stopTimer(c.takeTimer())
	fx.add(c.takeCleanup())
	r.refreshContainerLocked(c)
	r.publishLocked(c, runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT, nanos(now))
}

// scriptedExit runs in a timer callback: with a fake clock, inside Step
// while the clock's lock is held. It must not touch the clock, so its own
// timer is dropped rather than stopped.
func (r *Runtime) scriptedExit(c *container, at time.Time) {
	var fx effects
	r.mu.Lock()
	if !r.st.closed {
		c.timer = nil
		r.exitLocked(c, at, selfExit(c.prog), &fx)
	}
	r.mu.Unlock()
	fx.run()
}

// exitContainer ends c now with e unless it has exited already.
func (r *Runtime) exitContainer(c *container, e exitStatus) {
	now := r.clock.Now()
	var fx effects
	r.mu.Lock()
	if !r.st.closed {
		r.exitLocked(c, now, e, &fx)
	}
	r.mu.Unlock()
	fx.run()
}

// printLine appends a line to a running container's log and sends it to
// the attached clients.
func (r *Runtime) printLine(c *container, s Stream, line string) {
	now := r.clock.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return
	}
	if c.logFile != "" {
		writeLog(c.logFile, now, s, []string{line})
	}
	for a := range c.attached {
		a.push(s, line)
	}
}

// Exit makes a running container exit now with code, as if its process
// ended by itself (reason "Completed" for 0, "Error" otherwise).
func (r *Runtime) Exit(containerID string, code int32) error {
	r.mu.RLock()
	c, err := r.findContainerLocked(containerID)
	running := err == nil && c.state == runtimeapi.ContainerState_CONTAINER_RUNNING
	r.mu.RUnlock()
	switch {
	case err != nil:
		return fmt.Errorf("container %q: %w", containerID, err)
	case !running:
		return fmt.Errorf("container %q is not running", containerID)
	}
	r.exitContainer(c, exitStatus{code: code})
	return nil
}

// StopContainer stops a running container: with a timeout it sends
// SIGTERM, which a program either handles at once (Program.StopExitCode)
// or ignores, in which case it is SIGKILLed (137) once timeout seconds
// have passed on the injected clock; with no timeout it is SIGKILLed at
// once. Stopping a container that is not running succeeds.
func (r *Runtime) StopContainer(ctx context.Context, req *runtimeapi.StopContainerRequest) (*runtimeapi.StopContainerResponse, error) {
	if err := r.enter(ctx, mStopContainer); err != nil {
		return nil, err
	}
	now := r.clock.Now()
	var fx effects
	defer fx.run()
	r.mu.Lock()
	c, err := r.findContainerLocked(req.GetContainerId())
	if err != nil {
		r.mu.Unlock()
		return nil, wrapLookup(err, "an error occurred when try to find container %q", req.GetContainerId())
	}
	if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
		r.mu.Unlock()
		return &runtimeapi.StopContainerResponse{}, nil
	}
	timeout := time.Duration(req.GetTimeout()) * time.Second
	if timeout <= 0 {
		r.exitLocked(c, now, sigkill, &fx)
		r.mu.Unlock()
		return &runtimeapi.StopContainerResponse{}, nil
	}
	// containerd sends the stop signal only once per container; a second
	// StopContainer just waits again.
	if !c.termSent {
		c.termSent = true
		if !c.prog.IgnoreSIGTERM {
			r.exitLocked(c, now, exitStatus{code: c.prog.StopExitCode, stdout: c.prog.StopStdout}, &fx)
			r.mu.Unlock()
			return &runtimeapi.StopContainerResponse{}, nil
		}
	}
	exited := c.exited
	r.mu.Unlock()

	if err := r.waitExit(ctx, exited, timeout); err != nil {
		return nil, err
	}
	now = r.clock.Now()
	r.mu.Lock()
	r.exitLocked(c, now, sigkill, &fx)
	r.mu.Unlock()
	return &runtimeapi.StopContainerResponse{}, nil
}

// waitExit waits for exited or the grace period on the clock. It returns
// an error only if ctx ends (or the Runtime closes) first; the container
// then keeps running, as in containerd.
func (r *Runtime) waitExit(ctx context.Context, exited <-chan struct{}, grace time.Duration) error {
	t := r.clock.NewTimer(grace)
	defer t.Stop()
	select {
	case <-exited:
	case <-t.C():
	case <-ctx.Done():
		return status.FromContextError(ctx.Err()).Err()
	case <-r.done:
		return errClosed
	}
	return nil
}

// RemoveContainer SIGKILLs the container if it is running and removes it.
// Removing an unknown container succeeds, as in containerd.
func (r *Runtime) RemoveContainer(ctx context.Context, req *runtimeapi.RemoveContainerRequest) (*runtimeapi.RemoveContainerResponse, error) {
	if err := r.enter(ctx, mRemoveContainer); err != nil {
		return nil, err
	}
	now := r.clock.Now()
	var fx effects
	defer fx.run()
	r.mu.Lock()
	defer r.mu.Unlock()
	c, err := r.findContainerLocked(req.GetContainerId())
	if err != nil {
		if isNotFound(err) {
			return &runtimeapi.RemoveContainerResponse{}, nil
		}
		return nil, wrapLookup(err, "an error occurred when try to find container %q", req.GetContainerId())
	}
	r.removeContainerLocked(c, now, &fx)
	return &runtimeapi.RemoveContainerResponse{}, nil
}

func (r *Runtime) removeContainerLocked(c *container, now time.Time, fx *effects) {
	r.exitLocked(c, now, sigkill, fx)
	delete(r.st.containers, c.id)
	delete(r.st.containerNames, c.name)
	r.st.containerOrder = deleteItem(r.st.containerOrder, c)
	if uid := c.item.Labels[podUIDLabel]; uid != "" {
		if l := deleteItem(r.st.containersByUID[uid], c); len(l) > 0 {
			r.st.containersByUID[uid] = l
		} else {
			delete(r.st.containersByUID, uid)
		}
	}
	c.sb.containers = deleteItem(c.sb.containers, c)
	r.containerList.Store(nil)
	r.publishLocked(c, runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT, nanos(now))
}
