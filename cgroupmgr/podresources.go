package cgroupmgr

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/nodekit-dev/nodekit/resources"
)

// ResourceConfig is what a QoS or pod cgroup is set to. A nil field is left
// as it is; -1 in CPUQuota, Memory or PidsLimit means "unlimited".
type ResourceConfig struct {
	CPUShares *uint64 // cpu.shares (v1) / cpu.weight via WeightFormula (v2)
	CPUQuota  *int64  // µs per CPUPeriod
	CPUPeriod *uint64 // µs
	Memory    *int64  // bytes
	PidsLimit *int64
	MemoryMin *int64 // memory.min, cgroup v2 only (memory QoS); ignored on v1
}

// PodOptions tune ResourceConfigForPod.
type PodOptions struct {
	// DisableCPUQuota leaves CFS quota unlimited (--cpu-cfs-quota=false).
	DisableCPUQuota bool
	// CPUPeriod is the CFS period in µs; 0 means resources.QuotaPeriod (100 ms).
	CPUPeriod uint64
	// MemoryQoS sets MemoryMin to the pod's memory requests.
	MemoryQoS bool
}

// ResourceConfigForPod is the kubelet's ResourceConfigForPod: requests and
// limits summed over containers, maxed with init containers (sidecars add),
// plus pod overhead. Guaranteed: shares from requests, quota from limits and
// the memory limit. Burstable: shares from requests; quota only if every
// container has a CPU limit; memory limit only if every container has one.
// BestEffort: MinShares only. It refuses negative quantities and requests
// above limits.
func ResourceConfigForPod(pod *v1.Pod, opts PodOptions) (*ResourceConfig, error) {
	if err := ValidatePod(pod); err != nil {
		return nil, err
	}
	period := opts.CPUPeriod
	if period == 0 {
		period = resources.QuotaPeriod
	}
	reqs := podTotals(pod, func(c *v1.Container) v1.ResourceList { return c.Resources.Requests })
	cpuDeclared, memDeclared := true, true
	forEachContainer(pod, func(_ string, _ int, c *v1.Container) {
		if c.Resources.Limits.Cpu().IsZero() {
			cpuDeclared = false
		}
		if c.Resources.Limits.Memory().IsZero() {
			memDeclared = false
		}
	})
	lims := podTotals(pod, func(c *v1.Container) v1.ResourceList { return c.Resources.Limits })

	shares := resources.MilliCPUToShares(reqs.Cpu().MilliValue())
	quota := resources.MilliCPUToQuota(lims.Cpu().MilliValue(), int64(period))
	if opts.DisableCPUQuota {
		quota = -1
	}
	memLimit := lims.Memory().Value()

	rc := &ResourceConfig{}
	switch resources.ComputePodQOS(pod) {
	case v1.PodQOSGuaranteed:
		rc.CPUShares, rc.CPUQuota, rc.CPUPeriod, rc.Memory = &shares, &quota, &period, &memLimit
	case v1.PodQOSBurstable:
		rc.CPUShares = &shares
		if cpuDeclared {
			rc.CPUQuota, rc.CPUPeriod = &quota, &period
		}
		if memDeclared {
			rc.Memory = &memLimit
		}
	default:
		s := uint64(resources.MinShares)
		rc.CPUShares = &s
	}
	if opts.MemoryQoS {
		if m := reqs.Memory().Value(); m > 0 {
			rc.MemoryMin = &m
		}
	}
	return rc, nil
}

// ValidatePod refuses negative requests, limits or overhead, and a request
// above its limit, naming the field and value.
func ValidatePod(pod *v1.Pod) error {
	if pod == nil {
		return fmt.Errorf("cgroupmgr: pod is nil")
	}
	var err error
	forEachContainer(pod, func(kind string, i int, c *v1.Container) {
		if err != nil {
			return
		}
		field := fmt.Sprintf("spec.%s[%d](%s).resources", kind, i, c.Name)
		if err = validateList(field+".requests", c.Resources.Requests); err != nil {
			return
		}
		if err = validateList(field+".limits", c.Resources.Limits); err != nil {
			return
		}
		for name, req := range c.Resources.Requests {
			if lim, ok := c.Resources.Limits[name]; ok && req.Cmp(lim) > 0 {
				err = fieldError(fmt.Sprintf("%s.requests[%s]", field, name), req.String(),
					fmt.Sprintf("must not exceed limit %s", lim.String()))
				return
			}
		}
	})
	if err != nil {
		return err
	}
	return validateList("spec.overhead", pod.Spec.Overhead)
}

func validateList(field string, l v1.ResourceList) error {
	for name, q := range l {
		if q.Sign() < 0 {
			return fieldError(fmt.Sprintf("%s[%s]", field, name), q.String(), "must not be negative")
		}
	}
	return nil
}

func forEachContainer(pod *v1.Pod, fn func(kind string, i int, c *v1.Container)) {
	for i := range pod.Spec.InitContainers {
		fn("initContainers", i, &pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		fn("containers", i, &pod.Spec.Containers[i])
	}
}

// podTotals is k8s.io/component-helpers' PodRequests/PodLimits: the sum over
// containers, raised to the largest init-container need (restartable
// "sidecar" init containers run alongside and add up), plus pod overhead.
func podTotals(pod *v1.Pod, get func(*v1.Container) v1.ResourceList) v1.ResourceList {
	total := v1.ResourceList{}
	for i := range pod.Spec.Containers {
		resources.AddList(total, get(&pod.Spec.Containers[i]))
	}
	sidecars := v1.ResourceList{}
	initMax := v1.ResourceList{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		var need v1.ResourceList
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			resources.AddList(total, get(c))
			resources.AddList(sidecars, get(c))
			need = sidecars.DeepCopy()
		} else {
			need = get(c).DeepCopy()
			if need == nil {
				need = v1.ResourceList{}
			}
			resources.AddList(need, sidecars)
		}
		maxList(initMax, need)
	}
	maxList(total, initMax)
	resources.AddList(total, pod.Spec.Overhead)
	return total
}

func maxList(dst, src v1.ResourceList) {
	for name, q := range src {
		if cur, ok := dst[name]; !ok || q.Cmp(cur) > 0 {
			dst[name] = q.DeepCopy()
		}
	}
}

// podRequests returns the pod's effective requests (see podTotals).
func podRequests(pod *v1.Pod) v1.ResourceList {
	return podTotals(pod, func(c *v1.Container) v1.ResourceList { return c.Resources.Requests })
}
