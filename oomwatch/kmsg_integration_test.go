//go:build integration

package oomwatch_test

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nodekit-dev/nodekit/internal/poll"
	"github.com/nodekit-dev/nodekit/oomwatch"
)

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatalf("reading %s needs root (euid %d)", oomwatch.DefaultKmsgPath, os.Geteuid())
	}
}

// kmsgWriter opens /dev/kmsg to log the test's marker lines (as root
// may); the tests trigger no OOM.
func kmsgWriter(t *testing.T) (*os.File, string) {
	t.Helper()
	requireRoot(t)
	log, err := os.OpenFile(oomwatch.DefaultKmsgPath, os.O_WRONLY, 0)
	require.NoError(t, err)
	t.Cleanup(func() { log.Close() })
	return log, fmt.Sprintf("nodekit oomwatch integration test %d:", time.Now().UnixNano())
}

// logUntilRead logs a marker line per look until got has one: the reader
// may not have opened the device yet (the kernel limits each writer to
// 10 lines per 5 s).
func logUntilRead(t *testing.T, log *os.File, marker string, got *lineLog) {
	t.Helper()
	n := 0
	poll.Eventually(t, func() bool {
		if len(got.get()) > 0 {
			return true
		}
		n++
		_, err := fmt.Fprintf(log, "<6>%s after %d\n", marker, n)
		require.NoError(t, err)
		return false
	}, 30*time.Second, 200*time.Millisecond)
}

// The real /dev/kmsg: Stream starts at the log's end (a line logged
// before it is not read, a line logged after it is, whole, with its
// header) and returns nil when ctx is cancelled.
func TestKmsgRealDevice(t *testing.T) {
	log, marker := kmsgWriter(t)
	_, err := fmt.Fprintf(log, "<6>%s before\n", marker)
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got lineLog
	done := make(chan error, 1)
	go func() {
		done <- oomwatch.Kmsg{}.Stream(ctx, func(line string) {
			if strings.Contains(line, marker) {
				got.add(line)
			}
		})
	}()
	logUntilRead(t, log, marker, &got)
	// The line logged before Stream would have come first.
	assert.Regexp(t, regexp.MustCompile(`^\d+,\d+,\d+,[^;]*;`+regexp.QuoteMeta(marker)+` after \d+$`), got.get()[0])
	cancel()
	require.NoError(t, <-done)
}

// A Watcher on /dev/kmsg reads it until cancelled, then returns nil.
func TestWatcherRealDevice(t *testing.T) {
	log, marker := kmsgWriter(t)
	var got lineLog
	w, err := oomwatch.New(oomwatch.Config{Source: oomwatch.SourceFunc(func(ctx context.Context, line func(string)) error {
		return oomwatch.Kmsg{}.Stream(ctx, func(l string) {
			if strings.Contains(l, marker) {
				got.add(l)
			}
			line(l)
		})
	})})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	logUntilRead(t, log, marker, &got)
	cancel()
	require.NoError(t, <-done)
}
