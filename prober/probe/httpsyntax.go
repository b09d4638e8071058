package probe

import "net/http"

// Byte-level checks deciding what the fast path may send as is. They are
// deliberately narrower than HTTP allows: whatever they reject goes through
// net/http, which then builds, validates or rejects it exactly as the
// kubelet's prober would.

// fastURI returns path as the request target when net/url would leave it
// unchanged: it starts with one "/" and holds only characters a path or
// query may carry unescaped. An empty path is "/".
func fastURI(path string) (string, bool) {
	if path == "" {
		return "/", true
	}
	if path[0] != '/' || (len(path) > 1 && path[1] == '/') {
		return "", false // relative, or "//authority"
	}
	for i := 0; i < len(path); i++ {
		if !isURIByte(path[i]) {
			return "", false
		}
	}
	return path, true
}

// fastHost: an IP address or DNS name, nothing to escape, normalize or
// punycode.
func fastHost(h string) bool {
	if h == "" {
		return false
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; !isAlnum(c) && c != '.' && c != '-' && c != ':' && c != '_' {
			return false
		}
	}
	return true
}

// fastHeaders: valid names and values (net/http would refuse others), no
// Connection header (net/http merges it with its own) and a plain Host.
func fastHeaders(h http.Header) bool {
	for k, vs := range h {
		if k == "" || equalFold(k, "Connection") {
			return false
		}
		for i := 0; i < len(k); i++ {
			if !isTokenByte(k[i]) {
				return false
			}
		}
		for _, v := range vs {
			for i := 0; i < len(v); i++ {
				if c := v[i]; (c < ' ' && c != '\t') || c == 0x7f {
					return false
				}
			}
		}
	}
	if v := h["Host"]; len(v) > 0 && v[0] != "" {
		for i := 0; i < len(v[0]); i++ {
			if c := v[0][i]; !isAlnum(c) && c != '.' && c != '-' && c != ':' && c != '_' && c != '[' && c != ']' {
				return false
			}
		}
	}
	return true
}

// isURIByte: RFC 3986 pchar and query characters, except '%' (escapes
// are left to net/url).
func isURIByte(c byte) bool {
	if isAlnum(c) {
		return true
	}
	switch c {
	case '-', '.', '_', '~', '!', '$', '&', '\'', '(', ')', '*', '+', ',', ';', '=', ':', '@', '/', '?':
		return true
	}
	return false
}

// isTokenByte: RFC 9110 tchar, what a header name is made of.
func isTokenByte(c byte) bool {
	if isAlnum(c) {
		return true
	}
	switch c {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~':
		return true
	}
	return false
}

func isAlnum(c byte) bool { return isDigit(c) || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') }
func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// equalFold compares ASCII case-insensitively.
func equalFold[T string | []byte](b T, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := 0; i < len(b); i++ {
		if lower(b[i]) != lower(s[i]) {
			return false
		}
	}
	return true
}

func indexByte(b []byte, c byte) int {
	for i := 0; i < len(b); i++ {
		if b[i] == c {
			return i
		}
	}
	return -1
}

// trim is textproto.TrimString: a header value without surrounding
// spaces and tabs.
func trim(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}

func trimBytes(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}
