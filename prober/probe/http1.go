package probe

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"
)

// The fast path: a plain-HTTP probe written by hand on the caller's
// goroutine. net/http dials and reads on goroutines of its own and builds a
// Request, a Response and header maps for every probe; for a probe that
// opens one connection, sends one GET and reads at most 10 KiB of the answer
// that machinery costs several times the syscalls themselves (see
// BenchmarkHTTPProbe). The fast path speaks exactly the HTTP/1.1 a probe
// needs and produces net/http's messages; anything outside it (https,
// unusual hosts, paths or headers, FollowNonLocalRedirects, a redirect to
// https) goes to net/http.

// fastHop is one request of a probe.
type fastHop struct {
	addr    string   // host:port to dial
	uri     string   // request target
	host    string   // Host header
	custom  string   // the caller's Host header, while it applies
	referer string   // set on redirects, as net/http does
	u       *url.URL // nil on the first hop: built only when needed
}

func (h *fastHop) url() *url.URL {
	if h.u == nil {
		// Cannot fail: addr and uri passed fastHost and fastURI.
		h.u, _ = url.Parse("http://" + h.addr + h.uri)
	}
	return h.u
}

// urlString is the URL as net/http's errors print it.
func (h *fastHop) urlString() string {
	if h.u == nil {
		return "http://" + h.addr + h.uri
	}
	return h.u.String()
}

// next is the hop a followed redirect to u leads to, or nil if the fast
// path cannot take it.
func (h *fastHop) next(u *url.URL, relative bool, referer string) *fastHop {
	if u.Scheme != "http" || u.User != nil || !fastHost(u.Hostname()) {
		return nil
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	n := &fastHop{addr: addr, uri: u.RequestURI(), host: u.Host, referer: referer, u: u}
	// net/http keeps a custom Host across relative redirects.
	if relative && h.custom != "" && h.custom != h.url().Host {
		n.host, n.custom = h.custom, h.custom
	}
	return n
}

// redirect is a redirect the probe follows.
type redirect struct {
	u        *url.URL
	relative bool // Location had no scheme
	referer  string
}

// aLongTimeAgo is a deadline that makes pending I/O fail at once.
var aLongTimeAgo = time.Unix(1, 0)

// probeFast runs req on the fast path; uri is fastURI(req.Path).
func (p *HTTPProber) probeFast(ctx context.Context, req HTTPRequest, uri string) (Result, string, error) {
	deadline := time.Now().Add(orDefault(req.Timeout))
	b := p.getBuf()
	defer p.bufs.Put(b)

	h := &fastHop{addr: hostPort(req.Host, req.Port), uri: uri, custom: customHost(req.Headers)}
	h.host = h.custom
	if h.host == "" {
		h.host = h.addr
	}
	for made := 1; ; made++ {
		c, err := p.dial(ctx, h.addr, deadline)
		if err != nil {
			return Failure, requestError(ctx, deadline, h.urlString(), err), nil
		}
		rd, res, msg, err := p.exchange(ctx, c, deadline, h, req.Headers, b, made)
		if rd == nil {
			return res, msg, err
		}
		n := h.next(rd.u, rd.relative, rd.referer)
		if n == nil {
			return p.handOff(ctx, deadline, req, rd, made)
		}
		h = n
	}
}

// exchange sends h's request over c, reads the answer and closes c. It
// returns a redirect to follow, or else the probe's result.
func (p *HTTPProber) exchange(ctx context.Context, c net.Conn, deadline time.Time, h *fastHop, headers http.Header, b *httpBuf, made int) (*redirect, Result, string, error) {
	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(deadline)
	if ctx.Done() != nil {
		// Deadlines bound the I/O; cancelling ctx moves them to the past.
		stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(aLongTimeAgo) })
		defer stop()
	}
	b.req = p.appendRequest(b.req[:0], h, headers)
	if _, err := c.Write(b.req); err != nil {
		return nil, Failure, requestError(ctx, deadline, h.urlString(), err), nil
	}
	b.br.Reset(c)
	defer b.br.Reset(nil) // the pool must not keep c

	r, err := readResponseHead(b.br)
	if err != nil {
		return nil, Failure, requestError(ctx, deadline, h.urlString(), err), nil
	}
	rd, res, msg, err := followOrJudge(b.br, r, h, headers, made, b.body[:])
	if err != nil {
		return nil, Failure, "", bodyError(ctx, deadline, err)
	}
	return rd, res, msg, nil
}

// followOrJudge continues an answer whose head r was read from br for hop
// h, the made-th request of the probe: a redirect to follow, or else the
// probe's result. err is the body's read error, left for the caller to
// shape.
func followOrJudge(br *bufio.Reader, r fastResponse, h *fastHop, headers http.Header, made int, body []byte) (*redirect, Result, string, error) {
	if r.location != "" {
		u, err := h.url().Parse(r.location)
		if err != nil {
			err = errors.New("failed to parse Location header " + strconv.Quote(r.location) + ": " + err.Error())
			return nil, Failure, (&url.Error{Op: "Get", URL: h.urlString(), Err: err}).Error(), nil
		}
		// The kubelet's redirect checker; a redirect elsewhere is
		// judged as is (Warning) below.
		if u.Hostname() == h.url().Hostname() {
			if made >= maxRedirects {
				return nil, Failure, (&url.Error{Op: "Get", URL: r.location, Err: errTooManyRedirects}).Error(), nil
			}
			loc, _ := url.Parse(r.location)
			return &redirect{u: u, relative: !loc.IsAbs(), referer: referer(headers, h.url())}, "", "", nil
		}
	}
	n, err := readBody(br, body, r)
	if err != nil {
		return nil, Failure, "", err
	}
	res, msg := judge(r.code, body[:n])
	return nil, res, msg, nil
}

// handOff continues a probe redirected where the fast path does not go
// (https) through net/http, counting the redirects already followed.
func (p *HTTPProber) handOff(ctx context.Context, deadline time.Time, req HTTPRequest, rd *redirect, made int) (Result, string, error) {
	urlStr := rd.u.String()
	remaining := time.Until(deadline)
	if remaining <= 0 {
		return Failure, (&url.Error{Op: "Get", URL: urlStr, Err: errClientTimeout}).Error(), nil
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodGet, urlStr, nil)
	if err != nil {
		return Failure, (&url.Error{Op: "Get", URL: urlStr, Err: err}).Error(), nil
	}
	hr.Header = p.headers(req.Headers)
	hr.Header.Set("Referer", rd.referer)
	return p.doStd(hr, remaining, p.redirectChecker(req.Host, made))
}

// customHost is the Host header the probe sets, if any.
func customHost(h http.Header) string {
	if v := h["Host"]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// referer is net/http's Referer for a redirect from last: an explicit one,
// or last itself.
func referer(h http.Header, last *url.URL) string {
	if v := h["Referer"]; len(v) > 0 && v[0] != "" {
		return v[0]
	}
	return last.String()
}

// appendRequest appends h's GET as net/http writes it: Host, User-Agent,
// the other headers sorted, Connection: close.
func (p *HTTPProber) appendRequest(w []byte, h *fastHop, headers http.Header) []byte {
	w = append(w, "GET "...)
	w = append(w, h.uri...)
	w = append(w, " HTTP/1.1\r\nHost: "...)
	w = append(w, h.host...)
	w = append(w, "\r\n"...)
	ua := p.userAgent
	if v, ok := headers["User-Agent"]; ok {
		ua = ""
		if len(v) > 0 {
			ua = trim(v[0])
		}
	}
	if ua != "" {
		w = appendHeader(w, "User-Agent", ua)
	}

	var kb [16]string
	keys := kb[:0]
	if _, ok := headers["Accept"]; !ok {
		keys = append(keys, "Accept")
	}
	if _, ok := headers["Referer"]; !ok && h.referer != "" {
		keys = append(keys, "Referer")
	}
	for k, v := range headers {
		switch k {
		case "Host", "User-Agent", "Content-Length", "Transfer-Encoding", "Trailer":
			continue
		case "Accept":
			if len(v) == 0 || v[0] == "" {
				continue // the kubelet drops an empty Accept
			}
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v, ok := headers[k]
		if !ok { // a default, not the caller's
			val := acceptAny
			if k == "Referer" {
				val = h.referer
			}
			w = appendHeader(w, k, val)
			continue
		}
		for _, s := range v {
			w = appendHeader(w, k, trim(s))
		}
	}
	return append(w, "Connection: close\r\n\r\n"...)
}

func appendHeader(w []byte, k, v string) []byte {
	w = append(w, k...)
	w = append(w, ": "...)
	w = append(w, v...)
	return append(w, "\r\n"...)
}
