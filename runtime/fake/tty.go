package fake

import (
	"bytes"
	"io"
	"sync"
)

// lockedWriter serializes writes: a process may write its streams from
// several goroutines, and on a terminal stdout and stderr are one stream.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// crlfWriter is a terminal's output processing (ONLCR, on by default in
// the pty runc creates): every "\n" goes out as "\r\n".
type crlfWriter struct{ w io.Writer }

func (c crlfWriter) Write(b []byte) (int, error) {
	if bytes.IndexByte(b, '\n') < 0 {
		return c.w.Write(b)
	}
	if _, err := c.w.Write(bytes.ReplaceAll(b, []byte("\n"), []byte("\r\n"))); err != nil {
		return 0, err
	}
	return len(b), nil
}

// ttyInput is a terminal's input processing: a carriage return (what the
// Enter key sends in a raw terminal) reads as "\n" (ICRNL), and what is
// read is echoed to the terminal (ECHO).
type ttyInput struct {
	r    io.Reader
	echo io.Writer
}

func (t ttyInput) Read(b []byte) (int, error) {
	n, err := t.r.Read(b)
	for i := range b[:n] {
		if b[i] == '\r' {
			b[i] = '\n'
		}
	}
	if n > 0 {
		_, _ = t.echo.Write(b[:n])
	}
	return n, err
}
