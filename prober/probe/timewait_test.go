package probe

import (
	"context"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nodekit-dev/nodekit/internal/poll"
)

// TestNoTimeWait: probes close with RST, so neither side of any probe
// connection lingers in TIME_WAIT.
func TestNoTimeWait(t *testing.T) {
	_, err := os.Stat("/proc/net/tcp")
	require.NoError(t, err, "the TIME_WAIT check reads /proc/net/tcp (Linux)")
	const n = 200

	t.Run("control", func(t *testing.T) {
		// A plain close by the client leaves it in TIME_WAIT: shows the
		// check can see one.
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer l.Close()
		_, port := hostPortOf(t, l.Addr().String())
		served := make(chan struct{})
		go func() {
			defer close(served)
			c, err := l.Accept()
			if err != nil {
				return
			}
			_, _ = io.Copy(io.Discard, c) // until the client's FIN
			_ = c.Close()
		}()
		c, err := net.Dial("tcp", l.Addr().String())
		require.NoError(t, err)
		require.NoError(t, c.Close())
		<-served
		poll.Eventually(t, func() bool { return timeWaits(t, port) > 0 }, 2*time.Second, 10*time.Millisecond)
	})

	t.Run("http", func(t *testing.T) {
		tg := newTarget(t, false)
		p := NewHTTP(HTTPOptions{})
		for i := 0; i < n; i++ {
			res, msg, err := p.Probe(context.Background(), tg.req("/ok"))
			require.NoError(t, err)
			require.Equal(t, Success, res, msg)
		}
		// The server closes after its response: once every connection is
		// closed on both sides, a TIME_WAIT would be there to see.
		poll.Eventually(t, func() bool { return closed(t, tg.port) }, 5*time.Second, 10*time.Millisecond, "every probe connection closed")
		assert.Zero(t, timeWaits(t, tg.port))
	})

	t.Run("tcp", func(t *testing.T) {
		_, port := listen(t)
		for i := 0; i < n; i++ {
			res, msg, err := TCP(context.Background(), "127.0.0.1", port, time.Second)
			require.NoError(t, err)
			require.Equal(t, Success, res, msg)
		}
		poll.Eventually(t, func() bool { return closed(t, port) }, 5*time.Second, 10*time.Millisecond, "every probe connection closed")
		assert.Zero(t, timeWaits(t, port))
	})
}
