package server

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOpenLiveDuringRotation: between a rotation's rename and the
// runtime's reopen, the log is read from the file it was renamed to.
func TestOpenLiveDuringRotation(t *testing.T) {
	dir := t.TempDir()
	live := filepath.Join(dir, "0.log")
	for name, content := range map[string]string{"0.log.20261127-120000.gz": "old", "0.log.20261127-120005": "newest\n"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	f, err := openLive(live)
	require.NoError(t, err)
	b, err := io.ReadAll(f)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	assert.Equal(t, "newest\n", string(b))

	require.NoError(t, os.WriteFile(live, []byte("live\n"), 0o644))
	f, err = openLive(live)
	require.NoError(t, err)
	b, _ = io.ReadAll(f)
	f.Close()
	assert.Equal(t, "live\n", string(b), "the live file once reopened")

	_, err = openLive(filepath.Join(t.TempDir(), "0.log"))
	assert.ErrorIs(t, err, fs.ErrNotExist, "no log and no rotated one")
}
