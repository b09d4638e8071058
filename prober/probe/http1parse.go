package probe

// Reading an HTTP/1.x response for the fast path: only what a probe needs
// (status, framing, Location, at most 10 KiB of body), as strictly as
// net/http and with its error messages.

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// fastResponse is a response whose status line and headers have been read.
type fastResponse struct {
	code     int
	location string // only for redirect codes
	length   int64  // body length; -1: until EOF
	chunked  bool
}

const (
	maxHeaderBytes = 10 << 20 // net/http's default MaxResponseHeaderBytes
	max1xx         = 5
)

// readResponseHead reads the status line and headers, skipping 1xx
// informational responses as net/http does.
func readResponseHead(br *bufio.Reader) (fastResponse, error) {
	for i := 0; ; i++ {
		r, http11, err := readStatusLine(br)
		if err != nil {
			return r, err
		}
		if err := readHeaders(br, &r, http11); err != nil {
			return r, err
		}
		if r.code < 100 || r.code > 199 || r.code == http.StatusSwitchingProtocols {
			if r.code/100 == 1 || r.code == http.StatusNoContent || r.code == http.StatusNotModified {
				r.length, r.chunked = 0, false
			}
			return r, nil
		}
		if i == max1xx {
			return r, errors.New("net/http: too many 1xx informational responses")
		}
	}
}

func readStatusLine(br *bufio.Reader) (r fastResponse, http11 bool, err error) {
	line, long, err := readLine(br)
	switch {
	case err == io.EOF && len(line) == 0:
		return r, false, io.EOF // closed without answering, as net/http says
	case err == io.EOF:
		return r, false, io.ErrUnexpectedEOF
	case err != nil:
		return r, false, err
	case long:
		return r, false, brokenError("malformed HTTP response", line)
	}
	i := indexByte(line, ' ')
	if i < 0 {
		return r, false, brokenError("malformed HTTP response", line)
	}
	proto, rest := line[:i], line[i+1:]
	for len(rest) > 0 && rest[0] == ' ' {
		rest = rest[1:]
	}
	if j := indexByte(rest, ' '); j >= 0 {
		rest = rest[:j]
	}
	if len(rest) != 3 || !isDigit(rest[0]) || !isDigit(rest[1]) || !isDigit(rest[2]) {
		return r, false, brokenError("malformed HTTP status code", rest)
	}
	r.code = int(rest[0]-'0')*100 + int(rest[1]-'0')*10 + int(rest[2]-'0')
	if len(proto) != len("HTTP/1.1") || string(proto[:5]) != "HTTP/" || !isDigit(proto[5]) || proto[6] != '.' || !isDigit(proto[7]) {
		return r, false, brokenError("malformed HTTP version", proto)
	}
	// net/http's transfer reader takes HTTP/0.0 for HTTP/1.1.
	major, minor := proto[5], proto[7]
	return r, major > '1' || (major == '1' && minor >= '1') || (major == '0' && minor == '0'), nil
}

// readHeaders reads header lines up to the empty one, keeping what framing
// and redirects need: Content-Length, Transfer-Encoding, Location.
func readHeaders(br *bufio.Reader, r *fastResponse, http11 bool) error {
	r.length, r.chunked, r.location = -1, false, ""
	// Framing header values, kept to compare repeats; on the stack.
	var clBuf, teBuf [24]byte
	cl, te := clBuf[:0], teBuf[:0]
	seenCL, seenTE := false, false
	total := 0
	for {
		line, long, err := readLine(br)
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
		if total += len(line); total > maxHeaderBytes {
			return errors.New("net/http: server response headers exceeded " + strconv.Itoa(maxHeaderBytes) + " bytes; aborted")
		}
		if len(line) == 0 {
			break
		}
		if err := headerLineError(line, long); err != nil {
			return err // as net/textproto refuses it, so does the kubelet's probe
		}
		i := indexByte(line, ':')
		name, value := line[:i], trimBytes(line[i+1:])
		switch {
		case equalFold(name, "Content-Length"):
			if long {
				return brokenError("bad Content-Length", value)
			}
			if seenCL && string(cl) != string(value) {
				return broken("http: message cannot contain multiple Content-Length headers; got [" + strconv.Quote(string(cl)) + " " + strconv.Quote(string(value)) + "]")
			}
			if len(value) == 0 {
				return brokenError("invalid empty Content-Length", value)
			}
			n, err := strconv.ParseUint(string(value), 10, 63)
			if err != nil {
				return brokenError("bad Content-Length", value)
			}
			cl, r.length, seenCL = append(cl[:0], value...), int64(n), true
		case equalFold(name, "Transfer-Encoding"):
			if !http11 {
				continue // ignored before HTTP/1.1
			}
			if seenTE {
				return broken("too many transfer encodings: [" + strconv.Quote(string(te)) + " " + strconv.Quote(string(value)) + "]")
			}
			te, r.chunked, seenTE = append(te, value...), true, true
		case equalFold(name, "Location"):
			if r.location == "" && isRedirect(r.code) {
				if long {
					return brokenError("malformed Location header", value)
				}
				r.location = string(value)
			}
		}
	}
	if r.chunked {
		if !equalFold(te, "chunked") {
			return broken("unsupported transfer encoding: " + strconv.Quote(string(te)))
		}
		r.length = -1 // Transfer-Encoding wins over Content-Length
	}
	return nil
}

// headerLineError is net/textproto's verdict on a header line: a name of
// token bytes, a colon, a value without control bytes but tab; no
// continuation line (obsolete folding), which it refuses too.
func headerLineError(line []byte, long bool) error {
	i := indexByte(line, ':')
	switch {
	case len(line) > 0 && (line[0] == ' ' || line[0] == '\t'):
		return errors.New("malformed MIME header: unexpected continuation line")
	case i < 0 && !long:
		return errors.New("malformed MIME header: missing colon: " + strconv.Quote(string(line)))
	case i < 0:
		return errors.New("malformed MIME header: missing colon")
	}
	for _, c := range line[:i] {
		if !isTokenByte(c) {
			return errors.New("malformed MIME header line: " + strconv.Quote(string(line)))
		}
	}
	if i == 0 {
		return errors.New("malformed MIME header line: " + strconv.Quote(string(line)))
	}
	for _, c := range line[i+1:] {
		if c < ' ' && c != '\t' || c == 0x7f { // textproto's validHeaderValueByte
			return errors.New("malformed MIME header line: " + strconv.Quote(string(line)))
		}
	}
	return nil
}

// readLine returns the next line without its CR LF. A line longer than
// br's buffer is returned cut, with long set, and the rest skipped: no
// header a probe needs is that long, and memory stays bounded.
func readLine(br *bufio.Reader) (line []byte, long bool, err error) {
	line, err = br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		// line aliases br's buffer: keep it by not reading further
		// into it than needed to skip the rest.
		long = true
		line = append([]byte(nil), line[:min(len(line), 256)]...)
		for skipped := 0; err == bufio.ErrBufferFull; {
			var rest []byte
			rest, err = br.ReadSlice('\n')
			if skipped += len(rest); skipped > maxHeaderBytes {
				return line, long, errLineTooLong
			}
		}
		return line, long, err
	}
	if err != nil {
		return line, long, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, long, nil
}

// readBody reads at most len(buf) bytes of r's body: the rest is never
// read, the connection's close discards it.
func readBody(br *bufio.Reader, buf []byte, r fastResponse) (int, error) {
	switch {
	case r.chunked:
		return readChunked(br, buf)
	case r.length >= 0:
		n, err := io.ReadFull(br, buf[:min(int64(len(buf)), r.length)])
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return n, err
	}
	return readAtMost(br, buf)
}

// readChunked decodes a chunked body into buf until its end or buf is
// full, as strictly as net/http's chunked reader and with its errors.
func readChunked(br *bufio.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		line, err := readChunkLine(br)
		if err != nil {
			return n, err
		}
		if i := indexByte(line, ';'); i >= 0 {
			line = line[:i] // chunk extensions
		}
		size, err := parseHexUint(trimBytes(line))
		if err != nil {
			return n, err
		}
		if size == 0 {
			return n, nil // trailers are not read: the connection closes
		}
		m := int(min(size, uint64(len(buf)-n)))
		if _, err := io.ReadFull(br, buf[n:n+m]); err != nil {
			return n, unexpected(err)
		}
		n += m
		if uint64(m) < size {
			break // buf full mid-chunk
		}
		if err := readCRLF(br); err != nil {
			return n, err
		}
	}
	return n, nil
}

// readCRLF reads the CR LF that ends a chunk's data.
func readCRLF(br *bufio.Reader) error {
	for _, want := range [2]byte{'\r', '\n'} {
		c, err := br.ReadByte()
		if err != nil {
			return unexpected(err)
		}
		if c != want {
			return errors.New("malformed chunked encoding")
		}
	}
	return nil
}

func readChunkLine(br *bufio.Reader) ([]byte, error) {
	p, err := br.ReadSlice('\n')
	switch {
	case err == bufio.ErrBufferFull:
		return nil, errLineTooLong
	case err != nil:
		return nil, unexpected(err)
	}
	if i := indexByte(p, '\r'); i == -1 {
		return nil, errors.New("chunked line ends with bare LF")
	} else if i != len(p)-2 {
		return nil, errors.New("invalid CR in chunked line")
	}
	if p = p[:len(p)-2]; len(p) >= 4096 {
		return nil, errLineTooLong
	}
	return p, nil
}

var errLineTooLong = errors.New("header line too long")

func parseHexUint(v []byte) (n uint64, err error) {
	if len(v) == 0 {
		return 0, errors.New("empty hex number for chunk length")
	}
	for i, b := range v {
		switch {
		case '0' <= b && b <= '9':
			b -= '0'
		case 'a' <= b && b <= 'f':
			b = b - 'a' + 10
		case 'A' <= b && b <= 'F':
			b = b - 'A' + 10
		default:
			return 0, errors.New("invalid byte in chunk length")
		}
		if i == 16 {
			return 0, errors.New("http chunk length too large")
		}
		n = n<<4 | uint64(b)
	}
	return n, nil
}

func unexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// errClientTimeout is net/http's message for a probe that timed out
// before the answer's headers.
var errClientTimeout = errors.New("context deadline exceeded (Client.Timeout exceeded while awaiting headers)")

// requestError is the message net/http's client would give for err.
func requestError(ctx context.Context, deadline time.Time, urlStr string, err error) string {
	switch {
	case ctx.Err() != nil:
		err = ctx.Err()
	case !time.Now().Before(deadline) || isTimeout(err):
		err = errClientTimeout
	}
	return (&url.Error{Op: "Get", URL: urlStr, Err: err}).Error()
}

// bodyError is net/http's error for a body read that failed.
func bodyError(ctx context.Context, deadline time.Time, err error) error {
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case !time.Now().Before(deadline) || isTimeout(err):
		return errors.New("context deadline exceeded (Client.Timeout or context cancellation while reading body)")
	}
	return err
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// broken is net/http's error for a response it cannot parse.
func broken(msg string) error {
	return errors.New("net/http: HTTP/1.x transport connection broken: " + msg)
}

func brokenError(what string, val []byte) error {
	return broken(what + " " + strconv.Quote(string(val)))
}

func isRedirect(code int) bool {
	switch code {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}
