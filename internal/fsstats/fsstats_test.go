package fsstats_test

import (
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/nodekit-dev/nodekit/internal/fsstats"
)

const (
	KiB = 1 << 10
	MiB = 1 << 20
)

// entry is a file of size bytes (random, so no filesystem can compress or
// punch them), a symlink to link, a hard link to hard, or a directory.
type entry struct {
	path       string
	size       int
	link, hard string
	dir        bool
}

// build makes the entries under root; a link or hard starting with "/" is
// taken under outside instead.
func build(t *testing.T, root, outside string, entries ...entry) {
	t.Helper()
	for _, e := range entries {
		p := filepath.Join(root, e.path)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		switch {
		case e.dir:
			require.NoError(t, os.MkdirAll(p, 0o755))
		case e.link != "":
			target := e.link
			if filepath.IsAbs(target) {
				target = filepath.Join(outside, target)
			}
			require.NoError(t, os.Symlink(target, p))
		case e.hard != "":
			require.NoError(t, os.Link(filepath.Join(root, e.hard), p))
		default:
			data := make([]byte, e.size)
			for i := range data {
				data[i] = byte(rand.Uint32())
			}
			require.NoError(t, os.WriteFile(p, data, 0o644))
		}
	}
}

// On whatever filesystem holds the temporary directory, sizes are counted
// in allocated blocks: at least what was written, at most a few blocks more
// per entry. The exact figures are checked on a tmpfs
// (fsstats_integration_test.go).
func TestUsage(t *testing.T) {
	outside := t.TempDir()
	build(t, outside, "", entry{path: "big", size: 4 * MiB}, entry{path: "bigdir/f", size: 4 * MiB})
	du, files := fsstats.DiskUsage, fsstats.FilesUsage
	for _, tc := range []struct {
		name    string
		measure func(string) (fsstats.UsageInfo, error)
		entries []entry
		written uint64 // bytes of data in the tree
		inodes  uint64 // DiskUsage: the root included; FilesUsage: not
	}{
		{"du: empty directory", du, nil, 0, 1},
		{"du: files and directories", du, []entry{{path: "a/big", size: MiB}, {path: "a/sub/small", size: 1}, {path: "empty"}},
			MiB + 1, 6},
		{"du: symlinks are not followed", du, []entry{{path: "file", link: "/big"}, {path: "dir", link: "/bigdir"}},
			0, 3},
		{"du: hard links count once", du, []entry{{path: "big", size: MiB}, {path: "again", hard: "big"}, {path: "sub/third", hard: "big"}},
			MiB, 3},
		{"du: a configMap volume: ..data and the keys are symlinks", du, []entry{
			{path: "..2026_11_23_10_00_00.1/key", size: 100 * KiB}, {path: "..data", link: "..2026_11_23_10_00_00.1"},
			{path: "key", link: "..data/key"}}, 100 * KiB, 5},
		{"files: empty directory", files, nil, 0, 0},
		{"files: a container's logs", files, []entry{{path: "0.log", size: MiB}, {path: "0.log.20261123-100000.gz", size: 10 * KiB},
			{path: "1.log"}}, MiB + 10*KiB, 3},
		{"files: subdirectories are left out", files, []entry{{path: "0.log", size: KiB}, {path: "sub/big", size: MiB},
			{path: "empty", dir: true}}, KiB, 1},
		{"files: symlinks count as themselves", files, []entry{{path: "0.log", link: "/big"}}, 0, 1},
		{"files: hard links count once", files, []entry{{path: "0.log", size: MiB}, {path: "1.log", hard: "0.log"}}, MiB, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			build(t, root, outside, tc.entries...)
			u, err := tc.measure(root)
			require.NoError(t, err)
			assert.Equal(t, tc.inodes, u.Inodes)
			assert.GreaterOrEqual(t, u.Bytes, tc.written)
			assert.LessOrEqual(t, u.Bytes, tc.written+tc.inodes*64*KiB, "blocks, rounded up, nothing followed")
		})
	}
}

func TestDiskUsageOfMissingPath(t *testing.T) {
	_, err := fsstats.DiskUsage(filepath.Join(t.TempDir(), "missing"))
	assert.ErrorIs(t, err, fs.ErrNotExist)
}

func TestFilesUsageErrors(t *testing.T) {
	dir := t.TempDir()
	_, err := fsstats.FilesUsage(filepath.Join(dir, "missing"))
	assert.ErrorIs(t, err, fs.ErrNotExist)
	build(t, dir, "", entry{path: "file", size: 1}, entry{path: "real/0.log", size: 1}, entry{path: "link", link: "real"})
	_, err = fsstats.FilesUsage(filepath.Join(dir, "file"))
	assert.ErrorContains(t, err, "not a directory")
	_, err = fsstats.FilesUsage(filepath.Join(dir, "link"))
	assert.ErrorContains(t, err, "not a directory", "a symlink to a directory is not followed")
}

func TestStatfs(t *testing.T) {
	dir := t.TempDir()
	got, err := fsstats.Statfs(dir)
	require.NoError(t, err)
	var st unix.Statfs_t
	require.NoError(t, unix.Statfs(dir, &st))
	bsize := uint64(st.Bsize)
	assert.Equal(t, st.Blocks*bsize, got.Capacity)
	assert.Equal(t, st.Files, got.Inodes)
	assert.LessOrEqual(t, got.Available, got.Capacity)
	assert.LessOrEqual(t, got.Used, got.Capacity)
	assert.LessOrEqual(t, got.InodesFree, got.Inodes)
	assert.Equal(t, got.Inodes-got.InodesFree, got.InodesUsed())

	_, err = fsstats.Statfs(filepath.Join(dir, "missing"))
	assert.ErrorIs(t, err, fs.ErrNotExist)
	assert.ErrorContains(t, err, "statfs "+dir)
}

// A volume of 1,000 small files in 100 directories: what measuring an
// emptyDir costs each summary.
func BenchmarkDiskUsage(b *testing.B) {
	root := b.TempDir()
	for d := range 100 {
		dir := filepath.Join(root, strconv.Itoa(d))
		if err := os.Mkdir(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		for f := range 10 {
			if err := os.WriteFile(filepath.Join(dir, strconv.Itoa(f)), []byte("data"), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if u, err := fsstats.DiskUsage(root); err != nil || u.Inodes != 1101 {
			b.Fatal(u, err)
		}
	}
}
