package cgroupmgr

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// fakeFiles are what the "kernel" puts in each new cgroup directory of a fake tree.
var fakeV1Files = map[string]string{
	"cgroup.procs": "", "cpu.shares": "1024", "cpu.cfs_quota_us": "-1", "cpu.cfs_period_us": "100000",
	"memory.limit_in_bytes": "9223372036854771712", "pids.max": "max",
}

var fakeV2Files = map[string]string{
	"cgroup.procs": "", "cgroup.controllers": "cpu memory pids", "cgroup.subtree_control": "",
	"cpu.weight": "100", "cpu.max": "max 100000", "memory.max": "max", "memory.min": "0", "pids.max": "max",
	"memory.current": "0", "memory.stat": "", "cpu.stat": "", "pids.current": "0",
}

func writeFiles(dir string, files map[string]string) error {
	for f, v := range files {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(v), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func read(t *testing.T, path ...string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(path...))
	require.NoError(t, err)
	return strings.TrimSpace(string(b))
}

// newFakeManager returns a Manager over a fake hierarchy in a temp dir.
func newFakeManager(t *testing.T, mode Mode, cfg Config) (*Manager, string) {
	t.Helper()
	root := t.TempDir()
	cfg.MountRoot, cfg.Mode = root, mode
	if mode == ModeV2 {
		require.NoError(t, writeFiles(root, fakeV2Files))
	} else {
		for _, c := range []string{"cpu", "cpuacct", "memory", "pids"} {
			require.NoError(t, os.Mkdir(filepath.Join(root, c), 0o755))
			require.NoError(t, writeFiles(filepath.Join(root, c), fakeV1Files))
		}
	}
	m, err := New(cfg)
	require.NoError(t, err)
	switch d := m.fs.(type) {
	case *v1Driver:
		d.mkdirHook = func(dir string) error { return writeFiles(dir, fakeV1Files) }
	case *v2Driver:
		d.mkdirHook = func(dir string) error { return writeFiles(dir, fakeV2Files) }
	}
	return m, root
}

func guaranteedPod(uid string) *v1.Pod {
	return podOf(uid, nil, ctr(rl("cpu", "500m", "memory", "128Mi"), rl("cpu", "500m", "memory", "128Mi")))
}

func TestNewRefusesBadConfig(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{MountRoot: "relative"}, `MountRoot="relative"`},
		{Config{MountRoot: dir, Mode: ModeV1, Driver: "bogus"}, `Driver="bogus"`},
		{Config{MountRoot: dir, Mode: ModeV1, CgroupRoot: "/../escape"}, `CgroupRoot "/../escape"`},
		{Config{MountRoot: dir, Mode: ModeV1, PodPidsLimit: -5}, "PodPidsLimit=-5"},
		{Config{MountRoot: dir, Mode: ModeV1}, "no cgroup v1 cpu, cpuacct, memory or pids controller"},
	} {
		_, err := New(tc.cfg)
		require.ErrorContains(t, err, tc.want)
	}
}

func TestFakeV1PodLifecycle(t *testing.T) {
	m, root := newFakeManager(t, ModeV1, Config{CgroupRoot: "/nodekit-test", PodPidsLimit: 100})
	require.NoError(t, m.EnsureQOSCgroups())
	assert.Equal(t, "2", read(t, root, "cpu/nodekit-test/kubepods/besteffort/cpu.shares"))

	pod := guaranteedPod("1234-abcd")
	name, err := m.EnsurePodCgroup(pod)
	require.NoError(t, err)
	assert.Equal(t, "/nodekit-test/kubepods/pod1234-abcd", m.Path(name))
	dir := "nodekit-test/kubepods/pod1234-abcd"
	assert.Equal(t, "512", read(t, root, "cpu", dir, "cpu.shares"))
	assert.Equal(t, "50000", read(t, root, "cpu", dir, "cpu.cfs_quota_us"))
	assert.Equal(t, "100000", read(t, root, "cpu", dir, "cpu.cfs_period_us"))
	assert.Equal(t, "134217728", read(t, root, "memory", dir, "memory.limit_in_bytes"))
	assert.Equal(t, "100", read(t, root, "pids", dir, "pids.max"))

	burst := podOf("b-1", nil, ctr(rl("cpu", "250m"), nil))
	require.NoError(t, m.UpdateQOSCgroups([]*v1.Pod{pod, burst}))
	assert.Equal(t, "256", read(t, root, "cpu/nodekit-test/kubepods/burstable/cpu.shares"))

	// A process in the pod cgroup: Destroy refuses with the PIDs.
	require.NoError(t, os.WriteFile(filepath.Join(root, "memory", dir, "cgroup.procs"), []byte("4242\n"), 0o644))
	err = m.DestroyPodCgroup(pod)
	var busy *BusyError
	require.ErrorAs(t, err, &busy)
	assert.Equal(t, []int{4242}, busy.PIDs)
	assert.DirExists(t, filepath.Join(root, "cpu", dir))

	require.NoError(t, os.WriteFile(filepath.Join(root, "memory", dir, "cgroup.procs"), nil, 0o644))
	require.NoError(t, m.DestroyPodCgroup(pod))
	for _, c := range []string{"cpu", "cpuacct", "memory", "pids"} {
		assert.NoDirExists(t, filepath.Join(root, c, dir))
	}
	require.NoError(t, m.DestroyPodCgroup(pod), "destroying a missing cgroup is a no-op")
}

func TestFakeV2PodLifecycle(t *testing.T) {
	for _, tc := range []struct {
		formula WeightFormula
		weight  string
	}{{WeightLinear, "20"}, {WeightNonLinear, "59"}} {
		m, root := newFakeManager(t, ModeV2, Config{WeightFormula: tc.formula, DisableCPUQuota: true, MemoryQoS: true})
		require.NoError(t, m.EnsureQOSCgroups())
		assert.Equal(t, "1", read(t, root, "kubepods/besteffort/cpu.weight"))
		assert.Contains(t, read(t, root, "cgroup.subtree_control"), "+cpu")

		pod := guaranteedPod("u1")
		_, err := m.EnsurePodCgroup(pod)
		require.NoError(t, err)
		dir := filepath.Join(root, "kubepods/podu1")
		assert.Equal(t, tc.weight, read(t, dir, "cpu.weight"), "512 shares")
		assert.Equal(t, "max 100000", read(t, dir, "cpu.max"))
		assert.Equal(t, "134217728", read(t, dir, "memory.max"))
		assert.Equal(t, "134217728", read(t, dir, "memory.min"))
		assert.Equal(t, "max", read(t, dir, "pids.max"))

		require.NoError(t, writeFiles(dir, map[string]string{
			"memory.current": "1000", "memory.stat": "inactive_file 300\n", "cpu.stat": "usage_usec 7\n", "pids.current": "3",
		}))
		u, err := m.PodUsage(pod)
		require.NoError(t, err)
		assert.Equal(t, Usage{MemoryUsageBytes: 1000, MemoryWorkingSetBytes: 700, CPUUsageNanoseconds: 7000, PidsCurrent: 3}, *u)

		require.NoError(t, m.UpdateQOSCgroups([]*v1.Pod{pod}))
		assert.Equal(t, "134217728", read(t, root, "kubepods/memory.min"))

		require.NoError(t, m.EnforceNodeAllocatable(rl("cpu", "1", "memory", "1Gi")))
		assert.Equal(t, "1073741824", read(t, root, "kubepods/memory.max"))

		require.NoError(t, m.DestroyPodCgroup(pod))
		assert.NoDirExists(t, dir)
	}
}

func TestFakeCleanupOrphans(t *testing.T) {
	for _, driver := range []Driver{DriverCgroupfs, DriverSystemd} {
		t.Run(string(driver), func(t *testing.T) {
			m, root := newFakeManager(t, ModeV2, Config{Driver: driver})
			require.NoError(t, m.EnsureQOSCgroups())
			active := guaranteedPod("keep-1")
			gone := podOf("gone-1", nil, ctr(nil, nil))
			busy := podOf("busy-1", nil, ctr(rl("cpu", "1"), nil))
			for _, p := range []*v1.Pod{active, gone, busy} {
				_, err := m.EnsurePodCgroup(p)
				require.NoError(t, err)
			}
			busyName, err := m.PodCgroupName(busy)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(root, m.Path(busyName), "cgroup.procs"), []byte("77\n"), 0o644))

			res, err := m.CleanupOrphans(map[types.UID]bool{"keep-1": true})
			var be *BusyError
			require.True(t, errors.As(err, &be), "busy cgroup is reported: %v", err)
			assert.Equal(t, []int{77}, be.PIDs)
			assert.Equal(t, []types.UID{"gone-1"}, res.Removed)
			require.Len(t, res.Busy, 1)
			assert.True(t, m.Exists(busyName))
			activeName, _ := m.PodCgroupName(active)
			assert.True(t, m.Exists(activeName))
			goneName, _ := m.PodCgroupName(gone)
			assert.False(t, m.Exists(goneName))
		})
	}
}

func TestPodCgroupNameRefusesBadUID(t *testing.T) {
	m, _ := newFakeManager(t, ModeV2, Config{})
	for _, uid := range []string{"", "../../x", "a/b", "a_b", "..", strings.Repeat("u", 2000), "a\x00b"} {
		_, err := m.PodCgroupName(podOf(uid, nil, ctr(nil, nil)))
		require.ErrorContains(t, err, "pod.metadata.uid", uid)
	}
	n, err := m.PodCgroupName(podOf("x-1", nil, ctr(nil, nil)))
	require.NoError(t, err)
	assert.Equal(t, CgroupName{"kubepods", "besteffort", "podx-1"}, n)
}

// kubelet cgroup manager (libcontainer's cgroupfs Destroy): a pod cgroup
// goes from every hierarchy, not only the controllers it set up. runc
// creates the pod's cgroup in blkio, cpuset, devices, freezer and
// name=systemd as its containers' parent and leaves it there; without this
// every pod left a directory in each.
func TestFakeV1RemovesPodCgroupsFromEveryHierarchy(t *testing.T) {
	const dir = "nodekit-test/kubepods/besteffort/podgone-1"
	for _, tc := range []struct {
		name    string
		cleanUp func(m *Manager) error
	}{
		{"DestroyPodCgroup", func(m *Manager) error { return m.DestroyPodCgroup(podOf("gone-1", nil, ctr(nil, nil))) }},
		{"CleanupOrphans, the pod cgroup left by runc alone", func(m *Manager) error {
			res, err := m.CleanupOrphans(nil)
			assert.Equal(t, []types.UID{"gone-1"}, res.Removed)
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for _, c := range []string{"freezer", "systemd", "cpu", "cpuacct", "memory", "pids"} {
				require.NoError(t, os.Mkdir(filepath.Join(root, c), 0o755))
				require.NoError(t, writeFiles(filepath.Join(root, c), fakeV1Files))
			}
			require.NoError(t, os.Symlink("cpu", filepath.Join(root, "cpu,cpuacct")))
			m, err := New(Config{MountRoot: root, Mode: ModeV1, CgroupRoot: "/nodekit-test"})
			require.NoError(t, err)
			m.fs.(*v1Driver).mkdirHook = func(dir string) error { return writeFiles(dir, fakeV1Files) }
			require.NoError(t, m.EnsureQOSCgroups())
			if tc.name == "DestroyPodCgroup" {
				_, err := m.EnsurePodCgroup(podOf("gone-1", nil, ctr(nil, nil)))
				require.NoError(t, err)
			}
			for _, h := range []string{"freezer", "systemd"} { // what runc leaves
				require.NoError(t, os.MkdirAll(filepath.Join(root, h, dir, "ctr-1"), 0o755))
			}
			require.NoError(t, tc.cleanUp(m))
			for _, h := range []string{"freezer", "systemd", "cpu", "cpuacct", "memory", "pids"} {
				assert.NoDirExists(t, filepath.Join(root, h, dir), h)
				assert.DirExists(t, filepath.Join(root, h, "nodekit-test/kubepods/besteffort"), h)
			}
		})
	}
}
