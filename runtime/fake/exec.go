package fake

import (
	"bytes"
	"context"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// maxExecOutput caps ExecSync output per stream, as containerd does since
// CVE-2022-31030.
const maxExecOutput = 16 << 20

// ExecSync runs a command in a running container through its Program's
// Exec, without stdin or terminal. A command that runs longer than
// req.Timeout seconds (on the injected clock) fails with
// codes.DeadlineExceeded, as in containerd.
func (r *Runtime) ExecSync(ctx context.Context, req *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error) {
	if err := r.enter(ctx, mExecSync); err != nil {
		return nil, err
	}
	r.mu.RLock()
	c, err := r.findContainerLocked(req.GetContainerId())
	var (
		state runtimeapi.ContainerState
		exec  func([]string) ExecResult
	)
	if err == nil {
		state, exec = c.state, c.prog.Exec
	}
	r.mu.RUnlock()
	if err != nil {
		return nil, wrapLookup(err, "failed to exec in container: failed to find container %q in store", req.GetContainerId())
	}
	if state != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return nil, status.Errorf(codes.Unknown, "failed to exec in container: container is in %s state",
			runtimeapi.ContainerState_name[int32(state)])
	}
	res := startExec(exec, req.GetCmd())
	if res.Err != nil {
		if _, ok := status.FromError(res.Err); ok {
			return nil, res.Err
		}
		return nil, status.Errorf(codes.Unknown, "failed to exec in container: failed to start exec %q: %v", newID(), res.Err)
	}
	if res.Interactive != nil {
		// No stdin and no terminal, as ExecSync runs commands.
		var stdout, stderr bytes.Buffer
		res.ExitCode = res.run(execStreams(nil, &stdout, &stderr, false))
		res.Stdout, res.Stderr = stdout.Bytes(), stderr.Bytes()
	}
	timeout := time.Duration(req.GetTimeout()) * time.Second
	switch {
	case timeout > 0 && (res.Duration < 0 || res.Duration > timeout):
		if err := r.sleep(ctx, timeout); err != nil {
			return nil, err
		}
		return nil, status.Errorf(codes.DeadlineExceeded,
			"failed to exec in container: timeout %v exceeded: context deadline exceeded", timeout)
	case res.Duration < 0:
		return nil, r.waitForever(ctx)
	}
	if err := r.sleep(ctx, res.Duration); err != nil {
		return nil, err
	}
	return &runtimeapi.ExecSyncResponse{
		Stdout:   capBytes(res.Stdout),
		Stderr:   capBytes(res.Stderr),
		ExitCode: res.ExitCode,
	}, nil
}

func capBytes(b []byte) []byte {
	if len(b) > maxExecOutput {
		return b[:maxExecOutput]
	}
	return b
}
