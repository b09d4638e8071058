package server_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit-dev/nodekit/cadvisor"
	"github.com/nodekit-dev/nodekit/cgroupmgr"
	"github.com/nodekit-dev/nodekit/internal/fsstats"
	"github.com/nodekit-dev/nodekit/podpath"
	"github.com/nodekit-dev/nodekit/runtime"
	"github.com/nodekit-dev/nodekit/server"
	"github.com/nodekit-dev/nodekit/volume"
)

const kib, mib = 1 << 10, 1 << 20

// The implementations the doc comments name.
var (
	_ server.VolumeStatsProvider = (*volume.Manager)(nil)
	_ server.ImageFsInfoProvider = (*runtime.Client)(nil)
)

// volumeStats is a VolumeStatsProvider: fixed stats by pod UID.
type volumeStats map[types.UID][]statsapi.VolumeStats

func (v volumeStats) PodVolumeStats(pod *v1.Pod) ([]statsapi.VolumeStats, error) {
	return v[pod.UID], errors.New("one volume could not be measured")
}

// imageFs is an ImageFsInfoProvider.
type imageFs struct {
	fss []*runtimeapi.FilesystemUsage
	err error
}

func (f imageFs) ImageFsInfo(context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
	return &runtimeapi.ImageFsInfoResponse{ImageFilesystems: f.fss}, f.err
}

func fsUsage(mountpoint string, ts int64, bytes, inodes uint64) *runtimeapi.FilesystemUsage {
	return &runtimeapi.FilesystemUsage{Timestamp: ts, FsId: &runtimeapi.FilesystemIdentifier{Mountpoint: mountpoint},
		UsedBytes: &runtimeapi.UInt64Value{Value: bytes}, InodesUsed: &runtimeapi.UInt64Value{Value: inodes}}
}

func volStat(name string, bytes, inodes uint64) statsapi.VolumeStats {
	return statsapi.VolumeStats{Name: name, FsStats: statsapi.FsStats{UsedBytes: u64(bytes), InodesUsed: u64(inodes)}}
}

func writeFile(t *testing.T, path string, size int) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, make([]byte, size), 0o644))
}

// storageNode is pod default/web (uid u1) with containers app (c1: a 5 MiB
// writable layer on rootDir, 1 MiB and 10 KiB of logs) and side (c2: a
// writable layer on a mountpoint not on this node, no log directory), a
// stray file in the pod's log directory, and volumes of each kind.
type storageNode struct {
	rootDir, logsDir string
	pods             pods
	containers       stats
	volumes          volumeStats
	images           imageFs
}

func newStorageNode(t *testing.T) storageNode {
	n := storageNode{rootDir: t.TempDir(), logsDir: t.TempDir()}
	started := metav1.NewTime(now)
	running := v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: started}}
	n.pods = pods{{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "u1"},
		Spec: v1.PodSpec{Volumes: []v1.Volume{
			{Name: "cache", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
			{Name: "mem", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory}}},
			{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{}}},
			{Name: "creds", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{}}},
		}},
		Status: v1.PodStatus{StartTime: &started, ContainerStatuses: []v1.ContainerStatus{
			{Name: "app", ContainerID: "containerd://c1", State: running},
			{Name: "side", ContainerID: "containerd://c2", State: running},
		}}}}
	n.containers = stats{
		{Attributes: &runtimeapi.ContainerAttributes{Id: "c1"}, WritableLayer: fsUsage(n.rootDir, now.UnixNano(), 5*mib, 50)},
		{Attributes: &runtimeapi.ContainerAttributes{Id: "c2"}, WritableLayer: fsUsage("/no/such/snapshotter", 0, mib, 10)},
	}
	n.volumes = volumeStats{"u1": {volStat("cache", 2*mib, 3), volStat("mem", mib, 2), volStat("cfg", 8*kib, 7), volStat("creds", 4*kib, 5)}}
	n.images = imageFs{fss: []*runtimeapi.FilesystemUsage{fsUsage(n.rootDir, now.UnixNano(), 100*mib, 1000)}}
	podLogs := filepath.Join(n.logsDir, "default_web_u1")
	writeFile(t, filepath.Join(podLogs, "app/0.log"), mib)
	writeFile(t, filepath.Join(podLogs, "app/0.log.20261123-100000.gz"), 10*kib)
	writeFile(t, filepath.Join(podLogs, "stray"), 4*kib)
	return n
}

func (n storageNode) provider(layout, volumes, images bool) *server.SummaryProvider {
	p := &server.SummaryProvider{NodeName: "n1", Pods: n.pods, Containers: n.containers, Clock: clocktesting.NewFakePassiveClock(now)}
	if layout {
		p.Layout = &podpath.Layout{RootDir: n.rootDir, PodLogsDir: n.logsDir}
	}
	if volumes {
		p.Volumes = n.volumes
	}
	if images {
		p.ImageFs = n.images
	}
	return p
}

// assertSize checks that st carries the size of the filesystem at dir.
func assertSize(t *testing.T, dir string, st *statsapi.FsStats) {
	t.Helper()
	fs, err := fsstats.Statfs(dir)
	require.NoError(t, err)
	require.NotNil(t, st.CapacityBytes)
	assert.Equal(t, fs.Capacity, *st.CapacityBytes)
	assert.Equal(t, fs.Inodes, *st.Inodes)
	assert.LessOrEqual(t, *st.AvailableBytes, *st.CapacityBytes)
	assert.LessOrEqual(t, *st.InodesFree, *st.Inodes)
}

func TestSummaryStorage(t *testing.T) {
	n := newStorageNode(t)
	for _, tc := range []struct {
		name                    string
		layout, volumes, images bool
		check                   func(t *testing.T, s *statsapi.Summary)
	}{
		{"no storage inputs: writable layers only", false, false, false, func(t *testing.T, s *statsapi.Summary) {
			assert.Nil(t, s.Node.Fs)
			assert.Nil(t, s.Node.Runtime)
			ps := s.Pods[0]
			assert.Nil(t, ps.EphemeralStorage)
			assert.Nil(t, ps.VolumeStats)
			app, side := ps.Containers[0], ps.Containers[1]
			assert.Equal(t, uint64(5*mib), *app.Rootfs.UsedBytes)
			assert.Equal(t, uint64(50), *app.Rootfs.InodesUsed)
			assert.True(t, app.Rootfs.Time.Equal(&metav1.Time{Time: now}), "the runtime's timestamp")
			assertSize(t, n.rootDir, app.Rootfs)
			assert.Equal(t, &statsapi.FsStats{Time: metav1.NewTime(now), UsedBytes: u64(mib), InodesUsed: u64(10)}, side.Rootfs,
				"no size for a mountpoint not on this node; no timestamp: now")
			assert.Nil(t, app.Logs)
		}},
		{"layout: node Fs, logs and ephemeral storage", true, false, false, func(t *testing.T, s *statsapi.Summary) {
			fs := s.Node.Fs
			require.NotNil(t, fs)
			assertSize(t, n.rootDir, fs)
			assert.Positive(t, *fs.UsedBytes)
			assert.LessOrEqual(t, *fs.UsedBytes+*fs.AvailableBytes, *fs.CapacityBytes, "root's reserved blocks are neither")
			assert.LessOrEqual(t, *fs.InodesUsed+*fs.InodesFree, *fs.Inodes)
			assert.Nil(t, s.Node.Runtime)
			ps := s.Pods[0]
			app, side := ps.Containers[0], ps.Containers[1]
			require.NotNil(t, app.Logs)
			assert.Equal(t, uint64(2), *app.Logs.InodesUsed, "0.log and the rotated one")
			assert.GreaterOrEqual(t, *app.Logs.UsedBytes, uint64(mib+10*kib))
			assert.Less(t, *app.Logs.UsedBytes, uint64(mib+10*kib+128*kib))
			assertSize(t, n.rootDir, app.Logs)
			assert.Nil(t, side.Logs, "no log directory")
			eph := ps.EphemeralStorage
			require.NotNil(t, eph)
			assertSize(t, n.rootDir, eph)
			assert.Equal(t, uint64(50+10+2+1), *eph.InodesUsed, "writable layers, app's logs, the stray file")
			assertBetween(t, *eph.UsedBytes, 5*mib+mib+*app.Logs.UsedBytes+4*kib, 64*kib)
		}},
		{"volumes: all reported, the local ephemeral ones counted", true, true, false, func(t *testing.T, s *statsapi.Summary) {
			ps := s.Pods[0]
			assert.Equal(t, n.volumes["u1"], ps.VolumeStats, "as the provider gave them, its error aside")
			app := ps.Containers[0]
			assert.Equal(t, uint64(50+10+2+1+3+7), *ps.EphemeralStorage.InodesUsed, "and the disk emptyDir and the configMap")
			assertBetween(t, *ps.EphemeralStorage.UsedBytes, 5*mib+mib+*app.Logs.UsedBytes+4*kib+2*mib+8*kib, 64*kib)
		}},
		{"volumes without a layout: no ephemeral storage", false, true, false, func(t *testing.T, s *statsapi.Summary) {
			assert.Len(t, s.Pods[0].VolumeStats, 4)
			assert.Nil(t, s.Pods[0].EphemeralStorage)
		}},
		{"image filesystem", false, false, true, func(t *testing.T, s *statsapi.Summary) {
			rt := s.Node.Runtime
			require.NotNil(t, rt)
			assert.Equal(t, uint64(100*mib), *rt.ImageFs.UsedBytes)
			assert.Equal(t, uint64(1000), *rt.ImageFs.InodesUsed)
			assertSize(t, n.rootDir, rt.ImageFs)
			assert.Same(t, rt.ImageFs, rt.ContainerFs, "the CRI stats provider's containerfs is its imagefs")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := n.provider(tc.layout, tc.volumes, tc.images).Summary(context.Background())
			require.NoError(t, err)
			require.Len(t, s.Pods, 1)
			require.Len(t, s.Pods[0].Containers, 2)
			tc.check(t, s)
		})
	}
}

// assertBetween: got is want or up to slack more (blocks the files of
// known length take beyond their length).
func assertBetween(t *testing.T, got, want, slack uint64) {
	t.Helper()
	assert.GreaterOrEqual(t, got, want)
	assert.LessOrEqual(t, got, want+slack)
}

func TestSummaryStorageErrors(t *testing.T) {
	n := newStorageNode(t)
	for _, tc := range []struct {
		name   string
		modify func(p *server.SummaryProvider)
		want   string
	}{
		{"root dir missing", func(p *server.SummaryProvider) { p.Layout.RootDir = filepath.Join(n.rootDir, "missing") },
			"node filesystem (--root-dir): statfs " + n.rootDir + "/missing: no such file or directory"},
		{"ImageFsInfo fails", func(p *server.SummaryProvider) { p.ImageFs = imageFs{err: errors.New("unavailable")} },
			"image filesystem info: unavailable"},
		{"no image filesystem", func(p *server.SummaryProvider) { p.ImageFs = imageFs{} },
			"image filesystem info: the runtime reports no image filesystem"},
		{"image filesystem unreadable", func(p *server.SummaryProvider) {
			p.ImageFs = imageFs{fss: []*runtimeapi.FilesystemUsage{fsUsage(filepath.Join(n.logsDir, "default_web_u1/stray/x"), 0, 1, 1)}}
		}, "image filesystem: statfs " + n.logsDir + "/default_web_u1/stray/x: not a directory"},
		{"writable layer unreadable", func(p *server.SummaryProvider) {
			p.Containers = stats{{Attributes: &runtimeapi.ContainerAttributes{Id: "c1"},
				WritableLayer: fsUsage(filepath.Join(n.logsDir, "default_web_u1/stray/x"), 0, 1, 1)}}
		}, "pod default/web: container app: writable layer: statfs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := n.provider(true, true, true)
			tc.modify(p)
			_, err := p.Summary(context.Background())
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

// housekept are cgroup figures by container ID, pod UID and for kubepods.
type housekept map[string]cadvisor.Stats

func (h housekept) ContainerStats(id string) (cadvisor.Stats, bool) { s, ok := h[id]; return s, ok }
func (h housekept) PodStats(uid string) (cadvisor.Stats, bool)      { s, ok := h["pod/"+uid]; return s, ok }
func (h housekept) KubepodsStats() (cadvisor.Stats, bool)           { s, ok := h["kubepods"]; return s, ok }

// podCgroups is a pod cgroup reader that counts its reads.
type podCgroups struct{ reads int }

func (c *podCgroups) PodUsage(*v1.Pod) (*cgroupmgr.Usage, error) {
	c.reads++
	return &cgroupmgr.Usage{CPUUsageNanoseconds: 11, MemoryUsageBytes: 22, MemoryWorkingSetBytes: 21, PidsCurrent: 2}, nil
}
func (c *podCgroups) Usage(cgroupmgr.CgroupName) (*cgroupmgr.Usage, error) {
	return &cgroupmgr.Usage{}, nil
}
func (c *podCgroups) KubepodsCgroupName() cgroupmgr.CgroupName {
	return cgroupmgr.CgroupName{"kubepods"}
}

// A pod the housekeeping has read is not read from its cgroup again: its
// CPU, memory and process count are the housekeeping's; a pod it has not
// read (or read before anything ran) is read from its cgroup.
func TestSummaryReadsAPodCgroupOnlyWithoutHousekeeping(t *testing.T) {
	n := newStorageNode(t)
	pod := cadvisor.Stats{Timestamp: now.Add(-time.Second), CPU: cadvisor.CPUStats{UsageNanoseconds: 3000},
		Memory: cadvisor.MemoryStats{Usage: 4100, WorkingSet: 4000}, Processes: cadvisor.ProcessStats{Threads: 5}}
	for _, tc := range []struct {
		name          string
		housekept     housekept
		reads         int
		cpu, ws, pids uint64
	}{
		{"housekept", housekept{"pod/u1": pod}, 0, 3000, 4000, 5},
		{"not housekept", housekept{}, 1, 11, 21, 2},
		{"housekept before anything ran", housekept{"pod/u1": {Timestamp: pod.Timestamp}}, 1, 11, 21, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cg := &podCgroups{}
			p := n.provider(false, false, false)
			p.Cgroups, p.CgroupStats = cg, tc.housekept
			sum, err := p.Summary(context.Background())
			require.NoError(t, err)
			require.Len(t, sum.Pods, 1)
			ps := sum.Pods[0]
			assert.Equal(t, tc.reads, cg.reads, "pod cgroup reads")
			assert.Equal(t, tc.cpu, *ps.CPU.UsageCoreNanoSeconds)
			assert.Equal(t, tc.ws, *ps.Memory.WorkingSetBytes)
			require.NotNil(t, ps.ProcessStats)
			assert.Equal(t, tc.pids, *ps.ProcessStats.ProcessCount)
		})
	}
}

// With CgroupStats, the summary's CPU and memory are /metrics/cadvisor's
// housekeeping's, at its time; a container it lacks keeps the runtime's.
func TestSummaryFromHousekeeping(t *testing.T) {
	n := newStorageNode(t)
	n.containers[1].Cpu = &runtimeapi.CpuUsage{UsageCoreNanoSeconds: &runtimeapi.UInt64Value{Value: 7}}
	at := now.Add(-3 * time.Second)
	stat := func(cpu, ws uint64) cadvisor.Stats {
		return cadvisor.Stats{Timestamp: at, CPU: cadvisor.CPUStats{UsageNanoseconds: cpu},
			Memory: cadvisor.MemoryStats{Usage: ws + 100, WorkingSet: ws, RSS: ws / 2, Pgfault: 9, Pgmajfault: 1}}
	}
	p := n.provider(false, false, false)
	p.CgroupStats = housekept{"c1": stat(1000, 2000), "pod/u1": stat(3000, 4000), "kubepods": stat(5000, 6000)}
	sum, err := p.Summary(context.Background())
	require.NoError(t, err)
	require.Len(t, sum.Pods, 1)
	pod := sum.Pods[0]
	app, side := pod.Containers[0], pod.Containers[1]
	assert.Equal(t, uint64(1000), *app.CPU.UsageCoreNanoSeconds)
	assert.Equal(t, uint64(2000), *app.Memory.WorkingSetBytes)
	assert.Equal(t, uint64(1000), *app.Memory.RSSBytes)
	assert.Equal(t, at, app.CPU.Time.Time, "the housekeeping's time")
	assert.Equal(t, uint64(7), *side.CPU.UsageCoreNanoSeconds, "not housekept: the runtime's")
	assert.Equal(t, uint64(3000), *pod.CPU.UsageCoreNanoSeconds)
	assert.Equal(t, uint64(4000), *pod.Memory.WorkingSetBytes)
	assert.Equal(t, uint64(5000), *sum.Node.CPU.UsageCoreNanoSeconds)
	assert.Equal(t, uint64(6000), *sum.Node.Memory.WorkingSetBytes)
	require.Len(t, sum.Node.SystemContainers, 1)
	assert.Equal(t, statsapi.SystemContainerPods, sum.Node.SystemContainers[0].Name)

	// A reading from before anything ran in the cgroup is no reading.
	p.CgroupStats = housekept{"c1": stat(0, 0), "pod/u1": stat(0, 0), "kubepods": stat(5000, 6000)}
	sum, err = p.Summary(context.Background())
	require.NoError(t, err)
	app = sum.Pods[0].Containers[0]
	assert.NotEqual(t, at, app.CPU.Time.Time, "not the empty cgroup's reading")
	assert.NotEqual(t, at, sum.Pods[0].CPU.Time.Time, "not the empty pod cgroup's reading")
}
