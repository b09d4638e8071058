package probe

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// GRPCOptions configures a GRPCProber; the zero value is the kubelet's.
type GRPCOptions struct {
	// UserAgent prefixes grpc-go's own user agent. Default DefaultUserAgent.
	UserAgent string
}

// GRPCProber runs grpc probes: grpc.health.v1.Health/Check over a fresh
// insecure connection per probe, as the kubelet. It is safe for concurrent
// use.
type GRPCProber struct {
	dialOpts []grpc.DialOption // shared, read-only
}

// NewGRPC returns a GRPCProber.
func NewGRPC(opts GRPCOptions) *GRPCProber {
	if opts.UserAgent == "" {
		opts.UserAgent = DefaultUserAgent
	}
	return &GRPCProber{dialOpts: []grpc.DialOption{
		grpc.WithUserAgent(opts.UserAgent),
		// The kubelet supports no credentials for grpc probes.
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		// The same RST-on-close dialer as the other probes.
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return dial(ctx, addr, time.Time{})
		}),
		// The connection lives for one RPC: no service config lookup,
		// no retries (the kubelet retries whole probes).
		grpc.WithDisableServiceConfig(),
		grpc.WithDisableRetry(),
	}}
}

// Probe calls grpc.health.v1.Health/Check for service ("" for the server as
// a whole) at host:port over an insecure connection: SERVING is Success, any
// other answer or failure to get one is Failure with the kubelet's message.
// Like the kubelet's blocking dial, a target that refuses connections is
// retried until the timeout. The error is always nil.
func (p *GRPCProber) Probe(ctx context.Context, host string, port int, service string, timeout time.Duration) (Result, string, error) {
	timeout = orDefault(timeout)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	addr := hostPort(host, port)

	// passthrough: the address is an IP:port (or a name the dialer
	// resolves), as with the kubelet's grpc.DialContext; no resolver
	// goroutine is needed.
	conn, err := grpc.NewClient("passthrough:///"+addr, p.dialOpts...)
	if err != nil {
		return Failure, fmt.Sprintf("error: failed to connect service at %q: %+v", addr, err), nil
	}
	defer func() { _ = conn.Close() }()
	if err := waitReady(ctx, conn); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return Failure, fmt.Sprintf("timeout: failed to connect service %q within %v: %+v", addr, timeout, err), nil
		}
		return Failure, fmt.Sprintf("error: failed to connect service at %q: %+v", addr, err), nil
	}

	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		if st, ok := status.FromError(err); ok {
			switch st.Code() {
			case codes.Unimplemented:
				return Failure, "error: this server does not implement the grpc health protocol (grpc.health.v1.Health): " + st.Message(), nil
			case codes.DeadlineExceeded:
				return Failure, fmt.Sprintf("timeout: health rpc did not complete within %v", timeout), nil
			}
		}
		return Failure, fmt.Sprintf("error: health rpc probe failed: %+v", err), nil
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return Failure, fmt.Sprintf("service unhealthy (responded with %q)", resp.GetStatus().String()), nil
	}
	return Success, "service is serving", nil
}

// waitReady connects conn and waits until it is ready or ctx ends: the
// kubelet's blocking dial (grpc.WithBlock, deprecated), which keeps
// retrying a refused connection until the probe's timeout.
func waitReady(ctx context.Context, conn *grpc.ClientConn) error {
	conn.Connect()
	for s := conn.GetState(); s != connectivity.Ready; s = conn.GetState() {
		if !conn.WaitForStateChange(ctx, s) {
			return ctx.Err()
		}
	}
	return nil
}
