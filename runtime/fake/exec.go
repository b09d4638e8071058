package fake

import (
	"context"
	"errors"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// maxExecOutput caps ExecSync output per stream, as containerd does since
// CVE-2022-31030.
const maxExecOutput = 16 << 20

// ExecSync runs a command in a running container through its Program's
// Exec. A command that runs longer than req.Timeout seconds (on the
// injected clock) fails with codes.DeadlineExceeded, as in containerd.
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
	if exec == nil {
		exec = ExecNotFound
	}
	res := ExecResult{Err: errors.New("OCI runtime exec failed: exec failed: args must not be empty: unknown")}
	if len(req.GetCmd()) > 0 {
		res = exec(req.GetCmd())
	}
	if res.Err != nil {
		if _, ok := status.FromError(res.Err); ok {
			return nil, res.Err
		}
		return nil, status.Errorf(codes.Unknown, "failed to exec in container: failed to start exec %q: %v", newID(), res.Err)
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

// Exec needs containerd's streaming server, which the fake does not have.
func (r *Runtime) Exec(ctx context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	if err := r.enter(ctx, mExec); err != nil {
		return nil, err
	}
	return nil, status.Error(codes.Unimplemented, "fake runtime has no streaming server: Exec is not implemented")
}

// Attach needs containerd's streaming server, which the fake does not have.
func (r *Runtime) Attach(ctx context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	if err := r.enter(ctx, mAttach); err != nil {
		return nil, err
	}
	return nil, status.Error(codes.Unimplemented, "fake runtime has no streaming server: Attach is not implemented")
}

// PortForward needs containerd's streaming server, which the fake does not
// have.
func (r *Runtime) PortForward(ctx context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	if err := r.enter(ctx, mPortForward); err != nil {
		return nil, err
	}
	return nil, status.Error(codes.Unimplemented, "fake runtime has no streaming server: PortForward is not implemented")
}
