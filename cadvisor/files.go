package cadvisor

import (
	"bytes"
	"errors"
	"syscall"
)

// fileReader reads small kernel files (cgroup, /proc) into one buffer it
// reuses: a housekeeping pass reads thousands of them, and os.ReadFile
// would allocate a File and a buffer for each.
type fileReader struct {
	buf []byte
}

// read returns the file's bytes, valid until the next read.
func (r *fileReader) read(path string) ([]byte, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, &pathError{path, err}
	}
	defer syscall.Close(fd)
	if r.buf == nil {
		r.buf = make([]byte, 16<<10)
	}
	n := 0
	for {
		if n == len(r.buf) {
			r.buf = append(r.buf, make([]byte, len(r.buf))...)
		}
		m, err := syscall.Read(fd, r.buf[n:])
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return nil, &pathError{path, err}
		}
		if m == 0 {
			return r.buf[:n], nil
		}
		n += m
	}
}

// uint reads a file holding one number ("max" is ^0, as "unlimited").
func (r *fileReader) uint(path string) (uint64, error) {
	b, err := r.read(path)
	if err != nil {
		return 0, err
	}
	return parseUint(bytes.TrimSpace(b)), nil
}

type pathError struct {
	path string
	err  error
}

func (e *pathError) Error() string { return e.path + ": " + e.err.Error() }
func (e *pathError) Unwrap() error { return e.err }

// parseUint parses a decimal; "max" and what does not parse give ^0 and
// 0, a negative number (v1's -1 for unlimited) ^0.
func parseUint(b []byte) uint64 {
	if string(b) == "max" || (len(b) > 0 && b[0] == '-') {
		return ^uint64(0)
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return v
		}
		v = v*10 + uint64(c-'0')
	}
	return v
}

// forEachKeyValue calls f with each line's first field and the rest, as in
// "key value" files (memory.stat, cpu.stat, memory.events).
func forEachKeyValue(b []byte, f func(key, value []byte)) {
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		if i := bytes.IndexByte(line, ' '); i > 0 {
			f(line[:i], bytes.TrimSpace(line[i+1:]))
		}
	}
}

func forEachLine(b []byte, f func(line []byte)) {
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		f(line)
	}
}

func cutPrefix(b []byte, prefix string) ([]byte, bool) { return bytes.CutPrefix(b, []byte(prefix)) }

// readRootMemory fills the root cgroup's memory from /proc/meminfo on
// cgroup v2, whose root has no memory.current (libcontainer does the
// same): usage is MemTotal - MemFree.
func readRootMemory(r *fileReader, m *MemoryStats) {
	b, err := r.read("/proc/meminfo")
	if err != nil {
		return
	}
	var total, free uint64
	forEachLine(b, func(line []byte) {
		k, v, ok := bytes.Cut(line, []byte{':'})
		if !ok {
			return
		}
		kb := parseUint(bytes.TrimSuffix(bytes.TrimSpace(v), []byte(" kB"))) * 1024
		switch string(k) {
		case "MemTotal":
			total = kb
		case "MemFree":
			free = kb
		case "Inactive(file)":
			m.InactiveFile = kb
		case "Active(file)":
			m.ActiveFile = kb
		}
	})
	m.Usage = total - free
	m.WorkingSet = workingSet(m.Usage, m.InactiveFile)
}
