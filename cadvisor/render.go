package cadvisor

import (
	"bufio"
	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
)

// exposition is a housekeeping's samples in Prometheus' text format,
// kept only compressed: a stream of DEFLATE blocks ending in a sync flush
// (not closed), so that a scrape compresses only what changes at each,
// the container_last_seen lines. At 110 pods the text is 5 MB, the
// stream 250 KB.
type exposition struct {
	deflate       []byte
	crc           uint32
	size          int      // of the text
	entriesLabels [][]byte // each entry's rendered base labels, for container_last_seen
}

// current is the last housekeeping's exposition, rendered now if no
// scrape did since: a node nothing scrapes spends neither the render's
// CPU nor the exposition's memory.
func (c *Collector) current() (x *exposition, failed bool) {
	c.renderMu.Lock()
	defer c.renderMu.Unlock()
	c.mu.Lock()
	x, entries, generation, failed := c.exposition, c.snapshot, c.generation, c.failed
	c.mu.Unlock()
	if x != nil {
		return x, failed
	}
	x = c.render(entries)
	c.mu.Lock()
	if c.generation == generation {
		c.exposition = x // no housekeeping meanwhile
	}
	c.mu.Unlock()
	return x, failed
}

// render writes the families in the order of defs, each entry's series
// in discovery order, through the compressor.
func (c *Collector) render(entries []*entry) *exposition {
	c.renders++
	x := &exposition{entriesLabels: make([][]byte, len(entries))}
	samples := make([][]sample, len(entries))
	for i, e := range entries {
		x.entriesLabels[i] = appendBaseLabels(nil, e)
		_, samples[i] = c.samplesOf(e, false)
	}
	// The compressor is made for each render, not kept: its 1.2 MB of
	// tables would stay live between housekeepings for a few ms of work.
	var z bytes.Buffer
	fw, _ := flate.NewWriter(&z, flate.BestSpeed)
	crc := crc32.NewIEEE()
	counted := &countingWriter{}
	w := bufio.NewWriterSize(io.MultiWriter(crc, counted, fw), 64<<10)
	var line []byte
	for _, d := range c.defs {
		headerDone := false
		for i := range entries {
			for j := range samples[i] {
				s := &samples[i][j]
				if s.def != d {
					continue
				}
				if !headerDone {
					writeHeader(w, d.name, d.help, d.counter)
					headerDone = true
				}
				line = append(append(line[:0], d.name...), '{')
				line = append(line, x.entriesLabels[i]...)
				for k, n := range d.extra {
					line = appendLabel(append(line, ','), n, s.extra[k])
				}
				line = appendValue(append(line, "} "...), s.value)
				if s.ts != nil {
					line = strconv.AppendInt(append(line, ' '), *s.ts, 10)
				}
				w.Write(append(line, '\n'))
			}
		}
	}
	w.Flush()
	fw.Flush()
	// A copy of its length: the buffer grew by doubling, and what it has
	// spare would be kept until the next housekeeping.
	x.deflate, x.crc, x.size = bytes.Clone(z.Bytes()), crc.Sum32(), counted.n
	return x
}

type countingWriter struct{ n int }

func (c *countingWriter) Write(p []byte) (int, error) { c.n += len(p); return len(p), nil }

func writeHeader(buf io.StringWriter, name, help string, counter bool) {
	typ := "gauge"
	if counter {
		typ = "counter"
	}
	help = strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(help)
	buf.WriteString("# HELP " + name + " " + help + "\n# TYPE " + name + " " + typ + "\n")
}

func appendBaseLabels(b []byte, e *entry) []byte {
	values := [...]string{e.container, e.id, e.image, e.name, e.namespace, e.pod}
	for i, n := range baseLabels {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendLabel(b, n, values[i])
	}
	return b
}

// appendLabel writes name="value" with the text format's escapes.
func appendLabel(b []byte, name, value string) []byte {
	b = append(append(b, name...), `="`...)
	for i := 0; i < len(value); i++ {
		switch c := value[i]; c {
		case '\\':
			b = append(b, `\\`...)
		case '"':
			b = append(b, `\"`...)
		case '\n':
			b = append(b, `\n`...)
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

func appendValue(b []byte, v float64) []byte {
	switch {
	case math.IsInf(v, 1):
		return append(b, "+Inf"...)
	case math.IsInf(v, -1):
		return append(b, "-Inf"...)
	case math.IsNaN(v):
		return append(b, "NaN"...)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}

// ServeHTTP serves the last housekeeping's exposition (rendered by the
// first scrape after it) in the text format
// (version 0.0.4), gzipped when the client accepts it, plus
// container_last_seen at now and container_scrape_error. It writes what
// promhttp would write for a registry holding only the Collector, without
// the registry's per-series work (a 110-pod node has about 18,000
// series; see BenchmarkScrape110Pods).
func (c *Collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	x, failed := c.current()
	var tail bytes.Buffer
	writeHeader(&tail, "container_last_seen", "Last time a container was seen by the exporter", false)
	now := c.cfg.Clock.Now()
	ms, secs := strconv.FormatInt(now.UnixMilli(), 10), strconv.FormatInt(now.Unix(), 10)
	for _, l := range x.entriesLabels {
		tail.WriteString("container_last_seen{")
		tail.Write(l)
		tail.WriteString("} " + secs + " " + ms + "\n")
	}
	writeHeader(&tail, "container_scrape_error", "1 if there was an error while getting container metrics, 0 otherwise", false)
	if failed {
		tail.WriteString("container_scrape_error 1\n")
	} else {
		tail.WriteString("container_scrape_error 0\n")
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	if !acceptsGzip(r) {
		// The stream was flushed, not closed: it ends without a final
		// block, which the reader reports once all is out.
		if _, err := io.Copy(w, flate.NewReader(bytes.NewReader(x.deflate))); err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
			return
		}
		w.Write(tail.Bytes())
		return
	}
	w.Header().Set("Content-Encoding", "gzip")
	w.Write(gzipHeader)
	w.Write(x.deflate)
	// A new compressor's blocks refer to nothing before them, so they
	// may follow the flushed ones; its Close ends the stream.
	fw, _ := flate.NewWriter(w, flate.BestSpeed)
	fw.Write(tail.Bytes())
	fw.Close()
	var trailer [8]byte
	binary.LittleEndian.PutUint32(trailer[:4], crc32.Update(x.crc, crc32.IEEETable, tail.Bytes()))
	binary.LittleEndian.PutUint32(trailer[4:], uint32(x.size+tail.Len()))
	w.Write(trailer[:])
}

// gzipHeader is RFC 1952's member header: deflate, no name, no time,
// unknown OS.
var gzipHeader = []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255}

func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		enc, q, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.TrimSpace(enc) == "gzip" && strings.TrimSpace(q) != "q=0" {
			return true
		}
	}
	return false
}
