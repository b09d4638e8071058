package probe

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// grpcTarget serves on loopback until the test ends, with the health
// service if withHealth; "" and "up" are SERVING, "down" NOT_SERVING.
func grpcTarget(t testing.TB, withHealth bool) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := grpc.NewServer()
	if withHealth {
		h := health.NewServer()
		h.SetServingStatus("up", healthpb.HealthCheckResponse_SERVING)
		h.SetServingStatus("down", healthpb.HealthCheckResponse_NOT_SERVING)
		healthpb.RegisterHealthServer(s, h)
	}
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Serve(l) }()
	t.Cleanup(func() { s.Stop(); <-done })
	_, port := hostPortOf(t, l.Addr().String())
	return port
}

// silentTarget accepts connections and never speaks.
func silentTarget(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				_ = c.Close()
			}
		}()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() { _ = l.Close(); <-done })
	_, port := hostPortOf(t, l.Addr().String())
	return port
}

func TestGRPC(t *testing.T) {
	healthy := grpcTarget(t, true)
	bare := grpcTarget(t, false)
	closed := freePort(t)
	silent := silentTarget(t)
	const timeout = 300 * time.Millisecond
	for _, tc := range []struct {
		name    string
		port    int
		service string
		message string
		want    Result
	}{
		{"serving", healthy, "", "service is serving", Success},
		{"named serving", healthy, "up", "service is serving", Success},
		{"not serving", healthy, "down", `service unhealthy (responded with "NOT_SERVING")`, Failure},
		{"unknown service", healthy, "nope", "error: health rpc probe failed: rpc error: code = NotFound desc = unknown service", Failure},
		{"no health service", bare, "", "error: this server does not implement the grpc health protocol (grpc.health.v1.Health): unknown service grpc.health.v1.Health", Failure},
		{"closed port", closed, "", `timeout: failed to connect service "127.0.0.1:` + strconv.Itoa(closed) + `" within 300ms: context deadline exceeded`, Failure},
		{"silent server", silent, "", `timeout: failed to connect service "127.0.0.1:` + strconv.Itoa(silent) + `" within 300ms: context deadline exceeded`, Failure},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			res, msg, err := NewGRPC(GRPCOptions{}).Probe(context.Background(), "127.0.0.1", tc.port, tc.service, timeout)
			require.NoError(t, err)
			assert.Equal(t, tc.want, res)
			assert.Equal(t, tc.message, msg)
			assert.Less(t, time.Since(start), 2*time.Second)
		})
	}
}
