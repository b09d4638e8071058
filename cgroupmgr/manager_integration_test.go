//go:build integration

package cgroupmgr

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekit-dev/nodekit/internal/poll"
)

var v1Controllers = []string{"cpu", "cpuacct", "memory", "pids"}

// requireRealV1 fails (never skips) unless we are root on a v1/hybrid host.
func requireRealV1(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatalf("integration tests need root to create cgroups (euid %d)", os.Geteuid())
	}
	mode := detectMode(DefaultMountRoot)
	if mode != ModeV1 && mode != ModeHybrid {
		t.Fatalf("integration tests need cgroup v1 controllers at %s (mode %q)", DefaultMountRoot, mode)
	}
	for _, c := range v1Controllers {
		if _, err := os.Stat(filepath.Join(DefaultMountRoot, c, "cgroup.procs")); err != nil {
			t.Fatalf("cgroup v1 controller %q is not mounted: %v", c, err)
		}
	}
}

func testRootName(t *testing.T) string {
	b := make([]byte, 6)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return "nodekit-test-" + hex.EncodeToString(b)
}

// removeLeftovers is the safety net if the test fails half-way: rmdir deepest first.
func removeLeftovers(rootName string) {
	for _, c := range v1Controllers {
		top := filepath.Join(DefaultMountRoot, c, rootName)
		var dirs []string
		_ = filepath.WalkDir(top, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			_ = os.Remove(dirs[i])
		}
	}
}

func readCg(t *testing.T, controller, path, file string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(DefaultMountRoot, controller, path, file))
	require.NoError(t, err)
	return string(b[:len(b)-1])
}

func TestIntegrationV1PodCgroupWithRealProcess(t *testing.T) {
	requireRealV1(t)
	rootName := testRootName(t)
	t.Cleanup(func() { removeLeftovers(rootName) })

	m, err := New(Config{CgroupRoot: "/" + rootName, PodPidsLimit: 64})
	require.NoError(t, err)
	t.Logf("detected cgroup mode %q", m.Mode())
	require.NotEqual(t, ModeV2, m.Mode())

	require.NoError(t, m.EnsureQOSCgroups())
	assert.Equal(t, "2", readCg(t, "cpu", "/"+rootName+"/kubepods/besteffort", "cpu.shares"))

	pod := guaranteedPod(fmt.Sprintf("it-%d", time.Now().UnixNano()))
	name, err := m.EnsurePodCgroup(pod)
	require.NoError(t, err)
	path := m.Path(name)
	require.Equal(t, "/"+rootName+"/kubepods/pod"+string(pod.UID), path)
	assert.Equal(t, "512", readCg(t, "cpu", path, "cpu.shares"))
	assert.Equal(t, "50000", readCg(t, "cpu", path, "cpu.cfs_quota_us"))
	assert.Equal(t, "100000", readCg(t, "cpu", path, "cpu.cfs_period_us"))
	assert.Equal(t, "134217728", readCg(t, "memory", path, "memory.limit_in_bytes"))
	assert.Equal(t, "64", readCg(t, "pids", path, "pids.max"))

	burst := podOf("it-burst", nil, ctr(rl("cpu", "300m"), nil))
	require.NoError(t, m.UpdateQOSCgroups([]*v1.Pod{pod, burst}))
	assert.Equal(t, "307", readCg(t, "cpu", "/"+rootName+"/kubepods/burstable", "cpu.shares"))

	// A real child: waits on stdin until it is in the pod cgroup, then burns CPU.
	cmd := exec.Command("/bin/sh", "-c", "read x; dd if=/dev/zero of=/dev/null bs=64k count=20000 2>/dev/null; exec sleep 60")
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	killed := false
	t.Cleanup(func() {
		if !killed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	for _, c := range v1Controllers {
		require.NoError(t, os.WriteFile(filepath.Join(DefaultMountRoot, c, path, "cgroup.procs"),
			[]byte(strconv.Itoa(cmd.Process.Pid)), 0o644), "moving pid into %s", c)
	}
	_, err = io.WriteString(stdin, "go\n")
	require.NoError(t, err)

	var u *Usage
	poll.Eventually(t, func() bool {
		u, err = m.PodUsage(pod)
		return err == nil && u.CPUUsageNanoseconds > 0 && u.MemoryUsageBytes > 0 && u.PidsCurrent >= 1
	}, 10*time.Second, 50*time.Millisecond, "usage never showed the process: %+v %v", u, err)
	t.Logf("usage of %s: %+v", path, *u)
	assert.LessOrEqual(t, u.MemoryWorkingSetBytes, u.MemoryUsageBytes)

	pids, err := m.Pids(name)
	require.NoError(t, err)
	assert.Contains(t, pids, cmd.Process.Pid)

	// With the process alive: Destroy and CleanupOrphans report, never remove.
	var busy *BusyError
	require.ErrorAs(t, m.DestroyPodCgroup(pod), &busy)
	assert.Contains(t, busy.PIDs, cmd.Process.Pid)
	res, err := m.CleanupOrphans(map[types.UID]bool{})
	require.ErrorAs(t, err, &busy)
	require.Len(t, res.Busy, 1)
	assert.Empty(t, res.Removed)
	assert.True(t, m.Exists(name))

	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	killed = true

	poll.Eventually(t, func() bool {
		res, err = m.CleanupOrphans(map[types.UID]bool{})
		return err == nil
	}, 5*time.Second, 50*time.Millisecond, "orphan clean-up after kill: %v", err)
	assert.Equal(t, []types.UID{pod.UID}, res.Removed)
	assert.False(t, m.Exists(name))

	require.NoError(t, m.EnforceNodeAllocatable(rl("cpu", "1", "memory", "1Gi", "pid", "1000")))
	assert.Equal(t, "1024", readCg(t, "cpu", "/"+rootName+"/kubepods", "cpu.shares"))
	assert.Equal(t, "1073741824", readCg(t, "memory", "/"+rootName+"/kubepods", "memory.limit_in_bytes"))

	require.NoError(t, m.Destroy(ParseCgroupfsToCgroupName("/"+rootName)))
	for _, c := range v1Controllers {
		_, err := os.Stat(filepath.Join(DefaultMountRoot, c, rootName))
		assert.True(t, errors.Is(err, os.ErrNotExist), "%s/%s left behind: %v", c, rootName, err)
	}
}

func TestIntegrationV1UnlimitedAndUpdate(t *testing.T) {
	requireRealV1(t)
	rootName := testRootName(t)
	t.Cleanup(func() { removeLeftovers(rootName) })
	m, err := New(Config{CgroupRoot: "/" + rootName, DisableCPUQuota: true})
	require.NoError(t, err)
	require.NoError(t, m.EnsureQOSCgroups())

	pod := podOf("it-upd", nil, ctr(rl("cpu", "100m", "memory", "64Mi"), rl("cpu", "200m", "memory", "128Mi")))
	name, err := m.EnsurePodCgroup(pod)
	require.NoError(t, err)
	path := m.Path(name)
	assert.Equal(t, "102", readCg(t, "cpu", path, "cpu.shares"))
	assert.Equal(t, "-1", readCg(t, "cpu", path, "cpu.cfs_quota_us"), "quota disabled")
	assert.Equal(t, "max", readCg(t, "pids", path, "pids.max"))

	pod.Spec.Containers[0].Resources.Limits = rl("cpu", "500m", "memory", "256Mi")
	_, err = m.EnsurePodCgroup(pod)
	require.NoError(t, err)
	assert.Equal(t, "268435456", readCg(t, "memory", path, "memory.limit_in_bytes"))

	require.NoError(t, m.Destroy(ParseCgroupfsToCgroupName("/"+rootName)))
	for _, c := range v1Controllers {
		assert.NoDirExists(t, filepath.Join(DefaultMountRoot, c, rootName))
	}
}

// TestIntegrationV1ResizePodCgroup: for an in-place resize, grow keeps a
// limit that would go down where it is (the containers are resized under
// it), the exact resize afterwards lowers it.
func TestIntegrationV1ResizePodCgroup(t *testing.T) {
	requireRealV1(t)
	rootName := testRootName(t)
	t.Cleanup(func() { removeLeftovers(rootName) })
	m, err := New(Config{CgroupRoot: "/" + rootName})
	require.NoError(t, err)
	require.NoError(t, m.EnsureQOSCgroups())

	pod := podOf("it-resize", nil, ctr(rl("cpu", "100m", "memory", "64Mi"), rl("cpu", "200m", "memory", "128Mi")))
	name, err := m.EnsurePodCgroup(pod)
	require.NoError(t, err)
	path := m.Path(name)
	assert.Equal(t, "20000", readCg(t, "cpu", path, "cpu.cfs_quota_us"))

	// cpu limit down, memory limit up
	pod.Spec.Containers[0].Resources = v1.ResourceRequirements{Requests: rl("cpu", "50m", "memory", "64Mi"), Limits: rl("cpu", "100m", "memory", "256Mi")}
	_, err = m.ResizePodCgroup(pod, true)
	require.NoError(t, err)
	assert.Equal(t, "20000", readCg(t, "cpu", path, "cpu.cfs_quota_us"), "grow: the quota not lowered yet")
	assert.Equal(t, "268435456", readCg(t, "memory", path, "memory.limit_in_bytes"), "grow: memory raised")
	assert.Equal(t, "51", readCg(t, "cpu", path, "cpu.shares"), "shares take the target at once")
	_, err = m.ResizePodCgroup(pod, false)
	require.NoError(t, err)
	assert.Equal(t, "10000", readCg(t, "cpu", path, "cpu.cfs_quota_us"), "then exactly the target")
	assert.Equal(t, "268435456", readCg(t, "memory", path, "memory.limit_in_bytes"))
}
