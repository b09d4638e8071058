package probe

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// HTTPOptions configures an HTTPProber; the zero value is the kubelet's.
type HTTPOptions struct {
	// UserAgent is sent unless the probe's headers set User-Agent.
	// Default DefaultUserAgent.
	UserAgent string
	// FollowNonLocalRedirects follows redirects to other hosts too. The
	// kubelet never does: a redirect elsewhere ends the probe with Warning.
	FollowNonLocalRedirects bool
}

// HTTPRequest is one httpGet probe, resolved to an address.
type HTTPRequest struct {
	Scheme  string // "http" (default) or "https"
	Host    string // IP or name to connect to
	Port    int
	Path    string // path and optional query, as in the Pod spec
	Headers http.Header
	// Timeout bounds the whole probe, body included; <= 0 means
	// DefaultTimeout.
	Timeout time.Duration
}

// HTTPProber runs httpGet probes. It is safe for concurrent use and meant
// to be shared: its transport, TLS config and buffers are reused across
// probes, while every probe still opens and closes its own connection.
//
// Connections are closed with SO_LINGER 0 (RST), so neither side keeps a
// TIME_WAIT socket: at 10,000 probes a second FIN closes would hold some
// 600,000 sockets and exhaust ephemeral ports. TCP keep-alive is off. Pod
// IPs are dialled without the resolver.
//
// Plain-HTTP probes to an IP or name with ordinary paths and headers (nearly
// all of them) take a hand-written HTTP/1.1 exchange on the calling
// goroutine: one write, reads into a pooled buffer, only the framing headers
// parsed, the body read to 10 KiB and never further (chunked,
// Content-Length and read-until-close bodies). It sends the bytes net/http
// sends and reports net/http's messages, for a fraction of net/http's CPU,
// memory and allocations and no goroutines (BenchmarkHTTPProbe,
// BenchmarkHTTPProbeParallel). Everything else (https,
// FollowNonLocalRedirects, IPv6 zones, paths that need escaping, unusual
// headers, a redirect to https) goes through one shared net/http Transport
// configured once.
type HTTPProber struct {
	userAgent      string
	followNonLocal bool
	transport      *http.Transport
	bufs           sync.Pool // *httpBuf
	// noFast sends every probe through net/http (to compare the two).
	noFast bool
	// dial opens every connection; tests wrap it to count bytes read.
	dial func(ctx context.Context, addr string, deadline time.Time) (net.Conn, error)
}

// NewHTTP returns an HTTPProber.
func NewHTTP(opts HTTPOptions) *HTTPProber {
	if opts.UserAgent == "" {
		opts.UserAgent = DefaultUserAgent
	}
	p := &HTTPProber{
		userAgent:      opts.UserAgent,
		followNonLocal: opts.FollowNonLocalRedirects,
		dial:           dial,
	}
	p.transport = &http.Transport{
		// Probes go straight to the pod, never through the node's proxy
		// (nil Proxy ignores HTTP_PROXY).
		Proxy: nil,
		DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
			return p.dial(ctx, addr, time.Time{})
		},
		// As the kubelet: pods serve self-signed certificates and there
		// is nothing to verify them against.
		TLSClientConfig:     &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // see above
		TLSHandshakeTimeout: 10 * time.Second,
		// One connection per probe, as the kubelet: a kept-alive
		// connection would hide a server that no longer accepts.
		DisableKeepAlives: true,
		// No Accept-Encoding: the body is a message, not content.
		DisableCompression: true,
	}
	return p
}

// httpBuf is the per-probe scratch space, pooled so a probe does not
// allocate its 10 KiB body buffer.
type httpBuf struct {
	body [maxOutput]byte
	br   *bufio.Reader // fast path: the response
	req  []byte        // fast path: the request
}

func (p *HTTPProber) getBuf() *httpBuf {
	if b, ok := p.bufs.Get().(*httpBuf); ok {
		return b
	}
	return &httpBuf{br: bufio.NewReaderSize(nil, 4<<10), req: make([]byte, 0, 512)}
}

// Probe sends GET scheme://host:port/path and judges the answer as the
// kubelet does: 2xx and 3xx are Success with the body (at most 10 KiB) as
// message, except a redirect that was not followed, which is Warning; any
// other status is Failure. Failing to get an answer (refused, timed out,
// reset) is Failure with the error as message and a nil error; the error is
// non-nil only when the request cannot be built or its body cannot be read.
//
// The request carries the probe's headers plus User-Agent: kube-probe/1.37
// and Accept: */* unless overridden (an empty Accept is dropped; a Host
// header sets the Host). A redirect to another host is not followed and ends
// in Warning ("Probe terminated redirects, Response body: ..."); same-host
// redirects are followed, at most 10 requests; other codes are Failure
// ("HTTP probe failed with statuscode: 503"). HTTPS skips certificate
// verification. No proxy.
func (p *HTTPProber) Probe(ctx context.Context, req HTTPRequest) (Result, string, error) {
	if uri, ok := p.fast(req); ok {
		return p.probeFast(ctx, req, uri)
	}
	return p.probeStd(ctx, req)
}

// fast reports whether req can take the fast path, and its request target.
func (p *HTTPProber) fast(req HTTPRequest) (string, bool) {
	if p.noFast || p.followNonLocal || (req.Scheme != "http" && req.Scheme != "") || !fastHost(req.Host) || !fastHeaders(req.Headers) {
		return "", false
	}
	return fastURI(req.Path)
}

// probeStd runs the probe through net/http: https, and what the fast path
// leaves to it.
func (p *HTTPProber) probeStd(ctx context.Context, req HTTPRequest) (Result, string, error) {
	scheme := req.Scheme
	if scheme == "" {
		scheme = "http"
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodGet, probeURL(scheme, req.Host, req.Port, req.Path).String(), nil)
	if err != nil {
		return Unknown, "", err
	}
	hr.Header = p.headers(req.Headers)
	hr.Host = hr.Header.Get("Host")
	return p.doStd(hr, orDefault(req.Timeout), p.redirectChecker("", 0))
}

// doStd sends hr through net/http and judges the answer.
func (p *HTTPProber) doStd(hr *http.Request, timeout time.Duration, checkRedirect func(*http.Request, []*http.Request) error) (Result, string, error) {
	client := http.Client{Transport: p.transport, Timeout: timeout, CheckRedirect: checkRedirect}
	res, err := client.Do(hr)
	if err != nil {
		return Failure, err.Error(), nil
	}
	defer res.Body.Close()
	buf := p.getBuf()
	defer p.bufs.Put(buf)
	n, err := readAtMost(res.Body, buf.body[:])
	if err != nil {
		return Failure, "", err
	}
	r, msg := judge(res.StatusCode, buf.body[:n])
	return r, msg, nil
}

// headers is the kubelet's header set: the probe's own, plus User-Agent and
// Accept: */* unless it sets them; an empty Accept is dropped. The
// caller's map is not modified.
func (p *HTTPProber) headers(in http.Header) http.Header {
	h := make(http.Header, len(in)+2)
	for k, v := range in {
		h[k] = v
	}
	if _, ok := h["User-Agent"]; !ok {
		h["User-Agent"] = []string{p.userAgent}
	}
	if _, ok := h["Accept"]; !ok {
		h["Accept"] = []string{acceptAny}
	} else if h.Get("Accept") == "" {
		delete(h, "Accept")
	}
	return h
}

// acceptAny is the kubelet's default Accept.
const acceptAny = "*/*"

// errTooManyRedirects is net/http's default limit, kept by the kubelet.
var errTooManyRedirects = errors.New("stopped after 10 redirects")

// maxRedirects is how many requests a probe makes at most (net/http's
// limit): the redirect answering the 10th is an error.
const maxRedirects = 10

// redirectChecker is the kubelet's: stop (and return the redirect itself)
// at the first redirect to another host unless followNonLocal, and give up
// after 10. origHost and hops describe redirects already followed before
// net/http took over (by the fast client); "" means via[0]'s host.
func (p *HTTPProber) redirectChecker(origHost string, hops int) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if !p.followNonLocal {
			host := origHost
			if host == "" {
				host = via[0].URL.Hostname()
			}
			if req.URL.Hostname() != host {
				return http.ErrUseLastResponse
			}
		}
		if len(via)+hops >= maxRedirects {
			return errTooManyRedirects
		}
		return nil
	}
}

// probeURL is the kubelet's formatURL: path may carry a query; a path
// url.Parse rejects is passed along as a plain path.
func probeURL(scheme, host string, port int, path string) *url.URL {
	u, err := url.Parse(path)
	if err != nil {
		u = &url.URL{Path: path}
	}
	u.Scheme = scheme
	u.Host = net.JoinHostPort(host, strconv.Itoa(port))
	return u
}

// readAtMost fills buf from r, stopping at EOF or when buf is full: the
// rest of a large body is never read (closing the connection discards it).
func readAtMost(r io.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		n += m
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// judge maps a status code and body to the kubelet's result and message.
func judge(code int, body []byte) (Result, string) {
	switch {
	case code >= http.StatusOK && code < http.StatusMultipleChoices:
		return Success, string(body)
	case code >= http.StatusMultipleChoices && code < http.StatusBadRequest:
		// A 3xx reaches here only when the redirect was not followed.
		return Warning, "Probe terminated redirects, Response body: " + string(body)
	}
	// Never the body: it may hold secrets and ends up in events (kubernetes#99425).
	return Failure, "HTTP probe failed with statuscode: " + strconv.Itoa(code)
}
