package fake

import (
	"context"
	"fmt"
	"io"
	"net"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// PortForward returns the URL of a port forward to a READY sandbox. The
// fake really dials the port, on loopback only: 127.0.0.1 for host-network
// sandboxes, the pod IP for the others when it is a loopback address (the
// default; see WithPodIPs).
func (r *Runtime) PortForward(ctx context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	if err := r.enter(ctx, mPortForward); err != nil {
		return nil, err
	}
	r.mu.RLock()
	sb, err := r.findSandboxLocked(req.GetPodSandboxId())
	ready := err == nil && sb.ready
	r.mu.RUnlock()
	if err != nil {
		return nil, wrapLookup(err, "failed to find sandbox %q", req.GetPodSandboxId())
	}
	if !ready {
		return nil, status.Error(codes.Unknown, "sandbox container is not running")
	}
	s, err := r.streams()
	if err != nil {
		return nil, err
	}
	return s.GetPortForward(req)
}

// PortForward copies between stream and the sandbox's port until either
// side closes. When the client is done sending, the port gets EOF and the
// answer gets the second containerd waits for it.
func (s streamRuntime) PortForward(ctx context.Context, id string, port int32, stream io.ReadWriteCloser) error {
	r := s.r
	untrack, ok := r.track()
	if !ok {
		return errClosed
	}
	defer untrack()
	addr, err := r.forwardAddr(id, port)
	if err != nil {
		return err
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("failed to connect to localhost:%d inside namespace %q: %w", port, id, err)
	}
	defer conn.Close()
	toPod, fromPod := make(chan struct{}), make(chan struct{})
	if !r.goBackground(func() { defer close(toPod); _, _ = io.Copy(conn, stream) }) ||
		!r.goBackground(func() { defer close(fromPod); _, _ = io.Copy(stream, conn) }) {
		return errClosed
	}
	select {
	case <-toPod:
		// This bounds a network wait, not a simulated delay, hence the
		// wall clock.
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		grace := time.NewTimer(time.Second)
		defer grace.Stop()
		select {
		case <-fromPod:
		case <-grace.C:
		case <-ctx.Done():
		case <-r.done:
		}
	case <-fromPod:
	case <-ctx.Done():
	case <-r.done:
	}
	return nil
}

// forwardAddr is where a port forward to sandbox id dials: only loopback
// addresses, as in bindAddr.
func (r *Runtime) forwardAddr(id string, port int32) (string, error) {
	r.mu.RLock()
	sb, err := r.findSandboxLocked(id)
	var (
		hostNet, ready bool
		ip             string
	)
	if err == nil {
		hostNet, ready, ip = sb.hostNetwork, sb.ready, sb.ip
	}
	r.mu.RUnlock()
	switch {
	case err != nil:
		return "", fmt.Errorf("failed to find sandbox %q in store: %w", id, err)
	case hostNet:
		return net.JoinHostPort("127.0.0.1", fmt.Sprint(port)), nil
	case !ready:
		return "", fmt.Errorf("network namespace for sandbox %q is closed", id)
	}
	if parsed := net.ParseIP(ip); parsed == nil || !parsed.IsLoopback() {
		return "", fmt.Errorf("fake runtime: cannot forward port %d of sandbox %q: its IP %q is not a loopback address, and the fake dials only loopback (see WithPodIPs)", port, id, ip)
	}
	return net.JoinHostPort(ip, fmt.Sprint(port)), nil
}
