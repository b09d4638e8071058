package probe

import (
	"context"
	"time"
)

// TCP is the kubelet's tcpSocket probe: Success if a connection to
// host:port opens within timeout, Failure with the dial error otherwise.
// The connection is closed at once, with RST (see dial), so that a probe
// costs the target one accept and this host no TIME_WAIT.
func TCP(ctx context.Context, host string, port int, timeout time.Duration) (Result, string, error) {
	c, err := dial(ctx, hostPort(host, port), time.Now().Add(orDefault(timeout)))
	if err != nil {
		// A probe that could not connect is a result, not an error.
		return Failure, err.Error(), nil
	}
	_ = c.Close()
	return Success, "", nil
}
