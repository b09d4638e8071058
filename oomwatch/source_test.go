package oomwatch_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/nodekit-dev/nodekit/internal/poll"
	"github.com/nodekit-dev/nodekit/oomwatch"
)

// lineLog collects a Source's lines for a test to look at while it runs.
type lineLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *lineLog) add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, line)
}

func (l *lineLog) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

func TestKmsgFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kmsg")
	require.NoError(t, os.WriteFile(path, []byte("6,1,10,-;one\n SUBSYSTEM=x\n6,2,20,-;two"), 0o600))
	for _, tc := range []struct {
		name string
		src  oomwatch.Kmsg
		want []string
	}{
		// What was logged before Stream is not read: a file is at its end.
		{"from the end", oomwatch.Kmsg{Path: path}, nil},
		// The last line needs no newline.
		{"from the start", oomwatch.Kmsg{Path: path, FromStart: true}, []string{"6,1,10,-;one", " SUBSYSTEM=x", "6,2,20,-;two"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got lineLog
			require.NoError(t, tc.src.Stream(context.Background(), got.add))
			assert.Equal(t, tc.want, got.get())
		})
	}
}

// A line longer than the source's bound comes in pieces, none lost.
func TestKmsgLongLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kmsg")
	long := strings.Repeat("x", 200<<10)
	require.NoError(t, os.WriteFile(path, []byte(long+"\nshort\n"), 0o600))
	var got lineLog
	require.NoError(t, oomwatch.Kmsg{Path: path, FromStart: true}.Stream(context.Background(), got.add))
	lines := got.get()
	require.Greater(t, len(lines), 2)
	assert.Equal(t, "short", lines[len(lines)-1])
	assert.Equal(t, long, strings.Join(lines[:len(lines)-1], ""))
}

func TestKmsgOpenError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing")
	err := oomwatch.Kmsg{Path: path}.Stream(context.Background(), func(string) {})
	require.ErrorIs(t, err, fs.ErrNotExist)
	assert.Contains(t, err.Error(), path)
}

// mkfifo makes a FIFO and opens it for writing too (O_RDWR does not wait
// for a reader), closed when the test ends.
func mkfifo(t *testing.T) (string, *os.File) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kmsg")
	require.NoError(t, unix.Mkfifo(path, 0o600))
	w, err := os.OpenFile(path, os.O_RDWR, 0)
	require.NoError(t, err)
	t.Cleanup(func() { w.Close() })
	return path, w
}

// A FIFO streams as /dev/kmsg does: lines as they come, a record split
// across writes whole, and a blocked read ends when ctx is cancelled.
func TestKmsgFIFO(t *testing.T) {
	path, w := mkfifo(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got lineLog
	done := make(chan error, 1)
	go func() { done <- oomwatch.Kmsg{Path: path}.Stream(ctx, got.add) }()

	_, err := w.WriteString("6,1,10,-;one\n6,2,20,")
	require.NoError(t, err)
	poll.Eventually(t, func() bool { return len(got.get()) == 1 }, 10*time.Second, time.Millisecond)
	_, err = w.WriteString("-;two\n")
	require.NoError(t, err)
	poll.Eventually(t, func() bool { return len(got.get()) == 2 }, 10*time.Second, time.Millisecond)
	assert.Equal(t, []string{"6,1,10,-;one", "6,2,20,-;two"}, got.get())

	cancel()
	require.NoError(t, <-done)
}

// The log ends when the FIFO's last writer closes it; a last line
// without its newline is given then.
func TestKmsgFIFOEnds(t *testing.T) {
	path, w := mkfifo(t)
	done := make(chan error, 1)
	var got lineLog
	go func() { done <- oomwatch.Kmsg{Path: path}.Stream(context.Background(), got.add) }()
	_, err := w.WriteString("6,1,10,-;one\n")
	require.NoError(t, err)
	// Once a line is read the reader holds the FIFO: closing the writer
	// cannot drop what is still in it.
	poll.Eventually(t, func() bool { return len(got.get()) == 1 }, 10*time.Second, time.Millisecond)
	_, err = w.WriteString("6,2,20,-;two")
	require.NoError(t, err)
	require.NoError(t, w.Close())
	require.NoError(t, <-done)
	assert.Equal(t, []string{"6,1,10,-;one", "6,2,20,-;two"}, got.get())
}
