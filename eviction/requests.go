package eviction

import (
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// podLevelResource: the resources pod-level requests and limits may set
// (component-helpers' IsSupportedPodLevelResource).
func podLevelResource(name v1.ResourceName) bool {
	return name == v1.ResourceCPU || name == v1.ResourceMemory || strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix)
}

// podLevelSet is IsPodLevelResourcesSet: spec.resources names a
// pod-level resource (PodLevelResources is on by default in v1.34).
func podLevelSet(pod *v1.Pod) bool {
	r := pod.Spec.Resources
	if r == nil {
		return false
	}
	for name := range r.Requests {
		if podLevelResource(name) {
			return true
		}
	}
	for name := range r.Limits {
		if podLevelResource(name) {
			return true
		}
	}
	return false
}

// podRequest is the kubelet's GetResourceRequestQuantity in bytes (or
// units): the pod-level request when the pod sets pod-level resources
// (then nothing else: ephemeral-storage is 0), else the containers' sum
// raised to the largest init-container need (sidecars add up); plus the
// pod overhead when the total is not zero.
func podRequest(pod *v1.Pod, name v1.ResourceName) int64 {
	var total int64
	if podLevelSet(pod) {
		if q, ok := pod.Spec.Resources.Requests[name]; ok && podLevelResource(name) {
			total = q.Value()
		}
	} else {
		q, _ := aggregate(pod, name, func(c *v1.Container) v1.ResourceList { return c.Resources.Requests })
		total = q.Value()
	}
	if total != 0 {
		if q, ok := pod.Spec.Overhead[name]; ok {
			total += q.Value()
		}
	}
	return total
}

// podLimit is component-helpers' PodLimits for a resource pods cannot set
// at pod level (ephemeral-storage): the containers' limits aggregated like
// requests, found when any container sets one, plus the overhead when not
// zero.
func podLimit(pod *v1.Pod, name v1.ResourceName) (resource.Quantity, bool) {
	total, found := aggregate(pod, name, func(c *v1.Container) v1.ResourceList { return c.Resources.Limits })
	if found && !total.IsZero() {
		if q, ok := pod.Spec.Overhead[name]; ok {
			total.Add(q)
		}
	}
	return total, found
}

// aggregate sums name over the containers and raises it to the largest
// need of an init container (itself plus the restartable init containers
// before it, which also add to the sum): the sidecar KEP's formula, with
// component-helpers' quantity arithmetic (the sum keeps the first
// quantity's format).
func aggregate(pod *v1.Pod, name v1.ResourceName, list func(*v1.Container) v1.ResourceList) (resource.Quantity, bool) {
	var sum, sidecars, initMax acc
	for i := range pod.Spec.Containers {
		if q, ok := list(&pod.Spec.Containers[i])[name]; ok {
			sum.add(q)
		}
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		q, ok := list(c)[name]
		var need acc
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			if ok {
				sum.add(q)
				sidecars.add(q)
			}
			need = sidecars
		} else {
			if ok {
				need.add(q)
			}
			if sidecars.found {
				need.add(sidecars.q)
			}
		}
		if need.found && (!initMax.found || need.q.Cmp(initMax.q) > 0) {
			initMax = acc{need.q.DeepCopy(), true}
		}
	}
	if initMax.found && (!sum.found || initMax.q.Cmp(sum.q) > 0) {
		sum = initMax
	}
	return sum.q, sum.found
}

// acc is a ResourceList entry: a quantity, and whether it is present.
type acc struct {
	q     resource.Quantity
	found bool
}

func (a *acc) add(q resource.Quantity) {
	if !a.found {
		a.q, a.found = q.DeepCopy(), true
		return
	}
	a.q.Add(q)
}
