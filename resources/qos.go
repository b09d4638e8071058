package resources

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// qosResources are the resources that decide the QoS class.
var qosResources = [...]v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory}

// PodQOSClass returns the pod's QoS class: pod.Status.QOSClass when the API
// server already set it (it never changes for a pod's lifetime), otherwise
// ComputePodQOS.
func PodQOSClass(pod *v1.Pod) v1.PodQOSClass {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass
	}
	return ComputePodQOS(pod)
}

// ComputePodQOS applies the kubelet's rules over init and regular containers:
//   - BestEffort: no container has a non-zero CPU or memory request or limit;
//   - Guaranteed: every container has CPU and memory limits, and every
//     non-zero request equals its limit;
//   - Burstable: anything else.
//
// Requests are expected to be defaulted (a limit without a request means the
// request equals the limit), as the API server and the static-pod decoder do.
func ComputePodQOS(pod *v1.Pod) v1.PodQOSClass {
	requests := v1.ResourceList{}
	limits := v1.ResourceList{}
	guaranteed := true
	visit := func(c *v1.Container) {
		for _, name := range qosResources {
			if q, ok := c.Resources.Requests[name]; ok && q.Sign() > 0 {
				addTo(requests, name, q)
			}
		}
		limitsFound := 0
		for _, name := range qosResources {
			if q, ok := c.Resources.Limits[name]; ok && q.Sign() > 0 {
				addTo(limits, name, q)
				limitsFound++
			}
		}
		if limitsFound != len(qosResources) {
			guaranteed = false
		}
	}
	for i := range pod.Spec.InitContainers {
		visit(&pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		visit(&pod.Spec.Containers[i])
	}
	if len(requests) == 0 && len(limits) == 0 {
		return v1.PodQOSBestEffort
	}
	if guaranteed {
		for name, req := range requests {
			if lim, ok := limits[name]; !ok || lim.Cmp(req) != 0 {
				guaranteed = false
				break
			}
		}
	}
	if guaranteed && len(requests) == len(limits) {
		return v1.PodQOSGuaranteed
	}
	return v1.PodQOSBurstable
}

func addTo(list v1.ResourceList, name v1.ResourceName, q resource.Quantity) {
	sum, ok := list[name]
	if !ok {
		list[name] = q.DeepCopy()
		return
	}
	sum.Add(q)
	list[name] = sum
}
