package resources

import (
	v1 "k8s.io/api/core/v1"
)

// OOM score adjustments from pkg/kubelet/qos/policy.go.
const (
	// GuaranteedOOMScoreAdj is given to Guaranteed and node-critical pods.
	GuaranteedOOMScoreAdj = -997
	// BestEffortOOMScoreAdj is given to BestEffort pods: killed first.
	BestEffortOOMScoreAdj = 1000
	// KubeletOOMScoreAdj is what the kubelet asks for itself.
	KubeletOOMScoreAdj = -999
)

// Annotation and priority class that make a pod node-critical.
const (
	configSourceAnnotation = "kubernetes.io/config.source"
	configMirrorAnnotation = "kubernetes.io/config.mirror"
	systemNodeCritical     = "system-node-critical"
)

// SystemCriticalPriority is the lowest priority of a critical pod
// (scheduling.SystemCriticalPriority; system-cluster-critical has it,
// system-node-critical 1000 more).
const SystemCriticalPriority = 2 * 1000000000

// Options tune ContainerResources; the zero value is the kubelet's default.
type Options struct {
	// MemoryCapacity is the node's memory in bytes; it scales the OOM score of
	// Burstable containers. Zero leaves OOMScoreAdj at 0 for Burstable pods.
	MemoryCapacity int64
	// DisableCPUQuota turns CFS quota off (the kubelet's --cpu-cfs-quota=false).
	DisableCPUQuota bool
	// CPUPeriod is the CFS period in microseconds; 0 means QuotaPeriod (100 ms).
	CPUPeriod int64
}

// LinuxResources are the Linux resources of one container, in the units of
// the CRI's LinuxContainerResources (runtime converts them).
type LinuxResources struct {
	// CPUShares is the cgroup v1 cpu.shares (2..262144).
	CPUShares int64
	// CPUPeriod and CPUQuota are the CFS period and quota in microseconds;
	// both 0 when CFS quota is off, quota 0 when there is no CPU limit.
	CPUPeriod int64
	CPUQuota  int64
	// MemoryLimitInBytes is 0 when there is no memory limit.
	MemoryLimitInBytes int64
	OOMScoreAdj        int64
}

// ContainerResources returns the Linux resources the kubelet asks the runtime
// for: shares from the CPU request (or the limit when only a limit is set),
// quota from the CPU limit, the memory limit, and the OOM score adjustment.
func ContainerResources(pod *v1.Pod, c *v1.Container, opts Options) LinuxResources {
	cpuReq := c.Resources.Requests.Cpu()
	cpuLim := c.Resources.Limits.Cpu()
	var r LinuxResources
	if cpuReq.IsZero() && !cpuLim.IsZero() {
		r.CPUShares = int64(MilliCPUToShares(cpuLim.MilliValue()))
	} else {
		r.CPUShares = int64(MilliCPUToShares(cpuReq.MilliValue()))
	}
	if mem := c.Resources.Limits.Memory().Value(); mem != 0 {
		r.MemoryLimitInBytes = mem
	}
	if !opts.DisableCPUQuota {
		period := opts.CPUPeriod
		if period == 0 {
			period = QuotaPeriod
		}
		r.CPUPeriod = period
		r.CPUQuota = MilliCPUToQuota(cpuLim.MilliValue(), period)
	}
	r.OOMScoreAdj = int64(OOMScoreAdj(pod, c, opts.MemoryCapacity))
	return r
}

// OOMScoreAdj is the kubelet's GetContainerOOMScoreAdjust: Guaranteed and
// node-critical pods get -997, BestEffort 1000, and Burstable containers a
// score that falls as their memory request grows, kept within [3, 999] so
// they always rank between the other two classes.
func OOMScoreAdj(pod *v1.Pod, c *v1.Container, memoryCapacity int64) int {
	if isNodeCritical(pod) {
		return GuaranteedOOMScoreAdj
	}
	switch PodQOSClass(pod) {
	case v1.PodQOSGuaranteed:
		return GuaranteedOOMScoreAdj
	case v1.PodQOSBestEffort:
		return BestEffortOOMScoreAdj
	}
	if memoryCapacity <= 0 {
		return 0
	}
	req := c.Resources.Requests.Memory().Value()
	adj := 1000 - (1000*req)/memoryCapacity
	if adj < 1000+GuaranteedOOMScoreAdj {
		return 1000 + GuaranteedOOMScoreAdj
	}
	if adj == BestEffortOOMScoreAdj {
		return int(adj - 1)
	}
	return int(adj)
}

// isNodeCritical mirrors kubelettypes.IsNodeCriticalPod: a critical pod in
// the system-node-critical class.
func isNodeCritical(pod *v1.Pod) bool {
	return pod.Spec.PriorityClassName == systemNodeCritical && IsCriticalPod(pod)
}

// IsCriticalPod is the kubelet's IsCriticalPod: a static pod (its
// kubernetes.io/config.source is not "api"), a mirror pod
// (kubernetes.io/config.mirror), or a pod whose priority is at least
// SystemCriticalPriority (the system-node-critical and
// system-cluster-critical classes). The eviction manager never evicts
// one and admits one under any pressure.
func IsCriticalPod(pod *v1.Pod) bool {
	if src, ok := pod.Annotations[configSourceAnnotation]; ok && src != "api" {
		return true
	}
	if _, ok := pod.Annotations[configMirrorAnnotation]; ok {
		return true
	}
	return pod.Spec.Priority != nil && *pod.Spec.Priority >= SystemCriticalPriority
}
