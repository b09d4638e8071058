package probe

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net/http"
	"testing"
)

// transportRead reads a response as net/http's Transport does: 1xx
// informational responses but 101 skipped, at most 5.
func transportRead(data []byte) (*http.Response, error) {
	br := bufio.NewReader(bytes.NewReader(data))
	for i := 0; ; i++ {
		resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodGet})
		if err != nil || resp.StatusCode < 100 || resp.StatusCode > 199 || resp.StatusCode == http.StatusSwitchingProtocols {
			return resp, err
		}
		if i == max1xx {
			return nil, errors.New("net/http: too many 1xx informational responses")
		}
	}
}

// FuzzReadResponse holds the fast path's HTTP/1 parser to net/http's
// reading of the same bytes: it never panics; whatever it accepts,
// net/http accepts too, with the same status code and the same first
// bytes of the body (its 10 KiB); whatever net/http refuses it refuses.
func FuzzReadResponse(f *testing.F) {
	for _, seed := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
		"HTTP/1.0 503 Service Unavailable\r\n\r\nbusy",
		"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n",
		"HTTP/1.1 302 Found\r\nLocation: /elsewhere\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nok",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
		"HTTP/1.1 abc OK\r\n\r\n",
		"HTTP/1.1 200 OK\r\nBad Header\r\n\r\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		br := bufio.NewReader(bytes.NewReader(data))
		r, err := readResponseHead(br)
		resp, stdErr := transportRead(data)
		if stdErr != nil {
			if err == nil {
				t.Fatalf("accepted %q, which net/http refuses: %v", data, stdErr)
			}
			return
		}
		defer resp.Body.Close()
		if err != nil {
			return // stricter than net/http is safe: the probe fails
		}
		if r.code != resp.StatusCode {
			t.Fatalf("status %d, net/http says %d, for %q", r.code, resp.StatusCode, data)
		}
		buf := make([]byte, 10<<10)
		n, bodyErr := readBody(br, buf, r)
		want, stdBodyErr := io.ReadAll(io.LimitReader(resp.Body, int64(len(buf))))
		if bodyErr == nil && stdBodyErr == nil && !bytes.Equal(buf[:n], want) {
			t.Fatalf("body %q, net/http reads %q, for %q", buf[:n], want, data)
		}
	})
}
