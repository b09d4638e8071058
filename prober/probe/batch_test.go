//go:build linux

package probe

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nodekit-dev/nodekit/internal/poll"
)

// outcome is what a probe's done (or Probe, TCP) gave, and when.
type outcome struct {
	res Result
	msg string
	err error
	at  time.Time
}

func (o outcome) errText() string {
	if o.err == nil {
		return ""
	}
	return o.err.Error()
}

// record returns a Done storing into *o, failing t if called twice.
func record(t *testing.T, o *outcome) Done {
	called := false
	return func(res Result, msg string, err error) {
		assert.False(t, called, "done called twice")
		called = true
		*o = outcome{res, msg, err, time.Now()}
	}
}

// drive polls b as a scheduler would until nothing is in flight; it
// returns the number of Polls.
func drive(b *Batch) int {
	polls := 0
	for b.Len() > 0 {
		d := b.Poll(time.Now())
		polls++
		time.Sleep(min(d, time.Millisecond))
	}
	return polls
}

// pause in a keepAliveTarget's response: the target waits 20 ms there.
const pause = "<pause>"

// keepAliveTarget answers each request with its canned response and then,
// ignoring "Connection: close", keeps the connection open until the client
// closes it.
func keepAliveTarget(t *testing.T, responses map[string]string) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				_ = c.SetDeadline(time.Now().Add(10 * time.Second))
				br := bufio.NewReader(c)
				line, err := br.ReadString('\n')
				if err != nil {
					return
				}
				for {
					l, err := br.ReadString('\n')
					if err != nil {
						return
					}
					if l == "\r\n" {
						break
					}
				}
				for i, part := range strings.Split(responses[strings.Fields(line + " x x")[1]], pause) {
					if i > 0 {
						time.Sleep(20 * time.Millisecond)
					}
					_, _ = io.WriteString(c, part)
				}
				_, _ = io.Copy(io.Discard, br) // until the client closes
			}()
		}
	}()
	t.Cleanup(func() { _ = l.Close(); wg.Wait() })
	_, port := hostPortOf(t, l.Addr().String())
	return port
}

// fullPort is a loopback port whose listener never accepts and whose
// accept queue is full: the kernel drops new SYNs, connects hang.
func fullPort(t *testing.T) int {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Close(fd) })
	require.NoError(t, syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}))
	require.NoError(t, syscall.Listen(fd, 0))
	sa, err := syscall.Getsockname(fd)
	require.NoError(t, err)
	port := sa.(*syscall.SockaddrInet4).Port
	addr := "127.0.0.1:" + strconv.Itoa(port)
	for i := 0; ; i++ {
		require.Less(t, i, 8, "accept queue never filled")
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err != nil {
			break // the queue is full
		}
		t.Cleanup(func() { _ = c.Close() })
	}
	return port
}

// TestBatchHTTP runs the same probes through HTTPProber.Probe and a Batch,
// all at once, and expects the same results and messages.
func TestBatchHTTP(t *testing.T) {
	tg := newTarget(t, false)
	tlsTarget := newTarget(t, true)
	tg.redirect("/to-https", tlsTarget.URL+"/ok")
	tg.redirect("/relative", "/echo/relative")
	raw := newRawTarget(t, map[string]string{
		"/continue":    "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
		"/http10":      "HTTP/1.0 200 OK\r\n\r\nuntil close",
		"/until-close": "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil close",
		"/te-cl":       "HTTP/1.1 200 OK\r\nContent-Length: 100\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
		"/204":         "HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n",
		"/304":         "HTTP/1.1 304 Not Modified\r\n\r\n",
		"/long-header": "HTTP/1.1 200 OK\r\nX-Long: " + strings.Repeat("v", 8<<10) + "\r\nContent-Length: 2\r\n\r\nok",
		"/garbage":     "hello\r\n\r\n",
		"/empty":       "",
		"/cut-head":    "HTTP/1.1 200 OK\r\nContent-Le",
		"/short":       "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc",
		"/bad-chunk":   "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
		"/two-cl":      "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nok",
		"/bad-loc":     "HTTP/1.1 302 Found\r\nLocation: http://[::1\r\nContent-Length: 0\r\n\r\n",
		"/body-hangs":  "hang",
		"/huge-head":   "HTTP/1.1 200 OK\r\nX-Big: " + strings.Repeat("v", 40<<10) + "\r\nContent-Length: 2\r\n\r\nok",
	})
	keep := keepAliveTarget(t, map[string]string{
		"/cl":      "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
		"/chunked": "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
		"/big":     "HTTP/1.1 200 OK\r\n\r\n" + strings.Repeat("y", 3*maxOutput),
		"/slow":    "HTTP/1.1 200 OK\r\nContent-Le" + pause + "ngth: 5\r\n\r\nab" + pause + "cde",
		"/slow-chunked": "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n" + pause +
			"1\r\n!\r\n" + pause + "0\r\n\r\n",
	})
	tg.redirect("/to-port", "http://"+tg.host+":"+strconv.Itoa(keep)+"/cl")
	full := fullPort(t) // first: freePort's port must stay free
	closed := freePort(t)

	at := func(port int, path string, timeout time.Duration) HTTPRequest {
		return HTTPRequest{Scheme: "http", Host: "127.0.0.1", Port: port, Path: path, Timeout: timeout}
	}
	rawURL := "http://127.0.0.1:" + strconv.Itoa(raw.port)
	hostHeader := tg.req("/relative")
	hostHeader.Headers = http.Header{"Host": {"svc.example"}, "X-Token": {"t"}}
	for _, tc := range []struct {
		name string
		req  HTTPRequest
		want Result
		msg  string // exact
		err  string
		// notBatchable: the Batch gives ErrNotBatchable, Probe succeeds.
		notBatchable bool
		// timeout: the answer is a timeout, due at req.Timeout.
		timeout bool
		// fast: the answer must come well before the timeout.
		fast bool
	}{
		{name: "200", req: tg.req("/ok"), want: Success, msg: "ok"},
		{name: "200 empty", req: tg.req("/empty"), want: Success, msg: ""},
		{name: "503", req: tg.req("/unavailable"), want: Failure, msg: "HTTP probe failed with statuscode: 503"},
		{name: "404", req: tg.req("/nothing"), want: Failure, msg: "HTTP probe failed with statuscode: 404"},
		{name: "same-host redirect followed", req: tg.req("/local"), want: Success, msg: "ok"},
		{name: "redirect keeps Host", req: hostHeader, want: Success, msg: "/echo/relative"},
		{name: "redirect to another port", req: tg.req("/to-port"), want: Success, msg: "ok"},
		{name: "redirect loop", req: tg.req("/loop"), want: Failure, msg: `Get "/loop": stopped after 10 redirects`},
		{name: "redirect elsewhere", req: tg.req("/elsewhere"), want: Warning, msg: "Probe terminated redirects, Response body: moved"},
		{name: "redirect to https", req: tg.req("/to-https"), want: Success, msg: "ok", notBatchable: true},
		{name: "chunked", req: tg.req("/chunked"), want: Success, msg: "chunk0;chunk1;chunk2;"},
		{name: "query", req: tg.req("/echo?a=b&c"), want: Success, msg: "/echo?a=b&c"},
		{name: "1 MiB body", req: tg.req("/big"), want: Success, msg: strings.Repeat("x", maxOutput)},
		{name: "hanging server", req: at(tg.port, "/hang", time.Second), want: Failure, timeout: true,
			msg: `Get "` + tg.URL + `/hang": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`},
		{name: "connect hangs", req: at(full, "/", 300*time.Millisecond), want: Failure, timeout: true,
			msg: `Get "http://127.0.0.1:` + strconv.Itoa(full) + `/": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`},
		{name: "refused", req: at(closed, "/path", time.Second), want: Failure, fast: true,
			msg: `Get "http://127.0.0.1:` + strconv.Itoa(closed) + `/path": dial tcp 127.0.0.1:` + strconv.Itoa(closed) + `: connect: connection refused`},
		{name: "keep-alive content-length", req: at(keep, "/cl", 5*time.Second), want: Success, msg: "ok", fast: true},
		{name: "keep-alive chunked", req: at(keep, "/chunked", 5*time.Second), want: Success, msg: "ok", fast: true},
		{name: "keep-alive until close, cut at 10 KiB", req: at(keep, "/big", 5*time.Second), want: Success, msg: strings.Repeat("y", maxOutput), fast: true},
		{name: "answer in pieces", req: at(keep, "/slow", 5*time.Second), want: Success, msg: "abcde", fast: true},
		{name: "chunks in pieces", req: at(keep, "/slow-chunked", 5*time.Second), want: Success, msg: "ok!", fast: true},
		{name: "head too big to batch", req: at(raw.port, "/huge-head", time.Second), want: Success, msg: "ok", notBatchable: true},
		{name: "1xx skipped", req: at(raw.port, "/continue", time.Second), want: Success, msg: "ok"},
		{name: "HTTP/1.0", req: at(raw.port, "/http10", time.Second), want: Success, msg: "until close"},
		{name: "until close", req: at(raw.port, "/until-close", time.Second), want: Success, msg: "until close"},
		{name: "chunked wins", req: at(raw.port, "/te-cl", time.Second), want: Success, msg: "ok"},
		{name: "204", req: at(raw.port, "/204", time.Second), want: Success, msg: ""},
		{name: "304", req: at(raw.port, "/304", time.Second), want: Warning, msg: "Probe terminated redirects, Response body: "},
		{name: "long header", req: at(raw.port, "/long-header", time.Second), want: Success, msg: "ok"},
		{name: "garbage", req: at(raw.port, "/garbage", time.Second), want: Failure,
			msg: `Get "` + rawURL + `/garbage": net/http: HTTP/1.x transport connection broken: malformed HTTP response "hello"`},
		{name: "no answer", req: at(raw.port, "/empty", time.Second), want: Failure, msg: `Get "` + rawURL + `/empty": EOF`},
		{name: "cut head", req: at(raw.port, "/cut-head", time.Second), want: Failure, msg: `Get "` + rawURL + `/cut-head": unexpected EOF`},
		{name: "short body", req: at(raw.port, "/short", time.Second), want: Failure, err: "unexpected EOF"},
		{name: "bad chunk", req: at(raw.port, "/bad-chunk", time.Second), want: Failure, err: "invalid byte in chunk length"},
		{name: "two content-lengths", req: at(raw.port, "/two-cl", time.Second), want: Failure,
			msg: `Get "` + rawURL + `/two-cl": net/http: HTTP/1.x transport connection broken: http: message cannot contain multiple Content-Length headers; got ["1" "2"]`},
		{name: "bad location", req: at(raw.port, "/bad-loc", time.Second), want: Failure,
			msg: `Get "` + rawURL + `/bad-loc": failed to parse Location header "http://[::1": parse "http://[::1": missing ']' in host`},
		{name: "body hangs", req: at(raw.port, "/body-hangs", 300*time.Millisecond), want: Failure, timeout: true,
			err: "context deadline exceeded (Client.Timeout or context cancellation while reading body)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := NewHTTP(HTTPOptions{})
			var viaProbe, viaBatch outcome
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, msg, err := p.Probe(context.Background(), tc.req)
				viaProbe = outcome{res, msg, err, time.Now()}
			}()
			b := p.NewBatch()
			start := time.Now()
			require.True(t, b.StartHTTP(start, tc.req, record(t, &viaBatch)))
			assert.Zero(t, viaBatch.at, "done called from StartHTTP")
			drive(b)
			wg.Wait()

			// Probe is the reference; it also gives what the case says.
			assert.Equal(t, tc.want, viaProbe.res, "Probe")
			assert.Equal(t, tc.msg, viaProbe.msg, "Probe")
			assert.Equal(t, tc.err, viaProbe.errText(), "Probe")
			if tc.notBatchable {
				assert.Equal(t, outcome{res: Unknown, err: ErrNotBatchable}, outcome{res: viaBatch.res, msg: viaBatch.msg, err: viaBatch.err})
				return
			}
			assert.Equal(t, viaProbe.res, viaBatch.res, "Batch")
			assert.Equal(t, viaProbe.msg, viaBatch.msg, "Batch")
			assert.Equal(t, viaProbe.errText(), viaBatch.errText(), "Batch")
			elapsed := viaBatch.at.Sub(start)
			if tc.timeout {
				assert.GreaterOrEqual(t, elapsed, tc.req.Timeout, "finished before the deadline")
				assert.LessOrEqual(t, elapsed, tc.req.Timeout+50*time.Millisecond, "finished late")
			}
			if tc.fast {
				assert.Less(t, elapsed, 500*time.Millisecond)
			}
		})
	}
}

// TestSetSockaddr: the addresses a Batch connects to, as the kernel reads
// them (IPv6 checked here since the tests dial nothing but 127.0.0.1).
func TestSetSockaddr(t *testing.T) {
	var sa batchSockaddr
	raw := func(n uintptr) []byte { return unsafe.Slice((*byte)(unsafe.Pointer(&sa)), n) }

	family, size := setSockaddr(&sa, netip.MustParseAddrPort("10.1.2.3:8080"))
	assert.Equal(t, uintptr(syscall.AF_INET), family)
	assert.Equal(t, uintptr(syscall.SizeofSockaddrInet4), size)
	b := raw(size)
	assert.Equal(t, uint16(syscall.AF_INET), binary.NativeEndian.Uint16(b))
	assert.Equal(t, []byte{0x1f, 0x90, 10, 1, 2, 3}, b[2:8])

	family, size = setSockaddr(&sa, netip.MustParseAddrPort("[fd00::1:2]:443"))
	assert.Equal(t, uintptr(syscall.AF_INET6), family)
	assert.Equal(t, uintptr(syscall.SizeofSockaddrInet6), size)
	b = raw(size)
	assert.Equal(t, uint16(syscall.AF_INET6), binary.NativeEndian.Uint16(b))
	assert.Equal(t, []byte{0x01, 0xbb, 0, 0, 0, 0}, b[2:8], "port, flow info")
	want := netip.MustParseAddr("fd00::1:2").As16()
	assert.Equal(t, want[:], b[8:24])
	assert.Equal(t, []byte{0, 0, 0, 0}, b[24:28], "scope")
}

// TestBatchReset: a target resetting the connection gives the read error
// net's Read gives, before the head or within the body.
func TestBatchReset(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			br := bufio.NewReader(c)
			line, _ := br.ReadString('\n')
			for {
				if l, err := br.ReadString('\n'); err != nil || l == "\r\n" {
					break
				}
			}
			if strings.Contains(line, "/body") {
				_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc")
				time.Sleep(10 * time.Millisecond)
			}
			_ = c.(*net.TCPConn).SetLinger(0)
			_ = c.Close() // RST
		}
	}()
	t.Cleanup(func() { _ = l.Close(); wg.Wait() })
	_, port := hostPortOf(t, l.Addr().String())
	// The local port differs from one connection to the next.
	ephemeral := regexp.MustCompile(`127\.0\.0\.1:\d+->`)
	for _, tc := range []struct{ path, msg, err string }{
		{path: "/head", msg: `Get "http://127.0.0.1:P/head": read tcp 127.0.0.1:E->127.0.0.1:P: read: connection reset by peer`},
		{path: "/body", err: `read tcp 127.0.0.1:E->127.0.0.1:P: read: connection reset by peer`},
	} {
		t.Run(tc.path, func(t *testing.T) {
			fix := func(s string) string {
				return strings.ReplaceAll(ephemeral.ReplaceAllString(s, "127.0.0.1:E->"), ":"+strconv.Itoa(port), ":P")
			}
			req := HTTPRequest{Host: "127.0.0.1", Port: port, Path: tc.path, Timeout: time.Second}
			p := NewHTTP(HTTPOptions{})
			res, msg, err := p.Probe(context.Background(), req)
			assert.Equal(t, Failure, res)
			assert.Equal(t, tc.msg, fix(msg))
			assert.Equal(t, tc.err, fix(outcome{err: err}.errText()))

			b := p.NewBatch()
			var o outcome
			require.True(t, b.StartHTTP(time.Now(), req, record(t, &o)))
			drive(b)
			assert.Equal(t, Failure, o.res)
			assert.Equal(t, tc.msg, fix(o.msg))
			assert.Equal(t, tc.err, fix(o.errText()))
		})
	}
}

// TestBatchBigBody: a 1 MiB body is read to the 10 KiB cap and no further.
func TestBatchBigBody(t *testing.T) {
	tg := newTarget(t, false)
	b := NewHTTP(HTTPOptions{}).NewBatch()
	var o outcome
	require.True(t, b.StartHTTP(time.Now(), tg.req("/big"), record(t, &o)))
	drive(b)
	require.NoError(t, o.err)
	assert.Equal(t, Success, o.res)
	assert.Equal(t, strings.Repeat("x", maxOutput), o.msg)
	// The head (~100 bytes), the 10 KiB of body, and at most one recv's
	// worth more.
	assert.Less(t, b.received, int64(maxOutput+8<<10), "read %d bytes of a %d byte response", b.received, bigBody)
}

// TestBatchBackoff: a target that does not answer is polled less and less
// often, and once more at its deadline.
func TestBatchBackoff(t *testing.T) {
	tg := newTarget(t, false)
	b := NewHTTP(HTTPOptions{}).NewBatch()
	req := tg.req("/hang")
	req.Timeout = 300 * time.Millisecond
	var o outcome
	start := time.Now()
	require.True(t, b.StartHTTP(start, req, record(t, &o)))
	polls := drive(b)
	assert.Equal(t, Failure, o.res)
	assert.Contains(t, o.msg, "Client.Timeout exceeded while awaiting headers")
	elapsed := o.at.Sub(start)
	assert.GreaterOrEqual(t, elapsed, req.Timeout)
	assert.LessOrEqual(t, elapsed, req.Timeout+50*time.Millisecond)
	// 1, 3, 7, 15, 31 ms, then every 16 ms, then the deadline: ~23.
	assert.LessOrEqual(t, b.recvs, int64(30), "recv calls over %d Polls", polls)
	assert.GreaterOrEqual(t, b.recvs, int64(15))
}

// TestBatchPollWait: what Poll says about the next one.
func TestBatchPollWait(t *testing.T) {
	tg := newTarget(t, false)
	b := NewHTTP(HTTPOptions{}).NewBatch()
	now := time.Now()
	assert.Zero(t, b.Poll(now), "nothing pending")
	var o outcome
	require.True(t, b.StartHTTP(now, tg.req("/hang"), record(t, &o)))
	assert.Equal(t, 1, b.Len())
	d := b.Poll(now)
	assert.Equal(t, batchFirstPoll, d, "first harvest 1 ms after the request")
	d = b.Poll(now.Add(d))
	assert.Equal(t, 2*batchFirstPoll, d, "then backing off")
	assert.Zero(t, o.at, "not finished")
	// At the deadline it ends, whatever the poll schedule said.
	b.Poll(now.Add(time.Second))
	assert.Equal(t, 0, b.Len())
	assert.Equal(t, Failure, o.res)
	assert.Contains(t, o.msg, "Client.Timeout exceeded while awaiting headers")
}

// TestBatchCallerClock: the caller's clock, not time.Now, decides what is
// late (the prober may run on a fake clock).
func TestBatchCallerClock(t *testing.T) {
	tg := newTarget(t, false)
	closed := freePort(t)
	b := NewHTTP(HTTPOptions{}).NewBatch()
	fake := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC) // long past, no monotonic reading
	var refused, hang outcome
	require.True(t, b.StartHTTP(fake, HTTPRequest{Host: "127.0.0.1", Port: closed}, record(t, &refused)))
	require.True(t, b.StartHTTP(fake, tg.req("/hang"), record(t, &hang)))
	b.Poll(fake)
	assert.Equal(t, Failure, refused.res)
	assert.Contains(t, refused.msg, "connect: connection refused")
	assert.Zero(t, hang.at)
	b.Poll(fake.Add(999 * time.Millisecond))
	assert.Zero(t, hang.at, "before its deadline")
	b.Poll(fake.Add(time.Second))
	assert.Equal(t, Failure, hang.res)
	assert.Contains(t, hang.msg, "Client.Timeout exceeded while awaiting headers")
	assert.Equal(t, 0, b.Len())
}

// TestBatchMany: many probes in flight at once against one server.
func TestBatchMany(t *testing.T) {
	tg := newTarget(t, false)
	b := NewHTTP(HTTPOptions{}).NewBatch()
	const n = 200
	outs := make([]outcome, n)
	now := time.Now()
	for i := range outs {
		require.True(t, b.StartHTTP(now, tg.req("/ok"), record(t, &outs[i])))
	}
	assert.Equal(t, n, b.Len())
	drive(b)
	for i, o := range outs {
		assert.Equal(t, outcome{res: Success, msg: "ok"}, outcome{res: o.res, msg: o.msg, err: o.err}, "probe %d", i)
	}
}

func TestBatchTCP(t *testing.T) {
	_, open := listen(t)
	full := fullPort(t) // first: freePort's port must stay free
	closed := freePort(t)
	for _, tc := range []struct {
		name    string
		port    int
		timeout time.Duration
		want    Result
		msg     string
	}{
		{"open", open, time.Second, Success, ""},
		{"closed", closed, time.Second, Failure, "dial tcp 127.0.0.1:" + strconv.Itoa(closed) + ": connect: connection refused"},
		{"connect hangs", full, 300 * time.Millisecond, Failure, "dial tcp 127.0.0.1:" + strconv.Itoa(full) + ": i/o timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, msg, err := TCP(context.Background(), "127.0.0.1", tc.port, tc.timeout)
			require.NoError(t, err)
			assert.Equal(t, tc.want, res, "TCP")
			assert.Equal(t, tc.msg, msg, "TCP")

			b := NewHTTP(HTTPOptions{}).NewBatch()
			var o outcome
			start := time.Now()
			require.True(t, b.StartTCP(start, "127.0.0.1", tc.port, tc.timeout, record(t, &o)))
			assert.Zero(t, o.at, "done called from StartTCP")
			drive(b)
			require.NoError(t, o.err)
			assert.Equal(t, tc.want, o.res, "Batch")
			assert.Equal(t, tc.msg, o.msg, "Batch")
			elapsed := o.at.Sub(start)
			if tc.want == Success || tc.port == closed {
				assert.Less(t, elapsed, 100*time.Millisecond)
			} else {
				assert.GreaterOrEqual(t, elapsed, tc.timeout)
				assert.LessOrEqual(t, elapsed, tc.timeout+50*time.Millisecond)
			}
		})
	}
}

// TestBatchNoTimeWait: batched probes close with RST too.
func TestBatchNoTimeWait(t *testing.T) {
	const n = 200
	tg := newTarget(t, false)
	_, tcpPort := listen(t)
	b := NewHTTP(HTTPOptions{}).NewBatch()
	outs := make([]outcome, 2*n)
	now := time.Now()
	for i := 0; i < n; i++ {
		require.True(t, b.StartHTTP(now, tg.req("/ok"), record(t, &outs[i])))
		require.True(t, b.StartTCP(now, "127.0.0.1", tcpPort, time.Second, record(t, &outs[n+i])))
	}
	drive(b)
	for i, o := range outs {
		require.Equal(t, Success, o.res, "probe %d: %s %v", i, o.msg, o.err)
	}
	poll.Eventually(t, func() bool { return closed(t, tg.port) && closed(t, tcpPort) }, 5*time.Second, 10*time.Millisecond,
		"every probe connection closed")
	assert.Zero(t, timeWaits(t, tg.port), "http")
	assert.Zero(t, timeWaits(t, tcpPort), "tcp")
}

// TestBatchClose: Close ends every probe in flight with an error.
func TestBatchClose(t *testing.T) {
	tg := newTarget(t, false)
	_, open := listen(t)
	b := NewHTTP(HTTPOptions{}).NewBatch()
	outs := make([]outcome, 4)
	now := time.Now()
	require.True(t, b.StartHTTP(now, tg.req("/hang"), record(t, &outs[0])))
	require.True(t, b.StartHTTP(now, tg.req("/hang"), record(t, &outs[1])))
	require.True(t, b.StartTCP(now, "127.0.0.1", open, time.Second, record(t, &outs[2])))
	require.True(t, b.StartHTTP(now, HTTPRequest{Host: "127.0.0.1", Port: freePort(t)}, record(t, &outs[3])))
	b.Poll(now) // nothing due yet but the settled ones
	b.Close()
	assert.Equal(t, 0, b.Len())
	for i, o := range outs {
		if i >= 2 {
			// Settled at Start, delivered by the Poll.
			assert.NoError(t, o.err, i)
			continue
		}
		assert.Equal(t, Unknown, o.res, i)
		assert.Empty(t, o.msg, i)
		assert.ErrorIs(t, o.err, errBatchClosed, i)
	}
	assert.False(t, b.StartHTTP(now, tg.req("/ok"), func(Result, string, error) { t.Error("called") }))
	assert.False(t, b.StartTCP(now, "127.0.0.1", open, time.Second, func(Result, string, error) { t.Error("called") }))
	assert.Zero(t, b.Poll(now))
}

// TestBatchRefuses: what a Batch does not take, it leaves untouched.
func TestBatchRefuses(t *testing.T) {
	p := NewHTTP(HTTPOptions{})
	never := func(Result, string, error) { t.Error("done called") }
	b := p.NewBatch()
	for _, req := range []HTTPRequest{
		{Scheme: "https", Host: "127.0.0.1", Port: 443},
		{Scheme: "http", Host: "localhost", Port: 80},
		{Scheme: "http", Host: "fe80::1%eth0", Port: 80},
		{Scheme: "http", Host: "::ffff:127.0.0.1", Port: 80},
		{Scheme: "http", Host: "127.0.0.1", Port: 0},
		{Scheme: "http", Host: "127.0.0.1", Port: 70000},
		{Scheme: "http", Host: "127.0.0.1", Port: 80, Path: "/a%20b"},
		{Scheme: "http", Host: "127.0.0.1", Port: 80, Headers: http.Header{"Connection": {"keep-alive"}}},
	} {
		assert.False(t, b.StartHTTP(time.Now(), req, never), "%+v", req)
	}
	assert.False(t, b.StartTCP(time.Now(), "localhost", 80, time.Second, never))
	assert.False(t, b.StartTCP(time.Now(), "127.0.0.1", 0, time.Second, never))
	assert.False(t, NewHTTP(HTTPOptions{FollowNonLocalRedirects: true}).NewBatch().StartHTTP(time.Now(), HTTPRequest{Host: "127.0.0.1", Port: 80}, never))
	assert.Equal(t, 0, b.Len())
	assert.Zero(t, b.Poll(time.Now()))
}

// TestBatchStartFromDone: a done may start probes; Poll still returns.
func TestBatchStartFromDone(t *testing.T) {
	closed := freePort(t)
	b := NewHTTP(HTTPOptions{}).NewBatch()
	runs := 0
	var done Done
	done = func(res Result, msg string, err error) {
		assert.Equal(t, Failure, res)
		assert.Contains(t, msg, "connection refused")
		if runs++; runs < 5 {
			require.True(t, b.StartTCP(time.Now(), "127.0.0.1", closed, time.Second, done))
		}
	}
	require.True(t, b.StartTCP(time.Now(), "127.0.0.1", closed, time.Second, done))
	b.Poll(time.Now())
	assert.LessOrEqual(t, runs, 1, "at most one per Poll")
	drive(b)
	assert.Equal(t, 5, runs)
}

// BenchmarkBatchHTTPProbe runs b.N probes through one Batch, 10 started
// every millisecond (10,000/s) as the prober's scheduler would, against a
// target in a child process: ns/op is the pace, cpu-ns/op this process's
// CPU (user + kernel) per probe.
func BenchmarkBatchHTTPProbe(b *testing.B) {
	port, _ := startTarget(b)
	req := HTTPRequest{Scheme: "http", Host: "127.0.0.1", Port: port, Path: "/ok", Timeout: time.Second}
	benchBatch(b, func(batch *Batch, now time.Time, done Done) bool { return batch.StartHTTP(now, req, done) })
}

// BenchmarkBatchTCPProbe is BenchmarkBatchHTTPProbe for tcpSocket probes.
func BenchmarkBatchTCPProbe(b *testing.B) {
	_, port := startTarget(b)
	benchBatch(b, func(batch *Batch, now time.Time, done Done) bool {
		return batch.StartTCP(now, "127.0.0.1", port, time.Second, done)
	})
}

func benchBatch(b *testing.B, start func(*Batch, time.Time, Done) bool) {
	const (
		perTick = 10
		tick    = time.Millisecond
	)
	batch := NewHTTP(HTTPOptions{}).NewBatch()
	defer batch.Close()
	failed := 0
	done := func(res Result, msg string, err error) {
		if res != Success || err != nil {
			if failed++; failed > 1+b.N/10000 { // see measure
				b.Fatalf("%d failed probes, last: %s %q %v", failed, res, msg, err)
			}
			b.Logf("probe failed: %s %q %v", res, msg, err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	user0, sys0 := cpuTime(b)
	polls, started := 0, 0
	next := time.Now()
	for started < b.N || batch.Len() > 0 {
		now := time.Now()
		wait := batch.Poll(now)
		polls++
		for ; started < b.N && !next.After(now); next = next.Add(tick) {
			for i := 0; i < perTick && started < b.N; i++ {
				if !start(batch, now, done) {
					b.Fatal("not batched")
				}
				started++
			}
		}
		if started < b.N {
			if until := next.Sub(now); wait == 0 || until < wait {
				wait = until
			}
		} else if batch.Len() > 0 && wait == 0 {
			wait = batchFirstPoll
		}
		time.Sleep(wait)
	}
	b.StopTimer()
	user1, sys1 := cpuTime(b)
	b.ReportMetric(float64(user1-user0+sys1-sys0)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(sys1-sys0)/float64(b.N), "sys-ns/op")
	b.ReportMetric(float64(polls)/float64(b.N), "polls/op")
	if failed > 0 {
		b.ReportMetric(float64(failed), "failed")
	}
}
