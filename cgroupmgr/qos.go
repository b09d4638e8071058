package cgroupmgr

import (
	v1 "k8s.io/api/core/v1"

	"github.com/nodekit-dev/nodekit/resources"
)

// EnsureQOSCgroups creates kubepods, kubepods/burstable and
// kubepods/besteffort if missing: BestEffort gets MinShares (2), Burstable
// starts at MinShares until UpdateQOSCgroups sums its pods' requests.
// kubepods keeps the kernel's defaults until EnforceNodeAllocatable.
func (m *Manager) EnsureQOSCgroups() error {
	if err := m.ensureIfMissing(m.KubepodsCgroupName(), &ResourceConfig{}); err != nil {
		return err
	}
	minShares := uint64(resources.MinShares)
	for _, qos := range []v1.PodQOSClass{v1.PodQOSBurstable, v1.PodQOSBestEffort} {
		if err := m.ensureIfMissing(m.QOSCgroupName(qos), &ResourceConfig{CPUShares: &minShares}); err != nil {
			return err
		}
	}
	return nil
}

func (m *Manager) ensureIfMissing(name CgroupName, rc *ResourceConfig) error {
	if m.Exists(name) {
		return nil
	}
	return m.fs.create(m.Path(name), rc)
}

// QOSResourceConfigs is the kubelet's QoS container manager arithmetic over
// the active pods: burstable shares = MilliCPUToShares(sum of Burstable pods'
// CPU requests), besteffort shares = MinShares; with memoryQoS, memory.min of
// burstable = sum of Burstable memory requests and of kubepods = sum of
// Guaranteed and Burstable memory requests. Invalid pods are refused.
func QOSResourceConfigs(pods []*v1.Pod, memoryQoS bool) (map[v1.PodQOSClass]*ResourceConfig, error) {
	var burstableMilli, burstableMem, guaranteedMem int64
	for _, pod := range pods {
		if err := ValidatePod(pod); err != nil {
			return nil, err
		}
		reqs := podRequests(pod)
		switch resources.PodQOSClass(pod) {
		case v1.PodQOSBurstable:
			burstableMilli += reqs.Cpu().MilliValue()
			burstableMem += reqs.Memory().Value()
		case v1.PodQOSGuaranteed:
			guaranteedMem += reqs.Memory().Value()
		}
	}
	burstableShares := resources.MilliCPUToShares(burstableMilli)
	bestEffortShares := uint64(resources.MinShares)
	out := map[v1.PodQOSClass]*ResourceConfig{
		v1.PodQOSGuaranteed: {},
		v1.PodQOSBurstable:  {CPUShares: &burstableShares},
		v1.PodQOSBestEffort: {CPUShares: &bestEffortShares},
	}
	if memoryQoS {
		all := burstableMem + guaranteedMem
		out[v1.PodQOSBurstable].MemoryMin = &burstableMem
		out[v1.PodQOSGuaranteed].MemoryMin = &all
	}
	return out, nil
}

// UpdateQOSCgroups re-sizes the QoS cgroups for the active pods (the
// Guaranteed entry applies to kubepods and is only written with memory QoS).
func (m *Manager) UpdateQOSCgroups(activePods []*v1.Pod) error {
	memoryQoS := m.cfg.MemoryQoS && m.cfg.Mode == ModeV2
	rcs, err := QOSResourceConfigs(activePods, memoryQoS)
	if err != nil {
		return err
	}
	if err := m.EnsureQOSCgroups(); err != nil {
		return err
	}
	for _, qos := range []v1.PodQOSClass{v1.PodQOSGuaranteed, v1.PodQOSBurstable, v1.PodQOSBestEffort} {
		rc := rcs[qos]
		if qos == v1.PodQOSGuaranteed && rc.MemoryMin == nil {
			continue
		}
		if err := m.fs.update(m.Path(m.QOSCgroupName(qos)), rc); err != nil {
			return err
		}
	}
	return nil
}

// EnforceNodeAllocatable sizes kubepods from limits (normally
// PodsCgroupLimits): cpu shares from its CPU, memory limit from its memory
// and pids.max from its "pid" entry; a resource that is absent is left as is.
func (m *Manager) EnforceNodeAllocatable(limits v1.ResourceList) error {
	if err := validateList("limits", limits); err != nil {
		return err
	}
	rc := &ResourceConfig{}
	if q, ok := limits[v1.ResourceCPU]; ok {
		s := resources.MilliCPUToShares(q.MilliValue())
		rc.CPUShares = &s
	}
	if q, ok := limits[v1.ResourceMemory]; ok {
		v := q.Value()
		rc.Memory = &v
	}
	if q, ok := limits[resources.ResourcePID]; ok {
		v := q.Value()
		rc.PidsLimit = &v
	}
	return m.ensure(m.KubepodsCgroupName(), rc)
}
