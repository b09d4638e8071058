package server

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/clock"

	"github.com/nodekit-dev/nodekit/cadvisor"
	"github.com/nodekit-dev/nodekit/cgroupmgr"
	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/podpath"
)

// ContainerStatsLister is the CRI call the summary reads containers'
// CPU and memory from; *runtime.Client implements it.
type ContainerStatsLister interface {
	ListContainerStats(ctx context.Context, filter *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error)
}

// CgroupUsage reads pod and node cgroups; *cgroupmgr.Manager implements it.
type CgroupUsage interface {
	PodUsage(pod *v1.Pod) (*cgroupmgr.Usage, error)
	Usage(name cgroupmgr.CgroupName) (*cgroupmgr.Usage, error)
	KubepodsCgroupName() cgroupmgr.CgroupName
}

// CgroupStats are cgroups' figures as /metrics/cadvisor's housekeeping
// last read them; *cadvisor.Collector implements it.
type CgroupStats interface {
	ContainerStats(id string) (cadvisor.Stats, bool)
	PodStats(uid string) (cadvisor.Stats, bool)
	KubepodsStats() (cadvisor.Stats, bool)
}

// SummaryProvider builds /stats/summary in the kubelet's Summary API
// shape (k8s.io/kubelet's stats/v1alpha1): each running container's CPU
// and memory from the runtime's CRI stats; each pod's from its pod cgroup,
// or the sum of its containers without Cgroups; the node's pod total from
// the kubepods cgroup (the "pods" system container). Storage as the
// kubelet's CRI stats provider reports it: each container's Rootfs from
// its CRI writable layer (the runtime's bytes and inodes, the size of the
// filesystem at its mountpoint when that is on this node), and what the
// optional inputs below add.
//
// The summary fails, as the kubelet's, when --root-dir's filesystem
// (Layout) or the image filesystem (ImageFs) cannot be read; logs and
// volumes that cannot be measured are left out.
type SummaryProvider struct {
	NodeName   string
	StartTime  time.Time // the node agent's start
	Pods       PodLister
	Containers ContainerStatsLister
	Cgroups    CgroupUsage // nil: no pod cgroups (--cgroups-per-qos=false)
	// Layout (--root-dir, --pod-logs-dir) adds the node's Fs (statfs of
	// --root-dir: capacity, available and used bytes and inodes), each
	// container's Logs (the files directly in
	// <pod-logs-dir>/<namespace>_<name>_<uid>/<container>/, measured du-style,
	// with --root-dir's filesystem size, as the kubelet) and each pod's
	// EphemeralStorage (its containers' writable layers and logs, its local
	// ephemeral volumes, the files directly in its log directory). nil:
	// none of them.
	Layout *podpath.Layout
	// Volumes adds each pod's VolumeStats (and their share of
	// EphemeralStorage); *volume.Manager implements it. nil: none.
	Volumes VolumeStatsProvider
	// ImageFs adds the node's Runtime: ImageFs from CRI ImageFsInfo (the
	// first image filesystem: the runtime's bytes and inodes, the size of
	// the filesystem at its mountpoint when that is on this node), and
	// ContainerFs the same, as the kubelet's CRI stats provider;
	// *runtime.Client implements it. nil: no Runtime.
	ImageFs ImageFsInfoProvider
	// CgroupStats, when set, gives the containers', pods' and node's CPU
	// and memory as /metrics/cadvisor's last housekeeping read them (each
	// stamped with its time), so that /stats/summary, /metrics/resource and
	// /metrics/cadvisor agree, as the kubelet's, which reads all three from
	// cAdvisor. What it lacks comes from the runtime and Cgroups; a pod it
	// has is not read from Cgroups again (its process count is its pod
	// cgroup's pids.current, as Cgroups gives it).
	CgroupStats CgroupStats
	Clock       clock.PassiveClock
}

// Summary reads the stats now.
func (p *SummaryProvider) Summary(ctx context.Context) (*statsapi.Summary, error) {
	clk := p.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	now := metav1.NewTime(clk.Now())
	stats, err := p.Containers.ListContainerStats(ctx, nil)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]*runtimeapi.ContainerStats, len(stats))
	for _, s := range stats {
		byID[s.GetAttributes().GetId()] = s
	}
	fsr, err := newFsReader(p.Layout, now)
	if err != nil {
		return nil, err
	}
	started := metav1.NewTime(p.StartTime)
	sum := &statsapi.Summary{Node: statsapi.NodeStats{NodeName: p.NodeName, StartTime: started, Fs: fsr.nodeFs()}}
	if p.ImageFs != nil {
		if sum.Node.Runtime, err = fsr.runtimeFs(ctx, p.ImageFs); err != nil {
			return nil, err
		}
	}
	for _, pod := range p.Pods.Pods() {
		ps, err := p.podStats(&pod, byID, fsr)
		if err != nil {
			return nil, fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		sum.Pods = append(sum.Pods, ps)
	}
	if hk, ok := p.housekeeping(CgroupStats.KubepodsStats); ok {
		sum.Node.CPU, sum.Node.Memory = &statsapi.CPUStats{}, &statsapi.MemoryStats{}
		applyHousekeeping(sum.Node.CPU, sum.Node.Memory, hk)
	} else if p.Cgroups != nil {
		if u, err := p.Cgroups.Usage(p.Cgroups.KubepodsCgroupName()); err == nil {
			sum.Node.CPU, sum.Node.Memory = &statsapi.CPUStats{Time: now}, &statsapi.MemoryStats{Time: now}
			applyUsage(sum.Node.CPU, sum.Node.Memory, u)
		}
	}
	if sum.Node.CPU != nil {
		sum.Node.SystemContainers = []statsapi.ContainerStats{{Name: statsapi.SystemContainerPods,
			StartTime: started, CPU: sum.Node.CPU, Memory: sum.Node.Memory}}
	}
	return sum, nil
}

func (p *SummaryProvider) podStats(pod *v1.Pod, byID map[string]*runtimeapi.ContainerStats, fsr *fsReader) (statsapi.PodStats, error) {
	now := fsr.now
	ps := statsapi.PodStats{PodRef: statsapi.PodReference{Name: pod.Name, Namespace: pod.Namespace, UID: string(pod.UID)}}
	if pod.Status.StartTime != nil {
		ps.StartTime = *pod.Status.StartTime
	}
	var cpu, mem, ws uint64
	for _, c := range pod.Status.ContainerStatuses {
		st := byID[kc.TrimRuntimeType(c.ContainerID)]
		if st == nil || c.State.Running == nil {
			continue
		}
		cs := statsapi.ContainerStats{Name: c.Name, StartTime: c.State.Running.StartedAt,
			CPU: &statsapi.CPUStats{Time: now}, Memory: &statsapi.MemoryStats{Time: now}}
		if u := st.GetCpu().GetUsageCoreNanoSeconds(); u != nil {
			cs.CPU.UsageCoreNanoSeconds = ptr(u.Value)
		}
		if u := st.GetCpu().GetUsageNanoCores(); u != nil {
			cs.CPU.UsageNanoCores = ptr(u.Value)
		}
		if m := st.GetMemory().GetWorkingSetBytes(); m != nil {
			cs.Memory.WorkingSetBytes = ptr(m.Value)
		}
		if m := st.GetMemory().GetUsageBytes(); m != nil {
			cs.Memory.UsageBytes = ptr(m.Value)
		}
		if p.CgroupStats != nil {
			if hk, ok := p.CgroupStats.ContainerStats(kc.TrimRuntimeType(c.ContainerID)); ran(hk, ok) {
				applyHousekeeping(cs.CPU, cs.Memory, hk)
			}
		}
		cpu += deref(cs.CPU.UsageCoreNanoSeconds)
		ws += deref(cs.Memory.WorkingSetBytes)
		mem += deref(cs.Memory.UsageBytes)
		var err error
		if cs.Rootfs, err = fsr.usage(st.GetWritableLayer()); err != nil {
			return ps, fmt.Errorf("container %s: writable layer: %w", c.Name, err)
		}
		cs.Logs = fsr.logs(pod, c.Name)
		ps.Containers = append(ps.Containers, cs)
	}
	ps.CPU = &statsapi.CPUStats{Time: now, UsageCoreNanoSeconds: ptr(cpu)}
	ps.Memory = &statsapi.MemoryStats{Time: now, UsageBytes: ptr(mem), WorkingSetBytes: ptr(ws)}
	podStats := func(c CgroupStats) (cadvisor.Stats, bool) { return c.PodStats(string(pod.UID)) }
	if hk, ok := p.housekeeping(podStats); ok {
		// The pod cgroup as the housekeeping read it: reading it again
		// (every controller's files, for every pod at each eviction
		// tick) would only give the same figures a few seconds newer.
		applyHousekeeping(ps.CPU, ps.Memory, hk)
		ps.ProcessStats = &statsapi.ProcessStats{ProcessCount: ptr(hk.Processes.Threads)}
	} else if p.Cgroups != nil {
		if u, err := p.Cgroups.PodUsage(pod); err == nil {
			applyUsage(ps.CPU, ps.Memory, u)
			ps.ProcessStats = &statsapi.ProcessStats{ProcessCount: ptr(u.PidsCurrent)}
		}
	}
	if p.Volumes != nil {
		ps.VolumeStats, _ = p.Volumes.PodVolumeStats(pod)
	}
	if fsr.root != nil {
		ps.EphemeralStorage = fsr.ephemeral(pod, &ps)
	}
	return ps, nil
}

func applyUsage(cpu *statsapi.CPUStats, mem *statsapi.MemoryStats, u *cgroupmgr.Usage) {
	cpu.UsageCoreNanoSeconds = ptr(u.CPUUsageNanoseconds)
	mem.UsageBytes = ptr(u.MemoryUsageBytes)
	mem.WorkingSetBytes = ptr(u.MemoryWorkingSetBytes)
}

// housekeeping is a cgroup's reading by the last housekeeping, if
// CgroupStats has one that is one (ran).
func (p *SummaryProvider) housekeeping(read func(CgroupStats) (cadvisor.Stats, bool)) (cadvisor.Stats, bool) {
	if p.CgroupStats == nil {
		return cadvisor.Stats{}, false
	}
	s, ok := read(p.CgroupStats)
	return s, ran(s, ok)
}

// ran says a housekeeping reading is one: a cgroup read before anything
// ran in it (a pod or container being created) has no CPU time, and its
// zeros would hide the figures read since.
func ran(s cadvisor.Stats, ok bool) bool { return ok && s.CPU.UsageNanoseconds > 0 }

// applyHousekeeping takes a cgroup's CPU and memory from /metrics/cadvisor's
// housekeeping, at its time.
func applyHousekeeping(cpu *statsapi.CPUStats, mem *statsapi.MemoryStats, s cadvisor.Stats) {
	at := metav1.NewTime(s.Timestamp)
	cpu.Time, cpu.UsageCoreNanoSeconds = at, ptr(s.CPU.UsageNanoseconds)
	mem.Time, mem.UsageBytes, mem.WorkingSetBytes, mem.RSSBytes = at, ptr(s.Memory.Usage), ptr(s.Memory.WorkingSet), ptr(s.Memory.RSS)
	mem.PageFaults, mem.MajorPageFaults = ptr(s.Memory.Pgfault), ptr(s.Memory.Pgmajfault)
}

func ptr[T any](v T) *T { return &v }

func deref(p *uint64) uint64 {
	if p == nil {
		return 0
	}
	return *p
}
