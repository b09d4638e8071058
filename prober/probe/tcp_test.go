package probe

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// listen opens a loopback listener that accepts and closes connections
// until the test ends.
func listen(t testing.TB) (net.Listener, int) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	t.Cleanup(func() { _ = l.Close(); <-done })
	_, port := hostPortOf(t, l.Addr().String())
	return l, port
}

func TestTCP(t *testing.T) {
	_, open := listen(t)
	closed := freePort(t)
	for _, tc := range []struct {
		name    string
		port    int
		want    Result
		message string
	}{
		{"open", open, Success, ""},
		{"closed", closed, Failure, "connection refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, msg, err := TCP(context.Background(), "127.0.0.1", tc.port, time.Second)
			require.NoError(t, err)
			assert.Equal(t, tc.want, res)
			if tc.message == "" {
				assert.Empty(t, msg)
			} else {
				assert.Contains(t, msg, tc.message)
			}
		})
	}
}

func TestTCPCanceled(t *testing.T) {
	_, port := listen(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, msg, err := TCP(ctx, "127.0.0.1", port, time.Second)
	require.NoError(t, err)
	assert.Equal(t, Failure, res)
	assert.Contains(t, msg, "canceled")
}

func TestHostPort(t *testing.T) {
	for _, tc := range []struct {
		host string
		port int
		want string
	}{
		{"127.0.0.1", 80, "127.0.0.1:80"},
		{"::1", 8080, "[::1]:8080"},
		{"pod.local", 65535, "pod.local:65535"},
	} {
		assert.Equal(t, tc.want, hostPort(tc.host, tc.port))
		assert.Equal(t, net.JoinHostPort(tc.host, strconv.Itoa(tc.port)), hostPort(tc.host, tc.port))
	}
}
