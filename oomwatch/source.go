package oomwatch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sys/unix"
)

// Source gives the kernel log's lines.
type Source interface {
	// Stream calls line with each line, in order and from one goroutine,
	// until ctx is done or the log ends (both return nil) or reading
	// fails (an error naming what was read). It returns only after its
	// last call of line. It may log through logr.FromContextOrDiscard.
	Stream(ctx context.Context, line func(string)) error
}

// SourceFunc adapts a function to a Source.
type SourceFunc func(ctx context.Context, line func(string)) error

// Stream calls f.
func (f SourceFunc) Stream(ctx context.Context, line func(string)) error { return f(ctx, line) }

// DefaultKmsgPath is the kernel log device.
const DefaultKmsgPath = "/dev/kmsg"

// readSize holds any /dev/kmsg record: a read shorter than the record
// (at most 8 KiB with its escapes and KEY=VALUE lines) fails with EINVAL.
const readSize = 16 << 10

// maxPartial bounds a line without its newline (from a pipe or a file;
// /dev/kmsg gives whole records): past it the bytes are given as a line.
const maxPartial = 64 << 10

// Kmsg is the Source that reads /dev/kmsg (root only), one record per
// read, or a FIFO or a file at Path. It starts at the end of the log:
// OOMs from before Stream are not reported again.
type Kmsg struct {
	// Path is read instead of DefaultKmsgPath: tests use a FIFO or a file.
	Path string
	// FromStart reads the records already in the kernel's ring buffer
	// too, as the kubelet does (cAdvisor's kmsg parser never seeks): each
	// restart then reports the OOMs of before it again.
	FromStart bool
}

// Stream opens the log and gives its lines until ctx is done or the log
// ends (a FIFO's writer closed, a file read to its end; /dev/kmsg never
// ends). Records the kernel overwrote before they were read are logged
// and skipped.
func (k Kmsg) Stream(ctx context.Context, line func(string)) error {
	path := cmp.Or(k.Path, DefaultKmsgPath)
	// O_NONBLOCK: a FIFO without a writer would block open(2) beyond
	// ctx's reach; Go polls the descriptor either way.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return fmt.Errorf("oomwatch: %w", err)
	}
	defer f.Close()
	if !k.FromStart {
		// On /dev/kmsg: after the last record. A pipe has no past (ESPIPE).
		if _, err := f.Seek(0, io.SeekEnd); err != nil && !errors.Is(err, syscall.ESPIPE) {
			return fmt.Errorf("oomwatch: seek to the end of %s: %w", path, err)
		}
	}
	// Cancelling ctx ends a blocked read through a deadline in the past;
	// wait for that callback so that nothing outlives Stream.
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(fired)
		_ = f.SetReadDeadline(time.Unix(1, 0))
	})
	defer func() {
		if !stop() {
			<-fired
		}
	}()
	return readLines(ctx, f, path, line)
}

// readLines reads r to its end, splitting what it reads into lines.
func readLines(ctx context.Context, r io.Reader, path string, line func(string)) error {
	buf := make([]byte, readSize)
	var partial []byte
	for ctx.Err() == nil {
		n, err := r.Read(buf)
		partial = splitLines(append(partial, buf[:n]...), line)
		switch {
		case err == nil:
		case ctx.Err() != nil:
		case errors.Is(err, io.EOF):
			if len(partial) > 0 {
				line(string(partial))
			}
			return nil
		case errors.Is(err, syscall.EPIPE):
			// The ring buffer wrapped past this reader; the next read
			// gives the oldest record left.
			logr.FromContextOrDiscard(ctx).Info("Kernel log records were overwritten before they were read; OOMs among them are missed", "path", path)
		default:
			return fmt.Errorf("oomwatch: read %s: %w", path, err)
		}
	}
	return nil
}

// splitLines gives each complete line of data and returns the rest,
// moved to the front of data.
func splitLines(data []byte, line func(string)) []byte {
	start := 0
	for i, c := range data {
		if c == '\n' {
			line(string(data[start:i]))
			start = i + 1
		}
	}
	if len(data)-start > maxPartial {
		line(string(data[start:]))
		start = len(data)
	}
	return append(data[:0], data[start:]...)
}

// bootTime is when the kernel's log clock (printk's local_clock) read 0:
// now less CLOCK_MONOTONIC, which like it does not count suspend. The
// kubelet subtracts sysinfo's uptime, in whole seconds.
func bootTime(now time.Time) (time.Time, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return time.Time{}, fmt.Errorf("oomwatch: boot time: clock_gettime(CLOCK_MONOTONIC): %w", err)
	}
	return now.Add(-time.Duration(ts.Nano())), nil
}
