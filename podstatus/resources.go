package podstatus

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/resources"
)

// statusResources is the kubelet's convertContainerStatusResources: a
// container's status.resources. c is the container as allocated (the
// allocated pod's); a container not running shows that. A running one
// shows what its runtime reports (cur.Resources; the cpu request from its
// shares, the cpu limit from its quota, the memory limit), what is
// missing filled in from actuated (what it was last given: the memory
// request, which no runtime reports), and what is still missing kept from
// the previous status of the same running container (old; id is the new
// status's containerID). A reported cpu value at or below the smallest the
// kernel expresses (2 shares, a 10m quota) keeps the allocated one, when
// that too is that small, so that "1m" does not show as "2m".
func statusResources(c *v1.Container, cur *kc.ContainerStatus, id string, actuated *v1.ResourceRequirements, old *v1.ContainerStatus) *v1.ResourceRequirements {
	out := c.Resources.DeepCopy()
	if cur == nil || cur.State != kc.ContainerStateRunning {
		return out
	}
	var cpuReq, cpuLim, memReq, memLim *resource.Quantity
	if r := cur.Resources; r != nil {
		cpuReq = milli(r.CPURequestMilli)
		cpuLim = milli(r.CPULimitMilli)
		memLim = byteQuantity(r.MemoryLimitBytes)
	}
	if actuated != nil {
		if cur.Resources == nil {
			cpuReq, cpuLim, memLim = nonZero(actuated.Requests.Cpu()), nonZero(actuated.Limits.Cpu()), nonZero(actuated.Limits.Memory())
		}
		memReq = nonZero(actuated.Requests.Memory())
	}
	var oldRes *v1.ResourceRequirements
	if old != nil && old.State.Running != nil && old.ContainerID != "" && old.Resources != nil && old.ContainerID == id {
		oldRes = old.Resources
	}
	set := func(dst v1.ResourceList, name v1.ResourceName, q *resource.Quantity, keepAllocated bool, oldList func(*v1.ResourceRequirements) v1.ResourceList) {
		switch {
		case q != nil && !keepAllocated:
			dst[name] = q.DeepCopy()
		case q == nil && oldRes != nil:
			if v, ok := oldList(oldRes)[name]; ok {
				dst[name] = v.DeepCopy()
			}
		}
	}
	limits := func(r *v1.ResourceRequirements) v1.ResourceList { return r.Limits }
	requests := func(r *v1.ResourceRequirements) v1.ResourceList { return r.Requests }
	if out.Limits != nil {
		small := cpuLim != nil && cpuLim.MilliValue() <= resources.MinMilliCPULimit && out.Limits.Cpu().MilliValue() <= resources.MinMilliCPULimit
		set(out.Limits, v1.ResourceCPU, cpuLim, small, limits)
		set(out.Limits, v1.ResourceMemory, memLim, false, limits)
	}
	if out.Requests != nil {
		small := cpuReq != nil && cpuReq.MilliValue() <= resources.MinShares && out.Requests.Cpu().MilliValue() <= resources.MinShares
		set(out.Requests, v1.ResourceCPU, cpuReq, small, requests)
		set(out.Requests, v1.ResourceMemory, memReq, false, requests)
	}
	return out
}

func milli(v int64) *resource.Quantity {
	if v <= 0 {
		return nil
	}
	return resource.NewMilliQuantity(v, resource.DecimalSI)
}

func byteQuantity(v int64) *resource.Quantity {
	if v <= 0 {
		return nil
	}
	return resource.NewQuantity(v, resource.BinarySI)
}

func nonZero(q *resource.Quantity) *resource.Quantity {
	if q == nil || q.IsZero() {
		return nil
	}
	return q
}
