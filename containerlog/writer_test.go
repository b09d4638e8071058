package containerlog_test

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodekit-dev/nodekit/containerlog"
	"github.com/nodekit-dev/nodekit/internal/poll"
)

// TestWriterKeepsWriting: a container writes 50 MiB (incompressible; 10
// under the race detector) while Run rotates at 1Mi keeping 3 files; the
// log never has more than 3 files and ends with about 3 MiB on disk.
func TestWriterKeepsWriting(t *testing.T) {
	const (
		mi    = 1 << 20
		chunk = mi / 4
	)
	total := map[bool]int{false: 50 * mi, true: 10 * mi}[raceDetector]
	dir := t.TempDir()
	path := filepath.Join(dir, "0.log")
	rt := newFakeRuntime()
	rt.add(t, "c1", path)
	m, clk := newManager(t, rt, containerlog.Config{MaxSize: resource.MustParse("1Mi"), MaxFiles: 3})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- m.Run(ctx) }()
	defer func() { cancel(); require.NoError(t, <-done) }()
	poll.Eventually(t, clk.HasWaiters, 10*time.Second, time.Millisecond, "Run waits on its ticker")

	// Random bytes, generated once: a chunk repeats only 256 KiB later,
	// beyond gzip's 32 KiB window, so it does not compress.
	buf := make([]byte, chunk)
	_, _ = rand.NewChaCha8([32]byte{1}).Read(buf)
	for written := 0; written < total; written += chunk {
		rt.write(t, "c1", buf)
		clk.Step(10 * time.Second)
		// The pass after the tick rotates a live log at 1Mi.
		poll.Eventually(t, func() bool {
			info, err := os.Stat(path)
			return err == nil && info.Size() < mi
		}, 30*time.Second, time.Millisecond, "live log below 1Mi after %d bytes", written+chunk)
		files, size := du(t, dir)
		require.LessOrEqual(t, files, 3, "files after %d bytes", written+chunk)
		require.LessOrEqual(t, size, int64(3*mi+64<<10), "bytes on disk after %d bytes", written+chunk)
	}
	files, size := du(t, dir)
	assert.Equal(t, 3, files)
	assert.InDelta(t, 3*mi, size, mi, "about 3 MiB on disk")
	assert.Equal(t, total/mi, rt.reopenCount("c1"), "one rotation per MiB")
}

// du counts the files in dir and their bytes.
func du(t *testing.T, dir string) (files int, size int64) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		info, err := e.Info()
		require.NoError(t, err)
		files++
		size += info.Size()
	}
	return files, size
}
