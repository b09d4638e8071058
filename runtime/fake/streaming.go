package fake

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	utilexec "k8s.io/utils/exec"
)

// Exec returns the URL of an exec in a running container, served by the
// fake's streaming server on 127.0.0.1: the command is the container
// Program's Exec, run with the client's streams (see ExecResult).
//
// Exec, Attach and PortForward answer URLs on a streaming server of the
// fake's own, k8s.io/cri-streaming as in containerd, listening on a
// 127.0.0.1 port from the first such call until Close: clients such as
// client-go's remotecommand and portforward get real SPDY or WebSocket
// streams. An exec runs the Program's Exec with the client's streams
// (ExecResult.Interactive reads stdin; a tty echoes input and prints
// "\r\n"), and a non-zero exit code reaches the client as its exit code.
// An attach gets what the container prints from then on, and feeds
// Program.Stdin when the container has Stdin. A port forward really dials
// the port: 127.0.0.1 for host-network sandboxes, the pod IP when it is a
// loopback address (the default), and fails otherwise.
func (r *Runtime) Exec(ctx context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	if err := r.enter(ctx, mExec); err != nil {
		return nil, err
	}
	id := req.GetContainerId()
	if err := r.checkRunning(id, fmt.Sprintf("failed to find container %q in store", id)); err != nil {
		return nil, err
	}
	s, err := r.streams()
	if err != nil {
		return nil, err
	}
	return s.GetExec(req)
}

// Attach returns the URL of an attach to a running container's process:
// the client gets what the container prints from then on and, if the
// container's config has Stdin, feeds Program.Stdin.
func (r *Runtime) Attach(ctx context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	if err := r.enter(ctx, mAttach); err != nil {
		return nil, err
	}
	if err := r.checkRunning(req.GetContainerId(), "failed to find container in store"); err != nil {
		return nil, err
	}
	s, err := r.streams()
	if err != nil {
		return nil, err
	}
	return s.GetAttach(req)
}

// checkRunning answers like containerd when the container id is missing
// (notFound, then the lookup error) or not running.
func (r *Runtime) checkRunning(id, notFound string) error {
	r.mu.RLock()
	c, err := r.findContainerLocked(id)
	var state runtimeapi.ContainerState
	if err == nil {
		state = c.state
	}
	r.mu.RUnlock()
	if err != nil {
		return wrapLookup(err, "%s", notFound)
	}
	if state != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return status.Errorf(codes.Unknown, "container is in %s state", runtimeapi.ContainerState_name[int32(state)])
	}
	return nil
}

// streamRuntime runs the streaming server's sessions. It is a type apart
// because the Runtime's own Exec, Attach and PortForward are the CRI calls.
type streamRuntime struct{ r *Runtime }

// Exec runs cmd like containerd's streaming exec: a non-zero exit code is
// a utilexec.ExitError, which the server sends the client as the exit
// code; a failure to start is any other error.
func (s streamRuntime) Exec(ctx context.Context, id string, cmd []string, in io.Reader, out, errOut io.WriteCloser, tty bool, _ <-chan remotecommand.TerminalSize) error {
	r := s.r
	untrack, ok := r.track()
	if !ok {
		return errClosed
	}
	defer untrack()
	markSession(ctx)
	exec, exited, err := r.execTarget(id)
	if err != nil {
		return fmt.Errorf("failed to exec in container: %w", err)
	}
	res := startExec(exec, cmd)
	if res.Err != nil {
		return fmt.Errorf("failed to exec in container: failed to start exec %q: %w", newID(), res.Err)
	}
	if in != nil {
		if in, ok = r.closableInput(in); !ok {
			return errClosed
		}
	}
	streams := execStreams(in, out, errOut, tty)
	code := res.run(streams)
	if in != nil {
		// Unread input would stall the connection's other streams.
		if !r.goBackground(func() { _, _ = io.Copy(io.Discard, streams.Stdin) }) {
			return errClosed
		}
	}
	killed, err := r.waitExec(ctx, res.Duration, exited)
	switch {
	case err != nil:
		return err
	case killed:
		code = 137
	}
	if code != 0 {
		return utilexec.CodeExitError{Err: fmt.Errorf("error executing command %v, exit code %d", cmd, code), Code: int(code)}
	}
	return nil
}

// execTarget returns what an exec in running container id needs.
func (r *Runtime) execTarget(id string) (exec func([]string) ExecResult, exited <-chan struct{}, err error) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	c, err := r.findContainerLocked(id)
	switch {
	case err != nil:
		return nil, nil, fmt.Errorf("failed to find container %q in store: %w", id, err)
	case c.state != runtimeapi.ContainerState_CONTAINER_RUNNING:
		return nil, nil, fmt.Errorf("container is in %s state", runtimeapi.ContainerState_name[int32(c.state)])
	}
	return c.prog.Exec, c.exited, nil
}

// closableInput is in, failing with errClosed once the Runtime closes: a
// process blocked reading a client that sends nothing must not hold Close
// up, and the client's connection stays open to hear why it ended.
func (r *Runtime) closableInput(in io.Reader) (io.Reader, bool) {
	pr, pw := io.Pipe()
	pumped := make(chan struct{})
	ok := r.goBackground(func() {
		defer close(pumped)
		_, err := io.Copy(pw, in)
		_ = pw.CloseWithError(err)
	}) && r.goBackground(func() {
		select {
		case <-r.done:
			_ = pr.CloseWithError(errClosed)
		case <-pumped:
		}
	})
	if !ok {
		_ = pr.CloseWithError(errClosed) // ends a pump already started
	}
	return pr, ok
}

// waitExec waits d on the clock (forever if negative). The process is
// killed (SIGKILL, as the kernel kills what is left in a pid namespace
// whose init died) if the container exits first; it ends with ctx (the
// client went away) or the Runtime.
func (r *Runtime) waitExec(ctx context.Context, d time.Duration, exited <-chan struct{}) (killed bool, err error) {
	select {
	case <-r.done:
		// Also for a process that ended because Close cut its input.
		return false, errClosed
	default:
	}
	if d == 0 {
		return false, nil
	}
	var timeout <-chan time.Time
	if d > 0 {
		t := r.clock.NewTimer(d)
		defer t.Stop()
		timeout = t.C()
	}
	select {
	case <-timeout:
		return false, nil
	case <-exited:
		return true, nil
	case <-ctx.Done():
		return false, ctx.Err()
	case <-r.done:
		return false, errClosed
	}
}

// startExec starts cmd with a container's Program.Exec, as runc would.
func startExec(exec func([]string) ExecResult, cmd []string) ExecResult {
	if len(cmd) == 0 {
		return ExecResult{Err: fmt.Errorf("OCI runtime exec failed: exec failed: args must not be empty: unknown")}
	}
	if exec == nil {
		exec = ExecNotFound
	}
	return exec(cmd)
}

// run is the process of res on s, returning its exit code.
func (res ExecResult) run(s ExecStreams) int32 {
	if res.Interactive != nil {
		return res.Interactive(s)
	}
	_, _ = s.Stdout.Write(res.Stdout)
	_, _ = s.Stderr.Write(res.Stderr)
	return res.ExitCode
}

// execStreams are a process's streams to a client's; any may be nil.
func execStreams(in io.Reader, out, errOut io.Writer, tty bool) ExecStreams {
	if in == nil {
		in = strings.NewReader("")
	}
	if tty {
		term := &lockedWriter{w: crlfWriter{orDiscard(out)}}
		return ExecStreams{Stdin: ttyInput{r: in, echo: term}, Stdout: term, Stderr: term, TTY: true}
	}
	return ExecStreams{Stdin: in, Stdout: &lockedWriter{w: orDiscard(out)}, Stderr: &lockedWriter{w: orDiscard(errOut)}}
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}
