package probe

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"syscall"
	"time"
)

// Done receives a batched probe's outcome, with the same meaning as the
// (Result, string, error) that HTTPProber.Probe and TCP return.
type Done func(res Result, msg string, err error)

// ErrNotBatchable is the err a Batch gives a probe it started but cannot
// finish itself (a redirect the fast path would hand to net/http, e.g. to https):
// the caller runs the whole probe again the ordinary way (HTTPProber.Probe).
var ErrNotBatchable = errors.New("probe: not batchable")

// errBatchClosed is what Close gives the probes it aborts.
var errBatchClosed = errors.New("probe: prober stopped")

// Batch runs plain-HTTP (fast path) and TCP probes of IP addresses as an
// event loop driven by one goroutine, without a goroutine, a netpoller
// registration or a blocking call per probe.
//
// # Why
//
// On this kind of node a probe's CPU is dominated by sleeping and waking,
// not by the HTTP exchange: measured on a 2-core VM at 10,000 loopback
// probes a second, Go's net package (a goroutine per probe, blocking
// reads through the netpoller) costs 31-42 µs of CPU per probe, kernel
// included, while one goroutine that wakes every millisecond, harvests the
// answers already queued with recv(MSG_DONTWAIT), closes those sockets
// (RST), and opens the probes now due with non-blocking
// socket/connect/write through raw system calls costs 18-21 µs, close to
// the same loop in C (15-18 µs). A Batch is that loop: Start* opens the
// socket, connects and writes the request at once; Poll, called at every
// wake-up, reads what has arrived and finishes what is complete. Paced at
// 10,000 probes a second, 10 per wake-up, it costs ~21 µs per HTTP probe
// and ~15 µs per TCP probe with 2 allocations and 0 respectively
// (BenchmarkBatchHTTPProbe, BenchmarkBatchTCPProbe). Syscalls per HTTP
// probe: socket, setsockopt, connect, sendto, recvfrom, close.
//
// # Trade-offs
//
//   - An answer is read at the first Poll after it arrived, not when it
//     arrives: results (and their latency metrics) are up to one poll late.
//     A socket that keeps answering EAGAIN is polled less and less often:
//     1 ms after the request, then 2, 4, 8 and every 16 ms, so a hanging
//     target costs ~65 recv calls a second rather than one per wake-up; an
//     answer that is late is therefore read up to 16 ms late.
//   - Deadlines are checked per poll: every probe is polled once more at
//     its deadline, and finished then if still incomplete, so a timeout is
//     as late as the caller's wake-up after the deadline.
//   - The answer is judged by the fast path's own parser over the bytes
//     received (plus EOF, the read error or a timeout as the fast path
//     would have seen them), so results and messages are HTTPProber.Probe's.
//     A response is complete as soon as its head and body (per
//     Content-Length or chunked framing, or the 10 KiB body cap) are in:
//     a server ignoring "Connection: close" is not waited for. The first
//     recv takes at most 12 KiB, later ones 4 KiB, so a large body is read
//     little past the cap. An answer that needs more than 32 KiB to
//     complete (a huge head or chunk framing, which the fast path would
//     read on) and a redirect the fast path hands to net/http (to https,
//     with credentials) end with ErrNotBatchable: the caller probes again
//     with HTTPProber.Probe, so that target sees a second request.
//   - Linux only (raw socket calls); elsewhere Start* always return false.
//
// # Use
//
// One goroutine owns a Batch (it is not safe for concurrent use). It calls
// Start* for due probes (a false return means: run it the ordinary way)
// and Poll whenever it wakes up, and sleeps at most the duration Poll
// returns. A probe just started wants its first Poll 1 ms later (or at
// once, when its socket failed at once): a caller that starts probes after
// Poll must wake up within ~1 ms, or call Poll again for the new wait.
// done is called exactly once per started probe, from Poll or Close, never
// from Start*; it may call Start* and Close, not Poll.
type Batch struct {
	p    *HTTPProber
	base time.Time // time origin of the int64 clock below

	q    []*batchProbe // in flight, a min-heap by next poll
	free []*batchProbe // finished, for reuse
	bufs [][]byte      // partial answers' buffers, for reuse

	scratch []byte // the first recv of every answer
	body    [maxOutput]byte
	br      *bufio.Reader // reads src, as the fast path reads a conn
	src     batchSource

	polling  bool
	pollT    int64
	stepping *batchProbe // the probe Poll is working on
	closed   bool

	// For tests: recv calls made and bytes received.
	recvs, received int64
}

const (
	// batchFirstPoll is how long after its request a probe is first
	// polled; each EAGAIN doubles the wait up to batchMaxPoll.
	batchFirstPoll = time.Millisecond
	batchMaxPoll   = 16 * time.Millisecond
	// batchPollSlack: a probe due this soon is polled now, so that probes
	// due close together share a wake-up (never past a deadline).
	batchPollSlack = 200 * time.Microsecond
	// batchFirstRecv is the first recv's size: a head of up to 2 KiB and
	// the whole body cap in one call. Later recvs take batchNextRecv.
	batchFirstRecv = maxOutput + 2<<10
	batchNextRecv  = 4 << 10
	// batchMaxResponse bounds the bytes kept for one answer.
	batchMaxResponse = 32 << 10
	// batchMaxBufs bounds the partial-answer buffers kept for reuse.
	batchMaxBufs = 64
)

// Probe states.
const (
	// stConnect: HTTP: the request is not fully written (the connect may
	// still be in progress); TCP: the connect is in progress.
	stConnect uint8 = iota
	// stRead: HTTP: the request is written, the answer awaited.
	stRead
	// stResult: the outcome is known, delivered at the next Poll.
	stResult
)

// batchProbe is one probe in flight.
type batchProbe struct {
	idx     int           // in Batch.q; -1 when not queued
	at      int64         // next poll, on Batch's clock
	dl      int64         // deadline, on Batch's clock
	backoff time.Duration // the wait after the next EAGAIN
	fd      int           // -1: none
	state   uint8
	tcp     bool
	conn    bool // the connect is known to have completed
	done    Done

	ap netip.AddrPort // where fd connects
	sa batchSockaddr  // ap, for connect

	res Result // stResult: the outcome
	msg string
	err error

	// HTTP only.
	hop     fastHop  // the first hop
	h       *fastHop // the current hop
	headers http.Header
	made    int    // requests made, this one included
	req     []byte // h's request
	written int    // bytes of req written
	buf     []byte // the answer so far, when one recv did not bring it all
}

// batchSource yields the bytes of an answer received so far, then err:
// io.EOF, the read error, a timeout, or errMore when more may come.
type batchSource struct {
	data []byte
	err  error
}

func (s *batchSource) Read(p []byte) (int, error) {
	if len(s.data) == 0 {
		return 0, s.err
	}
	n := copy(p, s.data)
	s.data = s.data[n:]
	return n, nil
}

// errMore: the bytes received so far end before the answer does.
var errMore = errors.New("probe: answer incomplete")

// bgCtx and batchNever make requestError and bodyError judge by the error
// alone, not by time.Now: a Batch passes a timeout error
// (os.ErrDeadlineExceeded, what a conn past its deadline returns) when it
// finds a probe incomplete at its deadline by the caller's clock; anything
// else it reads, even at that last poll, arrived (to within a poll) in
// time, and the fast path would have reported it as is.
var (
	bgCtx      = context.Background()
	batchNever = time.Unix(1<<40, 0)
)

// NewBatch returns an empty Batch using p's options (User-Agent, ...).
func (p *HTTPProber) NewBatch() *Batch {
	return &Batch{
		p:    p,
		base: time.Now(),
		// scratch and br come with the first HTTP probe: an agent whose
		// pods have none (most hollow nodes') keeps 16 KB less.
	}
}

// StartHTTP starts req (its deadline is now + req.Timeout, DefaultTimeout if <= 0). It returns
// false, having done nothing, if the batch cannot take req (anything p.fast(req) refuses,
// or a host that is not an IPv4/IPv6 literal); the caller then runs p.Probe itself.
// done is called later, exactly once, from Poll or Close — never from StartHTTP itself, even when
// the connect fails at once (report that from the next Poll).
func (b *Batch) StartHTTP(now time.Time, req HTTPRequest, done Done) bool {
	if b.closed || !batchOS {
		return false
	}
	uri, ok := b.p.fast(req)
	if !ok {
		return false
	}
	ap, ok := batchAddr(req.Host, req.Port)
	if !ok {
		return false
	}
	p := b.get()
	p.done, p.headers, p.made = done, req.Headers, 1
	p.hop = fastHop{addr: hostPort(req.Host, req.Port), uri: uri, custom: customHost(req.Headers)}
	p.hop.host = p.hop.custom
	if p.hop.host == "" {
		p.hop.host = p.hop.addr
	}
	p.h = &p.hop
	t := b.begin(p, now, req.Timeout)
	b.dialHTTP(p, ap, t)
	b.started(p)
	return true
}

// StartTCP starts a tcpSocket probe of host:port (host an IP literal, else false) with the same rules.
func (b *Batch) StartTCP(now time.Time, host string, port int, timeout time.Duration, done Done) bool {
	if b.closed || !batchOS {
		return false
	}
	ap, ok := batchAddr(host, port)
	if !ok {
		return false
	}
	p := b.get()
	p.done, p.tcp, p.backoff = done, true, batchFirstPoll
	t := b.begin(p, now, timeout)
	fd, call, e := sockOpen(&p.sa, ap)
	p.fd, p.ap = fd, ap
	switch e {
	case 0:
		b.settle(p, t, Success, "", nil)
	case syscall.EINPROGRESS, syscall.EINTR:
		b.checkTCP(p, t)
	default:
		b.settle(p, t, Failure, dialError(ap, call, e).Error(), nil)
	}
	b.started(p)
	return true
}

// Poll reads what has arrived, finishes every probe that is complete, failed or past its
// deadline (calling its done), and returns how long the caller may wait before the next Poll
// (0 if nothing is pending). Not safe for concurrent use: one goroutine owns a Batch.
func (b *Batch) Poll(now time.Time) time.Duration {
	t := b.nanos(now)
	b.polling, b.pollT = true, t
	for len(b.q) > 0 && b.due(b.q[0], t) {
		p := b.q[0]
		b.stepping = p
		b.step(p, t)
		b.stepping = nil
	}
	b.polling = false
	if len(b.q) == 0 {
		return 0
	}
	return max(time.Duration(b.q[0].at-t), 1)
}

// Len is the number of probes in flight.
func (b *Batch) Len() int { return len(b.q) }

// Close aborts every pending probe (closing its socket) and calls each done with
// (Unknown, "", err) where err says the prober stopped.
func (b *Batch) Close() {
	b.closed = true
	for len(b.q) > 0 {
		b.finish(b.q[len(b.q)-1], Unknown, "", errBatchClosed)
	}
}

// due: p's poll time has come (or comes within the slack, unless that
// poll is its deadline's).
func (b *Batch) due(p *batchProbe, t int64) bool {
	return p.at <= t || (p.at < p.dl && p.at <= t+int64(batchPollSlack))
}

func (b *Batch) nanos(now time.Time) int64 { return int64(now.Sub(b.base)) }

// begin sets a new probe's deadline; it returns now on Batch's clock.
func (b *Batch) begin(p *batchProbe, now time.Time, timeout time.Duration) int64 {
	p.dl = b.nanos(now.Add(orDefault(timeout)))
	return b.nanos(now)
}

// started queues a new probe. One started by a done during Poll is not
// polled by that Poll, so that a done restarting probes cannot keep Poll
// from returning.
func (b *Batch) started(p *batchProbe) {
	if b.polling && p.at <= b.pollT+int64(batchPollSlack) {
		b.schedule(p, b.pollT+int64(batchPollSlack)+1)
	}
}

func (b *Batch) step(p *batchProbe, t int64) {
	switch {
	case p.state == stResult:
		b.finish(p, p.res, p.msg, p.err)
	case p.tcp:
		b.checkTCP(p, t)
	case p.state == stConnect:
		b.write(p, t)
	default:
		b.harvest(p, t)
	}
}

// dialHTTP opens a connection for p's current hop and sends its request.
func (b *Batch) dialHTTP(p *batchProbe, ap netip.AddrPort, t int64) {
	p.req = b.p.appendRequest(p.req[:0], p.h, p.headers)
	p.written, p.conn, p.ap, p.state = 0, false, ap, stConnect
	p.backoff = batchFirstPoll
	fd, call, e := sockOpen(&p.sa, ap)
	p.fd = fd
	switch e {
	case 0:
		p.conn = true
	case syscall.EINPROGRESS, syscall.EINTR:
		// Connecting: the write below says how it went.
	default:
		b.settle(p, t, Failure, requestError(bgCtx, batchNever, p.h.urlString(), dialError(ap, call, e)), nil)
		return
	}
	b.write(p, t)
}

// write sends what is left of p's request. While the connect is in
// progress a non-blocking write fails with EAGAIN; if the connect failed,
// the write returns its error (the socket's pending error, which the write
// consumes: the same errno SO_ERROR would have given).
func (b *Batch) write(p *batchProbe, t int64) {
	for p.written < len(p.req) {
		n, e := sockSend(p.fd, p.req[p.written:])
		switch {
		case e == 0:
			p.written += n
			p.conn = true
		case e == syscall.EAGAIN || e == syscall.EINTR:
			if t >= p.dl {
				b.settle(p, t, Failure, requestError(bgCtx, batchNever, p.h.urlString(), os.ErrDeadlineExceeded), nil)
				return
			}
			b.later(p, t)
			return
		case !p.conn && e != syscall.ECONNRESET && e != syscall.EPIPE:
			// A connect that failed (refused, unreachable, timed out).
			b.settle(p, t, Failure, requestError(bgCtx, batchNever, p.h.urlString(), dialError(p.ap, "connect", e)), nil)
			return
		default:
			// Connected, then reset or closed before the request went out.
			b.settle(p, t, Failure, requestError(bgCtx, batchNever, p.h.urlString(), b.opError(p, "write", e)), nil)
			return
		}
	}
	p.state, p.backoff = stRead, batchFirstPoll
	if t >= p.dl {
		b.schedule(p, t) // one harvest, then the timeout
		return
	}
	b.later(p, t)
}

// checkTCP sees whether p's connect completed: a zero-length send returns
// 0 once connected, EAGAIN while connecting, and the connect's error
// (consuming it) if it failed.
func (b *Batch) checkTCP(p *batchProbe, t int64) {
	_, e := sockSend(p.fd, nil)
	switch e {
	case 0, syscall.ECONNRESET, syscall.EPIPE:
		// Connected (reset or closed since: the connect still succeeded,
		// a refused connect is ECONNREFUSED).
		b.settle(p, t, Success, "", nil)
	case syscall.EAGAIN, syscall.EINTR:
		if t >= p.dl {
			b.settle(p, t, Failure, dialError(p.ap, "", os.ErrDeadlineExceeded).Error(), nil)
			return
		}
		b.later(p, t)
	default:
		b.settle(p, t, Failure, dialError(p.ap, "connect", e).Error(), nil)
	}
}

// harvest reads what has arrived for p and finishes it if that completes
// the answer (or the deadline has come).
func (b *Batch) harvest(p *batchProbe, t int64) {
	for {
		have := len(p.buf)
		room := batchMaxResponse - have
		if room <= 0 {
			// An answer the fast path would read further than a Batch keeps.
			b.settle(p, t, Unknown, "", ErrNotBatchable)
			return
		}
		var into []byte
		if have == 0 {
			if b.scratch == nil {
				b.scratch = make([]byte, batchFirstRecv)
			}
			into = b.scratch[:min(batchFirstRecv, room)]
		} else {
			into = p.buf[have : have+min(batchNextRecv, room)]
		}
		n, e := sockRecv(p.fd, into)
		b.recvs++
		term := errMore
		switch {
		case e == syscall.EAGAIN || e == syscall.EINTR:
			if t < p.dl {
				b.later(p, t)
				return
			}
			// The fast path's read would have hit its deadline.
			term = os.ErrDeadlineExceeded
			n = 0
		case e != 0:
			term = b.opError(p, "read", e)
			n = 0
		case n == 0:
			term = io.EOF
		}
		b.received += int64(n)
		var data []byte
		if have == 0 {
			data = b.scratch[:n]
		} else {
			p.buf = p.buf[:have+n]
			data = p.buf
		}
		if b.answer(p, data, term, t) {
			return
		}
		if have == 0 {
			p.buf = append(b.getBuf(), data...)
		}
	}
}

// answer judges the answer in data, followed by term, as exchange judges
// what it reads: it reports false if the answer is incomplete (term is
// errMore and the parser wants more), else finishes p or follows its
// redirect.
func (b *Batch) answer(p *batchProbe, data []byte, term error, t int64) bool {
	b.src = batchSource{data: data, err: term}
	if b.br == nil {
		b.br = bufio.NewReaderSize(nil, 4<<10) // as httpBuf's: same long-line handling
	}
	b.br.Reset(&b.src)
	r, err := readResponseHead(b.br)
	if err == errMore {
		return false
	}
	if err != nil {
		b.settle(p, t, Failure, requestError(bgCtx, batchNever, p.h.urlString(), err), nil)
		return true
	}
	rd, res, msg, err := followOrJudge(b.br, r, p.h, p.headers, p.made, b.body[:])
	switch {
	case err == errMore:
		return false
	case err != nil:
		b.settle(p, t, Failure, "", bodyError(bgCtx, batchNever, err))
	case rd != nil:
		n := p.h.next(rd.u, rd.relative, rd.referer)
		var ap netip.AddrPort
		ok := n != nil
		if ok {
			ap, ok = batchAddrPort(n.addr)
		}
		if !ok {
			// The fast path would hand this to net/http.
			b.settle(p, t, Unknown, "", ErrNotBatchable)
			return true
		}
		b.closeFD(p)
		b.putBuf(p)
		p.h = n
		p.made++
		b.dialHTTP(p, ap, t)
	default:
		b.settle(p, t, res, msg, nil)
	}
	return true
}

// settle ends p with an outcome: at once if Poll is working on p, else
// (from Start*) at the next Poll. Either way its socket closes now.
func (b *Batch) settle(p *batchProbe, t int64, res Result, msg string, err error) {
	if p == b.stepping {
		b.finish(p, res, msg, err)
		return
	}
	b.closeFD(p)
	p.state, p.res, p.msg, p.err = stResult, res, msg, err
	b.schedule(p, t)
}

// finish ends p: closes its socket, recycles it and calls its done.
func (b *Batch) finish(p *batchProbe, res Result, msg string, err error) {
	if p.idx >= 0 {
		b.remove(p)
	}
	b.closeFD(p)
	done := p.done
	b.put(p)
	if b.stepping == p {
		b.stepping = nil // p may be reused by a Start* in done
	}
	done(res, msg, err)
}

// later schedules p's next poll after an EAGAIN, backing off.
func (b *Batch) later(p *batchProbe, t int64) {
	p.backoff = max(p.backoff, batchFirstPoll)
	at := t + int64(p.backoff)
	p.backoff = min(2*p.backoff, batchMaxPoll)
	b.schedule(p, min(at, p.dl))
}

func (b *Batch) closeFD(p *batchProbe) {
	if p.fd >= 0 {
		sockClose(p.fd) // SO_LINGER 0: RST, no TIME_WAIT
		p.fd = -1
	}
}

func (b *Batch) get() *batchProbe {
	if n := len(b.free); n > 0 {
		p := b.free[n-1]
		b.free = b.free[:n-1]
		return p
	}
	return &batchProbe{idx: -1, fd: -1}
}

func (b *Batch) put(p *batchProbe) {
	b.putBuf(p)
	req := p.req
	if cap(req) > 4<<10 {
		req = nil
	}
	*p = batchProbe{idx: -1, fd: -1, req: req[:0]}
	b.free = append(b.free, p)
}

func (b *Batch) getBuf() []byte {
	if n := len(b.bufs); n > 0 {
		buf := b.bufs[n-1]
		b.bufs = b.bufs[:n-1]
		return buf
	}
	return make([]byte, 0, batchMaxResponse)
}

// putBuf recycles p's partial-answer buffer, if any.
func (b *Batch) putBuf(p *batchProbe) {
	if p.buf != nil && len(b.bufs) < batchMaxBufs {
		b.bufs = append(b.bufs, p.buf[:0])
	}
	p.buf = nil
}

// The queue: a binary min-heap by at.

func (b *Batch) schedule(p *batchProbe, at int64) {
	p.at = at
	if p.idx < 0 {
		p.idx = len(b.q)
		b.q = append(b.q, p)
		b.up(p.idx)
		return
	}
	if !b.down(p.idx) {
		b.up(p.idx)
	}
}

func (b *Batch) remove(p *batchProbe) {
	i, last := p.idx, len(b.q)-1
	if i != last {
		b.swap(i, last)
	}
	b.q[last] = nil
	b.q = b.q[:last]
	p.idx = -1
	if i != last && !b.down(i) {
		b.up(i)
	}
}

func (b *Batch) swap(i, j int) {
	b.q[i], b.q[j] = b.q[j], b.q[i]
	b.q[i].idx, b.q[j].idx = i, j
}

func (b *Batch) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if b.q[parent].at <= b.q[i].at {
			return
		}
		b.swap(i, parent)
		i = parent
	}
}

func (b *Batch) down(i int) bool {
	start, n := i, len(b.q)
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if r := c + 1; r < n && b.q[r].at < b.q[c].at {
			c = r
		}
		if b.q[i].at <= b.q[c].at {
			break
		}
		b.swap(i, c)
		i = c
	}
	return i > start
}

// batchAddr is host:port if host is an IPv4 or IPv6 literal a Batch can
// dial as net's dialer would.
func batchAddr(host string, port int) (netip.AddrPort, bool) {
	a, err := netip.ParseAddr(host)
	if err != nil || port < 1 || port > 65535 {
		return netip.AddrPort{}, false
	}
	ap := netip.AddrPortFrom(a, uint16(port))
	return ap, batchable(ap)
}

// batchAddrPort is batchAddr for "host:port".
func batchAddrPort(addr string) (netip.AddrPort, bool) {
	ap, err := netip.ParseAddrPort(addr)
	return ap, err == nil && batchable(ap)
}

// batchable: no port 0, no zone, no IPv4-mapped IPv6 (which net dials
// and names its own ways).
func batchable(ap netip.AddrPort) bool {
	a := ap.Addr()
	return ap.Port() != 0 && a.IsValid() && a.Zone() == "" && !a.Is4In6()
}

// dialError is the error net's dialer gives for a dial of ap that failed
// in call ("" for a timeout).
func dialError(ap netip.AddrPort, call string, err error) error {
	if e, ok := err.(syscall.Errno); ok && call != "" {
		err = os.NewSyscallError(call, e)
	}
	return &net.OpError{Op: "dial", Net: "tcp", Addr: net.TCPAddrFromAddrPort(ap), Err: err}
}

// opError is the error a net.TCPConn's Read or Write ("read", "write")
// gives for errno e.
func (b *Batch) opError(p *batchProbe, op string, e syscall.Errno) error {
	return &net.OpError{Op: op, Net: "tcp", Source: sockLocal(p.fd), Addr: net.TCPAddrFromAddrPort(p.ap), Err: os.NewSyscallError(op, e)}
}
