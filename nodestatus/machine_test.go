package nodestatus

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func write(t *testing.T, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, rel)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
}

func TestReadMachineInfo(t *testing.T) {
	root := t.TempDir()
	write(t, root, "proc/meminfo", "MemTotal:       16318464 kB\nMemFree:         1000 kB\n")
	write(t, root, "proc/sys/kernel/random/boot_id", "b00t\n")
	write(t, root, "proc/sys/kernel/osrelease", "6.1.0-28-amd64\n")
	write(t, root, "etc/machine-id", "abc123\n")
	write(t, root, "etc/os-release", "NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n")
	write(t, root, "sys/class/dmi/id/product_uuid", "UUID-1\n")
	write(t, root, "sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages", "16\n")
	write(t, root, "sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages", "0\n")
	mi, err := ReadMachineInfo(MachinePaths{Proc: filepath.Join(root, "proc"), Sys: filepath.Join(root, "sys"),
		Etc: filepath.Join(root, "etc"), RootDir: root})
	require.NoError(t, err)
	assert.Equal(t, int64(16318464)<<10, mi.MemoryCapacity)
	assert.Equal(t, "b00t", mi.BootID)
	assert.Equal(t, "6.1.0-28-amd64", mi.KernelVersion)
	assert.Equal(t, "abc123", mi.MachineID)
	assert.Equal(t, "UUID-1", mi.SystemUUID)
	assert.Equal(t, "Debian GNU/Linux 12 (bookworm)", mi.OSImage)
	assert.Equal(t, map[int64]int64{2 << 20: 16, 1 << 30: 0}, mi.Hugepages)
	assert.Positive(t, mi.RootfsCapacity, "statfs of the root dir")
	assert.Positive(t, mi.NumCPU)
}

func TestReadMachineInfoErrors(t *testing.T) {
	root := t.TempDir()
	_, err := ReadMachineInfo(MachinePaths{Proc: root, RootDir: root})
	assert.ErrorContains(t, err, "meminfo")
	write(t, root, "meminfo", "MemTotal: lots kB\n")
	_, err = ReadMachineInfo(MachinePaths{Proc: root, RootDir: root})
	assert.ErrorContains(t, err, `MemTotal: Invalid value: "lots"`)
	write(t, root, "meminfo", "MemTotal: 1024 kB\n")
	_, err = ReadMachineInfo(MachinePaths{Proc: root, RootDir: filepath.Join(root, "missing")})
	assert.ErrorContains(t, err, "RootDir")
}

// The host's own files: what the agent reports on this machine.
func TestReadMachineInfoOfThisHost(t *testing.T) {
	mi, err := ReadMachineInfo(MachinePaths{RootDir: t.TempDir()})
	require.NoError(t, err)
	assert.Positive(t, mi.MemoryCapacity)
	assert.NotEmpty(t, mi.KernelVersion)
	assert.NotEmpty(t, mi.BootID)
}
