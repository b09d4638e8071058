package probe

import (
	"context"
	"net"
	"net/netip"
	"strconv"
	"time"
)

// dial opens a TCP connection to addr ("host:port") that, once closed,
// leaves no TIME_WAIT on this host: SO_LINGER 0 makes close send RST
// instead of FIN. At 10,000 probes per second a FIN close would park tens
// of thousands of sockets in TIME_WAIT (60s each on Linux) and exhaust
// ephemeral ports; the kubelet sets SO_LINGER on its probe dialer for the
// same reason.
//
// A zero deadline means none beyond ctx.
func dial(ctx context.Context, addr string, deadline time.Time) (net.Conn, error) {
	// No TCP keep-alive: a probe's connection lives for one exchange, and
	// enabling it costs four setsockopt calls per probe.
	d := net.Dialer{Deadline: deadline, KeepAlive: -1}
	var (
		c   net.Conn
		err error
	)
	if ap, perr := netip.ParseAddrPort(addr); perr == nil {
		// Pod IPs need no resolving: skip the resolver's allocations.
		c, err = d.DialTCP(ctx, "tcp", netip.AddrPort{}, ap)
		if oe, ok := err.(*net.OpError); ok {
			// DialTCP reports the unset local address as ":0->";
			// keep the message the kubelet's dialer gives.
			oe.Source = nil
		}
	} else {
		c, err = d.DialContext(ctx, "tcp", addr)
	}
	if err != nil {
		return nil, err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		// Set after connect rather than in Dialer.Control: the same
		// setsockopt, portable, and a socket that never connected has no
		// TIME_WAIT to avoid.
		if err := tc.SetLinger(0); err != nil {
			_ = c.Close()
			return nil, err
		}
	}
	return c, nil
}

// hostPort is net.JoinHostPort(host, strconv.Itoa(port)) in one allocation.
func hostPort(host string, port int) string {
	var buf [80]byte
	b := buf[:0]
	if containsByte(host, ':') {
		b = append(b, '[')
		b = append(b, host...)
		b = append(b, ']')
	} else {
		b = append(b, host...)
	}
	b = append(b, ':')
	b = strconv.AppendInt(b, int64(port), 10)
	return string(b)
}

func containsByte(s string, c byte) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return true
		}
	}
	return false
}
