package probe

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rawTarget answers each request for a path with canned bytes and closes;
// it keeps the request heads it read.
type rawTarget struct {
	port int
	mu   sync.Mutex
	reqs map[string]string // path -> request head
}

func newRawTarget(t testing.TB, responses map[string]string) *rawTarget {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	rt := &rawTarget{reqs: map[string]string{}}
	_, rt.port = hostPortOf(t, l.Addr().String())
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
				_ = c.SetDeadline(time.Now().Add(5 * time.Second))
				br := bufio.NewReader(c)
				var head strings.Builder
				for {
					line, err := br.ReadString('\n')
					head.WriteString(line)
					if err != nil || line == "\r\n" {
						break
					}
				}
				path := strings.Fields(head.String() + " x x")[1]
				rt.mu.Lock()
				rt.reqs[path] = head.String()
				rt.mu.Unlock()
				resp, ok := responses[path]
				if !ok {
					resp = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"
				}
				if resp == "hang" {
					_, _ = c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"))
					_, _ = br.ReadByte() // until the client gives up
					return
				}
				_, _ = c.Write([]byte(resp))
			}()
		}
	}()
	t.Cleanup(func() { _ = l.Close(); wg.Wait() })
	return rt
}

func (rt *rawTarget) head(path string) string {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.reqs[path]
}

// TestHTTPResponses: the fast path parses what servers send as net/http
// does, with the same results and messages.
func TestHTTPResponses(t *testing.T) {
	long := strings.Repeat("v", 8<<10)
	bigChunked := "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
	for i := 0; i < 4; i++ {
		bigChunked += "1000\r\n" + strings.Repeat(strconv.Itoa(i), 0x1000) + "\r\n"
	}
	bigChunked += "0\r\n\r\n"
	responses := map[string]string{
		"/ok":            "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
		"/lf":            "HTTP/1.1 200 OK\nContent-Length: 2\n\nok",
		"/http10":        "HTTP/1.0 200 OK\r\n\r\nuntil close",
		"/until-close":   "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil close",
		"/chunked":       "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\nTrailer: x\r\n\r\n",
		"/te-cl":         "HTTP/1.1 200 OK\r\nContent-Length: 100\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
		"/big-chunked":   bigChunked,
		"/continue":      "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
		"/204":           "HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n",
		"/304":           "HTTP/1.1 304 Not Modified\r\n\r\n",
		"/302-no-loc":    "HTTP/1.1 302 Found\r\nContent-Length: 4\r\n\r\nhere",
		"/300":           "HTTP/1.1 300 Multiple Choices\r\nLocation: /ok\r\nContent-Length: 4\r\n\r\npick",
		"/101":           "HTTP/1.1 101 Switching Protocols\r\n\r\n",
		"/long-header":   "HTTP/1.1 200 OK\r\nX-Long: " + long + "\r\nContent-Length: 2\r\n\r\nok",
		"/no-reason":     "HTTP/1.1 500\r\nContent-Length: 0\r\n\r\n",
		"/bad-code":      "HTTP/1.1 2x0 OK\r\n\r\n",
		"/bad-proto":     "HTTP/x 200 OK\r\n\r\n",
		"/garbage":       "hello\r\n\r\n",
		"/empty":         "",
		"/short":         "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc",
		"/bad-cl":        "HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",
		"/two-cl":        "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nok",
		"/same-cl":       "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok",
		"/gzip":          "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
		"/bad-chunk":     "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
		"/chunk-no-crlf": "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nokxx",
		"/chunk-bare-lf": "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\nok\r\n0\r\n\r\n",
		"/two-te":        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
		"/empty-cl":      "HTTP/1.1 200 OK\r\nContent-Length: \r\n\r\n",
		"/short-chunk":   "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",
		"/cut-head":      "HTTP/1.1 200 OK\r\nContent-Le",
		"/body-hangs":    "hang",
	}
	rt := newRawTarget(t, responses)
	for _, tc := range []struct {
		path string
		want Result
		msg  string // prefix, after "<url>" is replaced by the probe's URL
		err  string // body read error, if any
	}{
		{path: "/ok", want: Success, msg: "ok"},
		{path: "/lf", want: Success, msg: "ok"},
		{path: "/http10", want: Success, msg: "until close"},
		{path: "/until-close", want: Success, msg: "until close"},
		{path: "/chunked", want: Success, msg: "abcde"},
		{path: "/te-cl", want: Success, msg: "ok"},
		{path: "/big-chunked", want: Success, msg: strings.Repeat("0", 0x1000) + strings.Repeat("1", 0x1000) + strings.Repeat("2", maxOutput-0x2000)},
		{path: "/continue", want: Success, msg: "ok"},
		{path: "/204", want: Success, msg: ""},
		{path: "/304", want: Warning, msg: "Probe terminated redirects, Response body: "},
		{path: "/302-no-loc", want: Warning, msg: "Probe terminated redirects, Response body: here"},
		{path: "/300", want: Warning, msg: "Probe terminated redirects, Response body: pick"},
		{path: "/101", want: Failure, msg: "HTTP probe failed with statuscode: 101"},
		{path: "/long-header", want: Success, msg: "ok"},
		{path: "/no-reason", want: Failure, msg: "HTTP probe failed with statuscode: 500"},
		{path: "/bad-code", want: Failure, msg: `Get "<url>": net/http: HTTP/1.x transport connection broken: malformed HTTP status code "2x0"`},
		{path: "/bad-proto", want: Failure, msg: `Get "<url>": net/http: HTTP/1.x transport connection broken: malformed HTTP version "HTTP/x"`},
		{path: "/garbage", want: Failure, msg: `Get "<url>": net/http: HTTP/1.x transport connection broken: malformed HTTP response "hello"`},
		{path: "/empty", want: Failure, msg: `Get "<url>": EOF`},
		{path: "/cut-head", want: Failure, msg: `Get "<url>": `},
		{path: "/short", want: Failure, err: "unexpected EOF"},
		{path: "/bad-cl", want: Failure, msg: `Get "<url>": net/http: HTTP/1.x transport connection broken: bad Content-Length "x"`},
		{path: "/two-cl", want: Failure, msg: `Get "<url>": net/http: HTTP/1.x transport connection broken: http: message cannot contain multiple Content-Length headers; got ["1" "2"]`},
		{path: "/same-cl", want: Success, msg: "ok"},
		{path: "/two-te", want: Failure, msg: `Get "<url>": net/http: HTTP/1.x transport connection broken: too many transfer encodings: ["chunked" "chunked"]`},
		{path: "/empty-cl", want: Failure, msg: `Get "<url>": net/http: HTTP/1.x transport connection broken: invalid empty Content-Length ""`},
		{path: "/gzip", want: Failure, msg: `Get "<url>": net/http: HTTP/1.x transport connection broken: unsupported transfer encoding: "gzip"`},
		{path: "/bad-chunk", want: Failure, err: "invalid byte in chunk length"},
		{path: "/chunk-no-crlf", want: Failure, err: "malformed chunked encoding"},
		{path: "/chunk-bare-lf", want: Failure, err: "chunked line ends with bare LF"},
		{path: "/short-chunk", want: Failure, err: "unexpected EOF"},
		{path: "/body-hangs", want: Failure, err: "context deadline exceeded (Client.Timeout or context cancellation while reading body)"},
	} {
		for _, impl := range httpImpls {
			t.Run(impl.name+tc.path, func(t *testing.T) {
				req := HTTPRequest{Scheme: "http", Host: "127.0.0.1", Port: rt.port, Path: tc.path, Timeout: 300 * time.Millisecond}
				res, msg, err := impl.new(HTTPOptions{}).Probe(context.Background(), req)
				assert.Equal(t, tc.want, res)
				if tc.err != "" {
					require.Error(t, err)
					assert.Equal(t, tc.err, err.Error())
					assert.Empty(t, msg)
					return
				}
				require.NoError(t, err)
				want := strings.ReplaceAll(tc.msg, "<url>", "http://127.0.0.1:"+strconv.Itoa(rt.port)+tc.path)
				if strings.HasPrefix(want, "Get ") {
					assert.True(t, strings.HasPrefix(msg, want), "message %q does not start with %q", msg, want)
				} else {
					assert.Equal(t, want, msg)
				}
			})
		}
	}
}

// TestHTTPRequestBytes: the fast path sends what net/http sends.
func TestHTTPRequestBytes(t *testing.T) {
	rt := newRawTarget(t, nil)
	for _, tc := range []struct {
		name    string
		path    string
		headers http.Header
	}{
		{name: "plain", path: "/p1"},
		{name: "query", path: "/p2?a=b&c=d"},
		{name: "empty path", path: ""},
		{name: "headers", path: "/p3", headers: http.Header{
			"X-B": {"2", " two "}, "X-A": {"1"}, "Authorization": {"Bearer t"},
			"User-Agent": {"mine/1"}, "Accept": {"text/plain"}, "Host": {"svc.example:8080"},
		}},
		{name: "empty accept and user agent", path: "/p4", headers: http.Header{"Accept": {""}, "User-Agent": {""}}},
		{name: "non-canonical key", path: "/p5", headers: http.Header{"x-lower": {"v"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var heads []string
			for _, impl := range httpImpls {
				req := HTTPRequest{Scheme: "http", Host: "127.0.0.1", Port: rt.port, Path: tc.path, Headers: tc.headers, Timeout: time.Second}
				res, msg, err := impl.new(HTTPOptions{}).Probe(context.Background(), req)
				require.NoError(t, err)
				require.Equal(t, Failure, res, msg) // 404 from rawTarget
				p := tc.path
				if p == "" {
					p = "/"
				}
				heads = append(heads, rt.head(p))
			}
			assert.Equal(t, heads[1], heads[0], "fast path vs net/http")
			assert.Contains(t, heads[0], "Connection: close\r\n")
		})
	}
}

// TestHTTPSlowPaths: requests the fast path leaves to net/http still work.
func TestHTTPSlowPaths(t *testing.T) {
	p := NewHTTP(HTTPOptions{})
	for _, tc := range []struct {
		name string
		req  HTTPRequest
		fast bool
	}{
		{name: "plain", req: HTTPRequest{Scheme: "http", Host: "10.0.0.1", Path: "/healthz"}, fast: true},
		{name: "name", req: HTTPRequest{Scheme: "http", Host: "pod.ns.svc", Path: "/"}, fast: true},
		{name: "ipv6", req: HTTPRequest{Scheme: "http", Host: "fd00::1", Path: "/"}, fast: true},
		{name: "https", req: HTTPRequest{Scheme: "https", Host: "10.0.0.1", Path: "/"}},
		{name: "zone", req: HTTPRequest{Scheme: "http", Host: "fe80::1%eth0", Path: "/"}},
		{name: "escape", req: HTTPRequest{Scheme: "http", Host: "10.0.0.1", Path: "/a%20b"}},
		{name: "fragment", req: HTTPRequest{Scheme: "http", Host: "10.0.0.1", Path: "/a#b"}},
		{name: "relative", req: HTTPRequest{Scheme: "http", Host: "10.0.0.1", Path: "healthz"}},
		{name: "authority", req: HTTPRequest{Scheme: "http", Host: "10.0.0.1", Path: "//x/healthz"}},
		{name: "connection header", req: HTTPRequest{Scheme: "http", Host: "10.0.0.1", Headers: http.Header{"Connection": {"keep-alive"}}}},
		{name: "bad header value", req: HTTPRequest{Scheme: "http", Host: "10.0.0.1", Headers: http.Header{"X": {"a\r\nb"}}}},
		{name: "bad header name", req: HTTPRequest{Scheme: "http", Host: "10.0.0.1", Headers: http.Header{"X Y": {"a"}}}},
		{name: "unicode host header", req: HTTPRequest{Scheme: "http", Host: "10.0.0.1", Headers: http.Header{"Host": {"bücher.example"}}}},
	} {
		_, fast := p.fast(tc.req)
		assert.Equal(t, tc.fast, fast, tc.name)
	}
	assert.False(t, func() bool {
		_, ok := NewHTTP(HTTPOptions{FollowNonLocalRedirects: true}).fast(HTTPRequest{Scheme: "http", Host: "10.0.0.1"})
		return ok
	}())

	// And net/http rejects what it must, before dialling anything.
	res, msg, err := p.Probe(context.Background(), HTTPRequest{Scheme: "http", Host: "127.0.0.1", Port: freePort(t), Headers: http.Header{"X": {"a\r\nb"}}})
	require.NoError(t, err)
	assert.Equal(t, Failure, res)
	assert.Contains(t, msg, `net/http: invalid header field value for "X"`)
}

// TestFastURI: a path the fast path sends as is is what net/url makes of it.
func TestFastURI(t *testing.T) {
	for _, path := range []string{
		"", "/", "/healthz", "/a/b/c", "/q?x=1&y=2", "/q?", "/q?a?b", "/~user/!$&'()*+,;=:@",
		"/a%20b", "/a b", "/é", "healthz", "//x", "/a#f", "/a/../b", "/?q=%zz",
	} {
		uri, ok := fastURI(path)
		if !ok {
			continue
		}
		u, err := url.Parse(probeURL("http", "10.0.0.1", 80, path).String())
		require.NoError(t, err, path)
		assert.Equal(t, u.RequestURI(), uri, path)
	}
}
