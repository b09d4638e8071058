package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"k8s.io/utils/clock"

	"github.com/nodekit-dev/nodekit/containerlog"
)

// followPoll is how often a follow looks for new lines.
const followPoll = 100 * time.Millisecond

// logOptions are the kubelet's /containerLogs query parameters.
type logOptions struct {
	tail       int64 // lines from the end; -1: all
	limit      int64 // bytes of output; -1: no limit
	since      time.Time
	timestamps bool
	follow     bool
	previous   bool
}

// parseLogOptions reads the query; sinceSeconds counts back from now.
func parseLogOptions(q url.Values, now time.Time) (logOptions, error) {
	o := logOptions{tail: -1, limit: -1}
	integer := func(name string, dst *int64, min int64) error {
		v := q.Get(name)
		if v == "" {
			return nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < min {
			return fmt.Errorf("%s: invalid value %q: must be an integer >= %d", name, v, min)
		}
		*dst = n
		return nil
	}
	var sinceSeconds int64
	if err := errors.Join(integer("tailLines", &o.tail, 0), integer("limitBytes", &o.limit, 1),
		integer("sinceSeconds", &sinceSeconds, 1)); err != nil {
		return o, err
	}
	if sinceSeconds > 0 {
		o.since = now.Add(-time.Duration(sinceSeconds) * time.Second)
	}
	if v := q.Get("sinceTime"); v != "" {
		if sinceSeconds > 0 {
			return o, errors.New("sinceSeconds and sinceTime: only one may be given")
		}
		t, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return o, fmt.Errorf("sinceTime: invalid value %q: must be an RFC 3339 time", v)
		}
		o.since = t
	}
	for name, dst := range map[string]*bool{"timestamps": &o.timestamps, "follow": &o.follow, "previous": &o.previous} {
		if v := q.Get(name); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return o, fmt.Errorf("%s: invalid value %q: must be true or false", name, v)
			}
			*dst = b
		}
	}
	return o, nil
}

// containerLogs serves /containerLogs/<namespace>/<pod>/<container> from
// the container's CRI log file ("<time> <stream> <tag> <message>" lines,
// tag P for a line the runtime split, F for its end), as the kubelet
// does: only the messages (with timestamps=true, each after its time),
// from sinceSeconds/sinceTime, the last tailLines lines, at most
// limitBytes. The instance is the one the pod's status names
// (logInstance). The file is streamed, never read whole: tailLines is
// found by reading backwards from the end. A WebSocket request gets the
// log as the API server's pods/log sends it (serveLogWebSocket).
func (h *Handler) containerLogs(w http.ResponseWriter, r *http.Request) {
	upgrade, protocol, err := logWebSocket(w, r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s, ok := h.openLog(w, r)
	if !ok {
		return
	}
	defer s.close()
	if upgrade {
		serveLogWebSocket(w, r, protocol, s.copy)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	flusher, _ := w.(http.Flusher)
	if flusher != nil {
		// Chunked, never a Content-Length, as the kubelet streams: the API
		// server's WebSocket wrapper (wsstream) drops what a read returns
		// together with EOF, which a whole short body is.
		w.WriteHeader(http.StatusOK)
		flusher.Flush()
	}
	s.copy(r.Context(), w, func() error {
		if flusher != nil {
			flusher.Flush()
		}
		return nil
	})
}

// openLog checks the request and opens the log it asks for, at the first
// line to print; it answers the errors itself.
func (h *Handler) openLog(w http.ResponseWriter, r *http.Request) (*logStream, bool) {
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/containerLogs/"), "/")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		http.Error(w, "path must be /containerLogs/<namespace>/<pod>/<container>", http.StatusBadRequest)
		return nil, false
	}
	opts, err := parseLogOptions(r.URL.Query(), h.cfg.Clock.Now())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return nil, false
	}
	ns, name, container := parts[0], parts[1], parts[2]
	inst, code, err := h.logInstance(ns, name, container, opts.previous)
	if err != nil {
		kubeletError(w, code, err)
		return nil, false
	}
	// The kubelet answers its runtime's errors (log file included) 400.
	path, err := h.cfg.Logs.ContainerLogPath(r.Context(), ns, name, container, inst.previous)
	if err != nil {
		kubeletError(w, http.StatusBadRequest, err)
		return nil, false
	}
	f, err := openLive(path)
	if err != nil {
		kubeletError(w, http.StatusBadRequest, err)
		return nil, false
	}
	if opts.tail >= 0 {
		off, err := tailOffset(f, opts.tail)
		if err == nil {
			_, err = f.Seek(off, io.SeekStart)
		}
		if err != nil {
			f.Close()
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return nil, false
		}
	}
	return &logStream{f: f, rd: bufio.NewReaderSize(f, 64<<10), path: path, opts: opts, clock: h.cfg.Clock,
		running: func() bool { return h.stillRunning(ns, name, container, inst.id) }}, true
}

// openLive opens the container's log at path; while a rotation has
// renamed it and the runtime has not reopened it yet, the file it was
// renamed to, which holds the newest lines (the kubelet fails the request
// then). A follow moves on to the new file at path as after any rotation.
func openLive(path string) (*os.File, error) {
	f, err := os.Open(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return f, err
	}
	if logs, lerr := containerlog.AllLogs(path); lerr == nil && len(logs) > 1 {
		if newest := logs[len(logs)-2]; !strings.HasSuffix(newest, ".gz") {
			if rf, rerr := os.Open(newest); rerr == nil {
				return rf, nil
			}
		}
	}
	return nil, err
}

// logStream is a request's reading of a container's log, across the
// files a rotation puts at its path.
type logStream struct {
	f       *os.File
	rd      *bufio.Reader
	path    string
	opts    logOptions
	clock   clock.Clock
	running func() bool // whether the instance read still runs
	partial string      // a line not ended yet
	next    *os.File    // the file a rotation put at path, read once f is
	stopped bool        // the container stopped: read to the end, then stop
}

func (s *logStream) close() {
	s.f.Close()
	if s.next != nil {
		s.next.Close()
	}
}

// copy writes the messages to w until the end of the file or, with
// follow, until the container no longer runs and what it wrote is out, as
// the kubelet's ReadLogs; or until ctx ends, w fails or limitBytes is
// reached. A last line still being written is printed as far as it goes
// by a plain read and whole, once ended, by a follow.
func (s *logStream) copy(ctx context.Context, w io.Writer, flush func() error) {
	out := &logWriter{w: w, left: s.opts.limit, opts: s.opts}
	for !out.full() && out.err == nil {
		line, err := s.rd.ReadString('\n')
		s.partial += line
		if err == nil {
			out.message(s.partial)
			s.partial = ""
			continue
		}
		if !errors.Is(err, io.EOF) {
			return
		}
		if !s.opts.follow {
			if s.partial != "" && s.opts.tail != 0 {
				out.message(s.partial)
			}
			return
		}
		if !s.more(ctx, flush) {
			return
		}
	}
}

// more is a follow at the end of the file: whether to read on (a new
// file, lines written meanwhile) or stop, as the kubelet's ReadLogs and
// waitLogs decide.
func (s *logStream) more(ctx context.Context, flush func() error) bool {
	switch {
	case s.next != nil:
		s.f.Close()
		s.f, s.next, s.partial = s.next, nil, ""
		s.rd.Reset(s.f)
		return true
	case s.stopped:
		return false // an unfinished last line stays unprinted, as there
	}
	if s.next = s.rotated(); s.next != nil {
		return true // the old file's last lines first
	}
	if !s.running() {
		s.stopped = true
		return true
	}
	if flush() != nil {
		return false
	}
	select {
	case <-ctx.Done():
		return false
	case <-s.clock.After(followPoll):
		return true
	}
}

// rotated opens the file at the path when it is no longer the one read:
// the kubelet rotates a log by renaming it and having the runtime reopen
// the path.
func (s *logStream) rotated() *os.File {
	at, err := os.Stat(s.path)
	if err != nil {
		return nil // renamed, not reopened yet
	}
	if cur, err := s.f.Stat(); err != nil || os.SameFile(cur, at) {
		return nil
	}
	f, err := os.Open(s.path)
	if err != nil {
		return nil
	}
	return f
}

// logWriter writes CRI log lines' messages within the byte limit.
type logWriter struct {
	w    io.Writer
	left int64 // -1: no limit
	opts logOptions
	err  error // the first write's failure: the client went
}

func (l *logWriter) full() bool { return l.left == 0 }

// message writes one CRI log line's message: a partial (P) line's message
// loses its newline, as it goes on in the next line.
func (l *logWriter) message(line string) {
	fields := strings.SplitN(line, " ", 4)
	msg, stamp := line, ""
	if len(fields) == 4 {
		msg, stamp = fields[3], fields[0]
		if fields[2] == "P" {
			msg = strings.TrimSuffix(msg, "\n")
		}
	}
	if !l.opts.since.IsZero() {
		if t, err := time.Parse(time.RFC3339Nano, stamp); err == nil && t.Before(l.opts.since) {
			return
		}
	}
	if l.opts.timestamps && stamp != "" {
		msg = stamp + " " + msg
	}
	if l.left >= 0 && int64(len(msg)) > l.left {
		msg = msg[:l.left]
	}
	n, err := io.WriteString(l.w, msg)
	if err != nil && l.err == nil {
		l.err = err
	}
	if l.left >= 0 {
		l.left -= int64(n)
	}
}

// tailOffset is where the last n complete lines of f begin (an unfinished
// last line follows them), found by reading blocks backwards from the end.
func tailOffset(f *os.File, n int64) (int64, error) {
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	const block = 32 << 10
	buf := make([]byte, block)
	var seen int64
	for end := st.Size(); end > 0; {
		start := max(end-block, 0)
		b := buf[:end-start]
		if _, err := f.ReadAt(b, start); err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		for i := len(b) - 1; i >= 0; i-- {
			if b[i] != '\n' {
				continue
			}
			// The newline ending the last complete line is the first seen;
			// the n+1st ends the line before the n wanted.
			if seen++; seen == n+1 {
				return start + int64(i) + 1, nil
			}
		}
		end = start
	}
	return 0, nil
}
