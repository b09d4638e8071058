//go:build linux

package eviction

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
	clocktesting "k8s.io/utils/clock/testing"
)

// This machine's /proc, cgroup mount and root filesystem (read only).
func TestLinuxSignalsOnThisMachine(t *testing.T) {
	l, err := NewLinuxSignals(LinuxConfig{RootDir: "/", Runtime: RuntimeFsInfoFunc(func(context.Context) (string, string, error) {
		return os.TempDir(), "", nil
	})})
	require.NoError(t, err)
	obs, err := l.Signals(context.Background())
	require.NoError(t, err)
	for _, sig := range []string{SignalMemoryAvailable, SignalNodeFsAvailable, SignalNodeFsInodesFree, SignalImageFsAvailable,
		SignalImageFsInodesFree, SignalContainerFsAvailable, SignalContainerFsInodesFree, SignalPIDAvailable} {
		o, ok := obs[sig]
		require.True(t, ok, sig)
		assert.Positive(t, o.Capacity, sig)
		assert.True(t, o.Available >= 0 && o.Available <= o.Capacity, "%s: %d of %d", sig, o.Available, o.Capacity)
		assert.False(t, o.Time.IsZero())
	}
	var si unix.Sysinfo_t
	require.NoError(t, unix.Sysinfo(&si))
	mem := obs[SignalMemoryAvailable]
	assert.Equal(t, int64(si.Totalram)*int64(si.Unit), mem.Capacity, "MemTotal")
	var st unix.Statfs_t
	require.NoError(t, unix.Statfs("/", &st))
	assert.Equal(t, int64(st.Blocks)*int64(st.Bsize), obs[SignalNodeFsAvailable].Capacity)
	pid := obs[SignalPIDAvailable]
	assert.Less(t, pid.Available, pid.Capacity, "this test's own process counts")

	image, err := l.HasDedicatedImageFs(context.Background())
	require.NoError(t, err)
	var a, b unix.Stat_t
	require.NoError(t, unix.Stat("/", &a))
	require.NoError(t, unix.Stat(os.TempDir(), &b))
	assert.Equal(t, a.Dev != b.Dev, image)
	split, err := l.HasDedicatedContainerFs(context.Background())
	require.NoError(t, err)
	assert.False(t, split, "no container filesystem of its own")
}

// fakeTree writes files under a temporary root.
func fakeTree(t *testing.T, files map[string]string) string {
	root := t.TempDir()
	for p, content := range files {
		full := filepath.Join(root, p)
		require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
		require.NoError(t, os.WriteFile(full, []byte(content), 0o644))
	}
	return root
}

var procFiles = map[string]string{
	"proc/meminfo":                "MemTotal:        8388608 kB\nMemFree:         1000 kB\n",
	"proc/sys/kernel/pid_max":     "4194304\n",
	"proc/sys/kernel/threads-max": "63000\n",
	"proc/loadavg":                "0.02 0.21 0.42 1/842 6676\n",
}

func withFiles(extra map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range procFiles {
		out[k] = v
	}
	for k, v := range extra {
		out[k] = v
	}
	return out
}

func TestLinuxSignalsCgroupV1(t *testing.T) {
	root := fakeTree(t, withFiles(map[string]string{
		"cg/memory/memory.usage_in_bytes":           "3221225472\n",
		"cg/memory/memory.stat":                     "cache 1\ntotal_inactive_file 1073741824\n",
		"cg/memory/kubepods/memory.usage_in_bytes":  "2147483648\n",
		"cg/memory/kubepods/memory.stat":            "total_inactive_file 536870912\n",
		"cg/memory/kubepods/memory.limit_in_bytes":  "6442450944\n",
		"cg/memory/unlimited/memory.usage_in_bytes": "1\n",
		"cg/memory/unlimited/memory.stat":           "",
		"cg/memory/unlimited/memory.limit_in_bytes": "9223372036854771712\n",
	}))
	clk := clocktesting.NewFakeClock(t0)
	l, err := NewLinuxSignals(LinuxConfig{RootDir: root, CgroupMount: filepath.Join(root, "cg"), CgroupVersion: 1,
		KubepodsCgroup: "kubepods", ProcRoot: filepath.Join(root, "proc"), Clock: clk})
	require.NoError(t, err)
	obs, err := l.Signals(context.Background())
	require.NoError(t, err)
	assert.Equal(t, Observation{8*Gi - 2*Gi, 8 * Gi, t0}, obs[SignalMemoryAvailable], "MemTotal - (usage - total_inactive_file)")
	assert.Equal(t, Observation{6*Gi - 1536*Mi, 6 * Gi, t0}, obs[SignalAllocatableMemoryAvailable], "kubepods limit - its working set")
	assert.Equal(t, Observation{63000 - 842, 63000, t0}, obs[SignalPIDAvailable], "min(pid_max, threads-max) - tasks")
	assert.NotContains(t, obs, SignalImageFsAvailable, "no runtime filesystems")

	l.cfg.KubepodsCgroup = "unlimited"
	obs, err = l.Signals(context.Background())
	require.NoError(t, err)
	assert.NotContains(t, obs, SignalAllocatableMemoryAvailable, "an unlimited kubepods cgroup")
	l.cfg.KubepodsCgroup = "missing"
	obs, err = l.Signals(context.Background())
	require.NoError(t, err, "no kubepods cgroup yet is not an error")
	assert.NotContains(t, obs, SignalAllocatableMemoryAvailable)
}

func TestLinuxSignalsCgroupV2(t *testing.T) {
	root := fakeTree(t, withFiles(map[string]string{
		// The root cgroup has no memory.current: anon + file is the usage.
		"cg/memory.stat":                   "anon 2147483648\nfile 1073741824\ninactive_file 536870912\n",
		"cg/kubepods.slice/memory.current": "1073741824\n",
		"cg/kubepods.slice/memory.stat":    "anon 1\ninactive_file 268435456\n",
		"cg/kubepods.slice/memory.max":     "max\n",
	}))
	l, err := NewLinuxSignals(LinuxConfig{RootDir: root, CgroupMount: filepath.Join(root, "cg"), CgroupVersion: 2,
		KubepodsCgroup: "kubepods.slice", ProcRoot: filepath.Join(root, "proc"), Clock: clocktesting.NewFakeClock(t0)})
	require.NoError(t, err)
	obs, err := l.Signals(context.Background())
	require.NoError(t, err)
	assert.Equal(t, Observation{8*Gi - 2560*Mi, 8 * Gi, t0}, obs[SignalMemoryAvailable])
	assert.NotContains(t, obs, SignalAllocatableMemoryAvailable, "memory.max is max")
	require.NoError(t, os.WriteFile(filepath.Join(root, "cg/kubepods.slice/memory.max"), []byte("4294967296\n"), 0o644))
	obs, err = l.Signals(context.Background())
	require.NoError(t, err)
	assert.Equal(t, Observation{4*Gi - 768*Mi, 4 * Gi, t0}, obs[SignalAllocatableMemoryAvailable])
}

func TestLinuxSignalsErrorsKeepWhatWasRead(t *testing.T) {
	root := fakeTree(t, procFiles)
	l, err := NewLinuxSignals(LinuxConfig{RootDir: filepath.Join(root, "nope"), CgroupMount: filepath.Join(root, "cg"), CgroupVersion: 1,
		ProcRoot: filepath.Join(root, "proc"), Runtime: RuntimeFsInfoFunc(func(context.Context) (string, string, error) {
			return "", "", errors.New("runtime down")
		})})
	require.NoError(t, err)
	obs, err := l.Signals(context.Background())
	require.Error(t, err)
	assert.ErrorContains(t, err, "memory.available: open "+root+"/cg/memory/memory.stat: no such file or directory")
	assert.ErrorContains(t, err, "nodefs.available: statfs "+root+"/nope: no such file or directory")
	assert.ErrorContains(t, err, "imagefs.available: runtime down")
	assert.Equal(t, []string{SignalPIDAvailable}, keysOf(obs))

	for _, tc := range []struct {
		cfg  LinuxConfig
		want string
	}{
		{LinuxConfig{RootDir: "var/lib/kubelet"}, `eviction: LinuxConfig.RootDir: Invalid value: "var/lib/kubelet": must be an absolute path`},
		{LinuxConfig{CgroupVersion: 3}, "eviction: LinuxConfig.CgroupVersion: Invalid value: 3: must be 0 (detect), 1 or 2"},
		{LinuxConfig{KubepodsCgroup: "../kubepods", CgroupVersion: 1}, `eviction: LinuxConfig.KubepodsCgroup: Invalid value: "../kubepods": must be a path under CgroupMount`},
		{LinuxConfig{CgroupMount: "/nonexistent"}, "eviction: LinuxConfig.CgroupMount: no such file or directory"},
	} {
		_, err := NewLinuxSignals(tc.cfg)
		assert.EqualError(t, err, tc.want)
	}
}

func keysOf(o Observations) []string {
	var out []string
	for k := range o {
		out = append(out, k)
	}
	return out
}
