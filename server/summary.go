package server

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/clock"

	"github.com/nodekit-dev/nodekit/cgroupmgr"
	kc "github.com/nodekit-dev/nodekit/kubecontainer"
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

// SummaryProvider builds /stats/summary in the kubelet's Summary API
// shape (k8s.io/kubelet's stats/v1alpha1): each running container's CPU
// and memory from the runtime's CRI stats; each pod's from its pod cgroup,
// or the sum of its containers without Cgroups; the node's pod total from
// the kubepods cgroup (the "pods" system container).
type SummaryProvider struct {
	NodeName   string
	StartTime  time.Time // the node agent's start
	Pods       PodLister
	Containers ContainerStatsLister
	Cgroups    CgroupUsage // nil: no pod cgroups (--cgroups-per-qos=false)
	Clock      clock.PassiveClock
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
	started := metav1.NewTime(p.StartTime)
	sum := &statsapi.Summary{Node: statsapi.NodeStats{NodeName: p.NodeName, StartTime: started}}
	for _, pod := range p.Pods.Pods() {
		sum.Pods = append(sum.Pods, p.podStats(&pod, byID, now))
	}
	if p.Cgroups != nil {
		if u, err := p.Cgroups.Usage(p.Cgroups.KubepodsCgroupName()); err == nil {
			sum.Node.CPU, sum.Node.Memory = &statsapi.CPUStats{Time: now}, &statsapi.MemoryStats{Time: now}
			applyUsage(sum.Node.CPU, sum.Node.Memory, u)
			sum.Node.SystemContainers = []statsapi.ContainerStats{{Name: statsapi.SystemContainerPods,
				StartTime: started, CPU: sum.Node.CPU, Memory: sum.Node.Memory}}
		}
	}
	return sum, nil
}

func (p *SummaryProvider) podStats(pod *v1.Pod, byID map[string]*runtimeapi.ContainerStats, now metav1.Time) statsapi.PodStats {
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
			cpu += u.Value
		}
		if u := st.GetCpu().GetUsageNanoCores(); u != nil {
			cs.CPU.UsageNanoCores = ptr(u.Value)
		}
		if m := st.GetMemory().GetWorkingSetBytes(); m != nil {
			cs.Memory.WorkingSetBytes = ptr(m.Value)
			ws += m.Value
		}
		if m := st.GetMemory().GetUsageBytes(); m != nil {
			cs.Memory.UsageBytes = ptr(m.Value)
			mem += m.Value
		}
		ps.Containers = append(ps.Containers, cs)
	}
	ps.CPU = &statsapi.CPUStats{Time: now, UsageCoreNanoSeconds: ptr(cpu)}
	ps.Memory = &statsapi.MemoryStats{Time: now, UsageBytes: ptr(mem), WorkingSetBytes: ptr(ws)}
	if p.Cgroups != nil {
		if u, err := p.Cgroups.PodUsage(pod); err == nil {
			applyUsage(ps.CPU, ps.Memory, u)
			ps.ProcessStats = &statsapi.ProcessStats{ProcessCount: ptr(u.PidsCurrent)}
		}
	}
	return ps
}

func applyUsage(cpu *statsapi.CPUStats, mem *statsapi.MemoryStats, u *cgroupmgr.Usage) {
	cpu.UsageCoreNanoSeconds = ptr(u.CPUUsageNanoseconds)
	mem.UsageBytes = ptr(u.MemoryUsageBytes)
	mem.WorkingSetBytes = ptr(u.MemoryWorkingSetBytes)
}

func ptr[T any](v T) *T { return &v }
