package probe

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// httpImpls are the two ways an HTTPProber sends plain-HTTP probes; tests
// run against both and expect the same results.
var httpImpls = []struct {
	name string
	new  func(HTTPOptions) *HTTPProber
}{
	{"fast", NewHTTP},
	{"net-http", func(o HTTPOptions) *HTTPProber { p := NewHTTP(o); p.noFast = true; return p }},
}

// target is a loopback HTTP server with one handler per behaviour probes
// must handle. It records the last request it saw.
type target struct {
	*httptest.Server
	host string
	port int

	mux  *http.ServeMux
	mu   sync.Mutex
	last *http.Request
}

const bigBody = 1 << 20

func newTarget(t testing.TB, tls bool) *target {
	t.Helper()
	tg := &target{}
	hang := make(chan struct{})
	big := []byte(strings.Repeat("x", bigBody))
	mux := http.NewServeMux()
	tg.mux = mux
	mux.HandleFunc("/ok", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })
	mux.HandleFunc("/empty", func(http.ResponseWriter, *http.Request) {})
	mux.HandleFunc("/unavailable", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, "secret details")
	})
	mux.HandleFunc("/elsewhere", func(w http.ResponseWriter, _ *http.Request) {
		// Another loopback address nothing listens on: were the
		// redirect followed, the probe would fail, not leave the host.
		w.Header().Set("Location", "http://127.0.0.2:"+strconv.Itoa(tg.port)+"/ok")
		w.WriteHeader(http.StatusFound)
		_, _ = io.WriteString(w, "moved")
	})
	mux.HandleFunc("/local", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/ok", http.StatusFound) })
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/loop", http.StatusFound) })
	mux.HandleFunc("/hang", func(http.ResponseWriter, *http.Request) { <-hang })
	mux.HandleFunc("/big", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(big) })
	mux.HandleFunc("/chunked", func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i < 3; i++ {
			_, _ = io.WriteString(w, "chunk"+strconv.Itoa(i)+";")
			w.(http.Flusher).Flush()
		}
	})
	echo := func(w http.ResponseWriter, r *http.Request) {
		tg.mu.Lock()
		tg.last = r
		tg.mu.Unlock()
		_, _ = io.WriteString(w, r.RequestURI)
	}
	mux.HandleFunc("/echo", echo)
	mux.HandleFunc("/echo/", echo)
	if tls {
		tg.Server = httptest.NewTLSServer(mux)
	} else {
		tg.Server = httptest.NewServer(mux)
	}
	// Cleanups run last-in first-out: release hanging handlers, then close.
	t.Cleanup(tg.Close)
	t.Cleanup(func() { close(hang) })
	tg.host, tg.port = hostPortOf(t, tg.Listener.Addr().String())
	return tg
}

// redirect makes path answer 302 to location.
func (tg *target) redirect(path, location string) {
	tg.mux.HandleFunc(path, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Location", location)
		w.WriteHeader(http.StatusFound)
	})
}

func (tg *target) lastRequest() *http.Request {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	return tg.last
}

func (tg *target) req(path string) HTTPRequest {
	return HTTPRequest{Scheme: "http", Host: tg.host, Port: tg.port, Path: path, Timeout: time.Second}
}

func TestHTTP(t *testing.T) {
	tg := newTarget(t, false)
	for _, impl := range httpImpls {
		t.Run(impl.name, func(t *testing.T) { testHTTP(t, tg, impl.new(HTTPOptions{})) })
	}
}

func testHTTP(t *testing.T, tg *target, p *HTTPProber) {
	for _, tc := range []struct {
		name    string
		path    string
		want    Result
		message string // exact unless contains
		contain bool
	}{
		{name: "200", path: "/ok", want: Success, message: "ok"},
		{name: "200 empty", path: "/empty", want: Success, message: ""},
		{name: "503", path: "/unavailable", want: Failure, message: "HTTP probe failed with statuscode: 503"},
		{name: "404", path: "/nothing", want: Failure, message: "HTTP probe failed with statuscode: 404"},
		{name: "redirect elsewhere not followed", path: "/elsewhere", want: Warning, message: "Probe terminated redirects, Response body: moved"},
		{name: "local redirect followed", path: "/local", want: Success, message: "ok"},
		{name: "redirect loop", path: "/loop", want: Failure, message: `Get "/loop": stopped after 10 redirects`},
		{name: "chunked", path: "/chunked", want: Success, message: "chunk0;chunk1;chunk2;"},
		{name: "query kept", path: "/echo?a=b&c", want: Success, message: "/echo?a=b&c"},
		{name: "no leading slash", path: "echo", want: Success, message: "/echo"},
		{name: "empty path", path: "", want: Failure, message: "HTTP probe failed with statuscode: 404"},
		{name: "escaped path", path: "/echo/a%20b", want: Success, message: "/echo/a%20b"},
		{name: "unparsable path", path: "/echo/%zz", want: Success, message: "/echo/%25zz"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, msg, err := p.Probe(context.Background(), tg.req(tc.path))
			require.NoError(t, err)
			assert.Equal(t, tc.want, res)
			if tc.contain {
				assert.Contains(t, msg, tc.message)
			} else {
				assert.Equal(t, tc.message, msg)
			}
		})
	}
}

func TestHTTPRedirectToHTTPS(t *testing.T) {
	tg := newTarget(t, false)
	tlsTarget := newTarget(t, true)
	// Same host name, another scheme and port: followed, over TLS.
	tg.redirect("/to-https", tlsTarget.URL+"/ok")
	for _, impl := range httpImpls {
		t.Run(impl.name, func(t *testing.T) {
			res, msg, err := impl.new(HTTPOptions{}).Probe(context.Background(), tg.req("/to-https"))
			require.NoError(t, err)
			assert.Equal(t, Success, res)
			assert.Equal(t, "ok", msg)
		})
	}
}

func TestHTTPRedirectKeepsHeaders(t *testing.T) {
	tg := newTarget(t, false)
	tg.redirect("/relative", "/echo/relative")
	tg.redirect("/absolute", tg.URL+"/echo/absolute")
	tg.redirect("/twice", "/relative")
	for _, tc := range []struct {
		path, host, referer string
	}{
		// A custom Host survives a relative redirect only, as in net/http.
		{"/relative", "svc.example", tg.URL + "/relative"},
		{"/absolute", tg.Listener.Addr().String(), tg.URL + "/absolute"},
		{"/twice", "svc.example", tg.URL + "/relative"},
	} {
		for _, impl := range httpImpls {
			t.Run(impl.name+tc.path, func(t *testing.T) {
				req := tg.req(tc.path)
				req.Headers = http.Header{"Host": {"svc.example"}, "X-Token": {"t"}}
				res, _, err := impl.new(HTTPOptions{}).Probe(context.Background(), req)
				require.NoError(t, err)
				require.Equal(t, Success, res)
				got := tg.lastRequest()
				assert.Equal(t, tc.host, got.Host)
				assert.Equal(t, tc.referer, got.Referer())
				assert.Equal(t, "t", got.Header.Get("X-Token"))
				assert.Equal(t, DefaultUserAgent, got.UserAgent())
			})
		}
	}
}

func TestHTTPFollowNonLocalRedirects(t *testing.T) {
	tg := newTarget(t, false)
	p := NewHTTP(HTTPOptions{FollowNonLocalRedirects: true})
	// Followed to 127.0.0.2, where nothing listens: still loopback.
	res, msg, err := p.Probe(context.Background(), tg.req("/elsewhere"))
	require.NoError(t, err)
	assert.Equal(t, Failure, res)
	assert.Contains(t, msg, "127.0.0.2")
}

func TestHTTPHeaders(t *testing.T) {
	tg := newTarget(t, false)
	addr := tg.Listener.Addr().String()
	for _, tc := range []struct {
		name      string
		opts      HTTPOptions
		headers   http.Header
		wantUA    string
		wantAcc   []string
		wantHost  string
		wantOther string
	}{
		{name: "defaults", wantUA: DefaultUserAgent, wantAcc: []string{"*/*"}, wantHost: addr},
		{name: "option user agent", opts: HTTPOptions{UserAgent: "probe/2"}, wantUA: "probe/2", wantAcc: []string{"*/*"}, wantHost: addr},
		{
			name:    "overrides",
			headers: http.Header{"User-Agent": {"mine"}, "Accept": {"application/json"}, "Host": {"svc.example"}, "X-Token": {"t1"}},
			wantUA:  "mine", wantAcc: []string{"application/json"}, wantHost: "svc.example", wantOther: "t1",
		},
		{name: "empty accept dropped", headers: http.Header{"Accept": {""}}, wantUA: DefaultUserAgent, wantAcc: nil, wantHost: addr},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before http.Header
			if tc.headers != nil {
				before = tc.headers.Clone()
			}
			req := tg.req("/echo")
			req.Headers = tc.headers
			for _, impl := range httpImpls {
				res, _, err := impl.new(tc.opts).Probe(context.Background(), req)
				require.NoError(t, err)
				require.Equal(t, Success, res)
				got := tg.lastRequest()
				assert.Equal(t, tc.wantUA, got.UserAgent(), impl.name)
				assert.Equal(t, tc.wantAcc, got.Header.Values("Accept"), impl.name)
				assert.Equal(t, tc.wantHost, got.Host, impl.name)
				assert.Equal(t, tc.wantOther, got.Header.Get("X-Token"), impl.name)
				assert.Empty(t, got.Header.Get("Accept-Encoding"), "no compression")
				assert.True(t, got.Close, "Connection: close")
				assert.Equal(t, before, tc.headers, "caller's headers untouched")
			}
		})
	}
}

func TestHTTPS(t *testing.T) {
	tg := newTarget(t, true)
	req := tg.req("/ok")
	req.Scheme = "https"
	res, msg, err := NewHTTP(HTTPOptions{}).Probe(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, Success, res)
	assert.Equal(t, "ok", msg)
}

func TestHTTPUnreachable(t *testing.T) {
	port := freePort(t)
	for _, impl := range httpImpls {
		t.Run(impl.name, func(t *testing.T) {
			res, msg, err := impl.new(HTTPOptions{}).Probe(context.Background(), HTTPRequest{Scheme: "http", Host: "127.0.0.1", Port: port, Path: "/", Timeout: time.Second})
			require.NoError(t, err, "a failed probe is a result")
			assert.Equal(t, Failure, res)
			assert.Equal(t, `Get "http://127.0.0.1:`+strconv.Itoa(port)+`/": dial tcp 127.0.0.1:`+strconv.Itoa(port)+`: connect: connection refused`, msg)
		})
	}
}

func TestHTTPTimeout(t *testing.T) {
	tg := newTarget(t, false)
	req := tg.req("/hang")
	req.Timeout = 200 * time.Millisecond
	for _, impl := range httpImpls {
		t.Run(impl.name, func(t *testing.T) {
			start := time.Now()
			res, msg, err := impl.new(HTTPOptions{}).Probe(context.Background(), req)
			elapsed := time.Since(start)
			require.NoError(t, err)
			assert.Equal(t, Failure, res)
			assert.Equal(t, `Get "`+tg.URL+`/hang": context deadline exceeded (Client.Timeout exceeded while awaiting headers)`, msg)
			assert.GreaterOrEqual(t, elapsed, 200*time.Millisecond)
			assert.Less(t, elapsed, 2*time.Second)
		})
	}
}

func TestHTTPCanceled(t *testing.T) {
	tg := newTarget(t, false)
	req := tg.req("/hang")
	req.Timeout = 10 * time.Second
	for _, impl := range httpImpls {
		t.Run(impl.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			time.AfterFunc(100*time.Millisecond, cancel)
			start := time.Now()
			res, msg, err := impl.new(HTTPOptions{}).Probe(ctx, req)
			require.NoError(t, err)
			assert.Equal(t, Failure, res)
			assert.Equal(t, `Get "`+tg.URL+`/hang": context canceled`, msg)
			assert.Less(t, time.Since(start), 2*time.Second)
		})
	}
}

// countingConn counts the bytes read from the target.
type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.n.Add(int64(n))
	return n, err
}

func TestHTTPBigBodyNotReadWhole(t *testing.T) {
	tg := newTarget(t, false)
	for _, impl := range httpImpls {
		t.Run(impl.name, func(t *testing.T) {
			p := impl.new(HTTPOptions{})
			var read atomic.Int64
			p.dial = func(ctx context.Context, addr string, deadline time.Time) (net.Conn, error) {
				c, err := dial(ctx, addr, deadline)
				if err != nil {
					return nil, err
				}
				return countingConn{c, &read}, nil
			}
			res, msg, err := p.Probe(context.Background(), tg.req("/big"))
			require.NoError(t, err)
			assert.Equal(t, Success, res)
			assert.Equal(t, strings.Repeat("x", maxOutput), msg, "body cut at 10 KiB")
			assert.Less(t, read.Load(), int64(32<<10), "read %d bytes of a %d byte response", read.Load(), bigBody)
		})
	}
}

func TestJudge(t *testing.T) {
	for _, tc := range []struct {
		code int
		want Result
		msg  string
	}{
		{199, Failure, "HTTP probe failed with statuscode: 199"},
		{200, Success, "b"},
		{204, Success, "b"},
		{299, Success, "b"},
		{300, Warning, "Probe terminated redirects, Response body: b"},
		{399, Warning, "Probe terminated redirects, Response body: b"},
		{400, Failure, "HTTP probe failed with statuscode: 400"},
		{500, Failure, "HTTP probe failed with statuscode: 500"},
	} {
		res, msg := judge(tc.code, []byte("b"))
		assert.Equal(t, tc.want, res, tc.code)
		assert.Equal(t, tc.msg, msg, tc.code)
	}
}
