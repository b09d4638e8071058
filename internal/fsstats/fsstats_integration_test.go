//go:build integration

package fsstats_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nodekit-dev/nodekit/internal/fsstats"
	"github.com/nodekit-dev/nodekit/internal/testenv"
)

// On a tmpfs the figures are exact: a file takes whole pages, directories
// and short symlinks none.
func TestUsageOnTmpfs(t *testing.T) {
	root := filepath.Join(t.TempDir(), "mnt")
	testenv.MountTmpfs(t, root, 8*MiB)
	testenv.MountTmpfs(t, filepath.Join(root, "inner"), MiB) // a mount below: not entered
	build(t, root, "", entry{path: "big", size: MiB}, entry{path: "sub/small", size: 1}, entry{path: "link", link: "big"},
		entry{path: "again", hard: "big"}, entry{path: "inner/hidden", size: 512 * KiB})
	page := uint64(os.Getpagesize())

	u, err := fsstats.DiskUsage(root)
	require.NoError(t, err)
	assert.Equal(t, fsstats.UsageInfo{Bytes: MiB + page, Inodes: 5}, u, "root, big, sub, sub/small and link; not again nor inner")
	u, err = fsstats.FilesUsage(root)
	require.NoError(t, err)
	assert.Equal(t, fsstats.UsageInfo{Bytes: MiB, Inodes: 2}, u, "big and link")

	fs, err := fsstats.Statfs(root)
	require.NoError(t, err)
	assert.Equal(t, uint64(8*MiB), fs.Capacity)
	assert.Equal(t, MiB+page, fs.Used, "the files' pages; the inner tmpfs is another filesystem")
	assert.Equal(t, fs.Capacity-fs.Used, fs.Available)
	assert.Positive(t, fs.Inodes)
	assert.GreaterOrEqual(t, fs.InodesUsed(), uint64(5))
}
