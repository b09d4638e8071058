package server

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
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
// limitBytes, and with follow=true the lines written after until the
// client goes away. The file is streamed, never read whole: tailLines is
// found by reading backwards from the end. A last line still being written
// is printed as far as it goes by a plain read and whole by a follow.
func (h *Handler) containerLogs(w http.ResponseWriter, r *http.Request) {
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/containerLogs/"), "/")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		http.Error(w, "path must be /containerLogs/<namespace>/<pod>/<container>", http.StatusBadRequest)
		return
	}
	opts, err := parseLogOptions(r.URL.Query(), h.cfg.Clock.Now())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	path, err := h.cfg.Logs.ContainerLogPath(r.Context(), parts[0], parts[1], parts[2], opts.previous)
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	f, err := os.Open(path)
	if err != nil {
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	}
	defer f.Close()
	if opts.tail >= 0 {
		off, err := tailOffset(f, opts.tail)
		if err == nil {
			_, err = f.Seek(off, io.SeekStart)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	out := &logWriter{w: w, left: opts.limit, opts: opts}
	rd := bufio.NewReaderSize(f, 64<<10)
	var partial string // a line not ended yet
	flusher, _ := w.(http.Flusher)
	for !out.full() {
		line, err := rd.ReadString('\n')
		partial += line
		if err == nil {
			out.message(partial)
			partial = ""
			continue
		}
		if !errors.Is(err, io.EOF) {
			return
		}
		if !opts.follow {
			if partial != "" && opts.tail != 0 {
				out.message(partial)
			}
			return
		}
		if flusher != nil {
			flusher.Flush()
		}
		select {
		case <-r.Context().Done():
			return
		case <-h.cfg.Clock.After(followPoll):
		}
	}
}

// logWriter writes CRI log lines' messages within the byte limit.
type logWriter struct {
	w    io.Writer
	left int64 // -1: no limit
	opts logOptions
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
	n, _ := io.WriteString(l.w, msg)
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
