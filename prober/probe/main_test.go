package probe

import (
	"bufio"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if os.Getenv(targetEnv) != "" {
		runTarget() // a benchmark's target process; never returns
	}
	goleak.VerifyTestMain(m)
}

// freePort returns a loopback port nothing listens on: listen, then close.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	return port
}

// hostPortOf splits a listener's address.
func hostPortOf(t testing.TB, addr string) (string, int) {
	t.Helper()
	h, p, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	port, err := strconv.Atoi(p)
	require.NoError(t, err)
	return h, port
}

// timeWaits counts sockets in TIME_WAIT (state 06) from or to
// 127.0.0.1:port in /proc/net/tcp and /proc/net/tcp6 (v4-mapped).
func timeWaits(t testing.TB, port int) int {
	t.Helper()
	return socketStates(t, port)["06"]
}

// closed says every connection from or to 127.0.0.1:port is closed: no
// socket on it is in a state before TIME_WAIT (a TIME_WAIT one is closed,
// and left for timeWaits to see). Waiting for it is waiting for each
// side's close to have had its effect.
func closed(t testing.TB, port int) bool {
	t.Helper()
	for st := range socketStates(t, port) {
		if st != "06" && st != "0A" { // TIME_WAIT, LISTEN
			return false
		}
	}
	return true
}

// socketStates counts the sockets from or to 127.0.0.1:port in
// /proc/net/tcp and /proc/net/tcp6 (v4-mapped) by state, as /proc prints
// it (hex: 01 ESTABLISHED, 06 TIME_WAIT, 0A LISTEN, ...).
func socketStates(t testing.TB, port int) map[string]int {
	t.Helper()
	// 127.0.0.1 as /proc prints it: little-endian hex words.
	v4 := "0100007F:" + strings.ToUpper(strconv.FormatInt(int64(port)|0x10000, 16)[1:])
	v6 := "0000000000000000FFFF00000100007F:" + v4[len("0100007F:"):]
	n := map[string]int{}
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(file)
		if os.IsNotExist(err) {
			continue
		}
		require.NoError(t, err)
		s := bufio.NewScanner(f)
		s.Scan() // header
		for s.Scan() {
			// sl local_address rem_address st ...
			fields := strings.Fields(s.Text())
			if len(fields) < 4 {
				continue
			}
			for _, a := range fields[1:3] {
				if a == v4 || a == v6 {
					n[fields[3]]++
					break
				}
			}
		}
		require.NoError(t, s.Err())
		require.NoError(t, f.Close())
	}
	return n
}
