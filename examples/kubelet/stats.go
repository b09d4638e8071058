package main

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/nodekit-dev/nodekit/kubecontainer"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/nodekit-dev/nodekit/cgroupmgr"
)

// summary serves /stats/summary in the kubelet's Summary API shape: per
// container CPU and memory from the runtime's CRI stats, per pod from its
// pod cgroup (or the sum of its containers without cgroups-per-qos), and
// the node's pod total from the kubepods cgroup.
func (a *agent) summary(w http.ResponseWriter, r *http.Request) {
	s, err := a.buildSummary(r.Context())
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(s)
}

func (a *agent) buildSummary(ctx context.Context) (*statsapi.Summary, error) {
	now := metav1.NewTime(a.clock.Now())
	stats, err := a.criClient.ListContainerStats(ctx, nil)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]*runtimeapi.ContainerStats, len(stats))
	for _, s := range stats {
		byID[s.GetAttributes().GetId()] = s
	}
	sum := &statsapi.Summary{Node: statsapi.NodeStats{NodeName: a.cfg.hostname, StartTime: metav1.NewTime(a.started)}}
	for _, p := range a.pods() {
		ps := statsapi.PodStats{PodRef: statsapi.PodReference{Name: p.Name, Namespace: p.Namespace, UID: string(p.UID)}}
		if p.Status.StartTime != nil {
			ps.StartTime = *p.Status.StartTime
		}
		var cpu, mem, ws uint64
		for _, c := range p.Status.ContainerStatuses {
			st := byID[kubecontainer.TrimRuntimeType(c.ContainerID)]
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
		if a.cgroups != nil {
			if u, err := a.cgroups.PodUsage(&p); err == nil {
				applyUsage(ps.CPU, ps.Memory, u)
				ps.ProcessStats = &statsapi.ProcessStats{ProcessCount: ptr(u.PidsCurrent)}
			}
		}
		sum.Pods = append(sum.Pods, ps)
	}
	if a.cgroups != nil {
		if u, err := a.cgroups.Usage(a.cgroups.KubepodsCgroupName()); err == nil {
			sum.Node.CPU, sum.Node.Memory = &statsapi.CPUStats{Time: now}, &statsapi.MemoryStats{Time: now}
			applyUsage(sum.Node.CPU, sum.Node.Memory, u)
			sum.Node.SystemContainers = []statsapi.ContainerStats{{Name: statsapi.SystemContainerPods,
				StartTime: metav1.NewTime(a.started), CPU: sum.Node.CPU, Memory: sum.Node.Memory}}
		}
	}
	return sum, nil
}

func applyUsage(cpu *statsapi.CPUStats, mem *statsapi.MemoryStats, u *cgroupmgr.Usage) {
	cpu.UsageCoreNanoSeconds = ptr(u.CPUUsageNanoseconds)
	mem.UsageBytes = ptr(u.MemoryUsageBytes)
	mem.WorkingSetBytes = ptr(u.MemoryWorkingSetBytes)
}

func ptr[T any](v T) *T { return &v }
