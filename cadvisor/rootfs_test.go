package cadvisor

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReadFilesystems: block-device filesystems once each (bind mounts
// and other types left out), measured with statfs at their mountpoint,
// whose mountinfo escapes are undone.
func TestReadFilesystems(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "with space")
	require.NoError(t, os.Mkdir(dir, 0o755))
	escaped := strings.ReplaceAll(dir, " ", `\040`)
	mountinfo := filepath.Join(t.TempDir(), "mountinfo")
	require.NoError(t, os.WriteFile(mountinfo, []byte(strings.Join([]string{
		"22 1 254:0 / " + escaped + " rw,relatime shared:1 - ext4 /dev/vda rw",
		"23 22 254:0 /sub /elsewhere rw,relatime shared:1 - ext4 /dev/vda rw",
		"24 1 0:21 / /run rw,nosuid - tmpfs tmpfs rw",
		"25 1 0:22 / /sys/fs/cgroup ro - cgroup2 cgroup2 rw",
	}, "\n")+"\n"), 0o644))
	got := readFilesystems(mountinfo)
	require.Len(t, got, 1)
	var st syscall.Statfs_t
	require.NoError(t, syscall.Statfs(dir, &st))
	assert.Equal(t, "/dev/vda", got[0].Device)
	assert.Equal(t, st.Blocks*uint64(st.Bsize), got[0].Limit)
	assert.Equal(t, st.Files, got[0].Inodes)
	assert.InDelta(t, float64((st.Blocks-st.Bfree)*uint64(st.Bsize)), float64(got[0].Usage), 64<<20, "in use, give or take other writers")
}
