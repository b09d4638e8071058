package admission

import (
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	resourcehelper "k8s.io/component-helpers/resource"
)

// insufficient is the scheduler's InsufficientResource.
type insufficient struct {
	Name                      v1.ResourceName
	Requested, Used, Capacity int64
}

// message is the kubelet's InsufficientResourceError text.
func (r insufficient) message() string {
	return fmt.Sprintf("Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d",
		r.Name, r.Requested, r.Used, r.Capacity)
}

// fits is the scheduler's noderesources Fits as the kubelet calls it:
// one more pod within the allocatable pods, then each resource the pod
// requests within the allocatable less the other pods' requests, in the
// order pods, cpu, memory, ephemeral-storage, then the scalar resources
// (hugepages, extended) by name. Requests are the kubelet's PodRequests:
// the containers' sum raised to the largest init container's need
// (restartable init containers, sidecars, add up), or the pod-level
// requests, plus the overhead.
func fits(pod *v1.Pod, others []*v1.Pod, allocatable v1.ResourceList) []insufficient {
	var out []insufficient
	allowed := allocatable.Pods().Value()
	if int64(len(others))+1 > allowed {
		out = append(out, insufficient{Name: v1.ResourcePods, Requested: 1, Used: int64(len(others)), Capacity: allowed})
	}
	want := amounts(requests(pod))
	used := map[v1.ResourceName]int64{}
	for _, o := range others {
		for name, v := range amounts(requests(o)) {
			used[name] += v
		}
	}
	capacity := amounts(allocatable)
	names := make([]v1.ResourceName, 0, len(want))
	for name, v := range want {
		if v > 0 && !isNative(name) {
			names = append(names, name)
		}
	}
	sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })
	for _, name := range append([]v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage}, names...) {
		if w := want[name]; w > 0 && w > capacity[name]-used[name] {
			out = append(out, insufficient{Name: name, Requested: w, Used: used[name], Capacity: capacity[name]})
		}
	}
	return out
}

// requests is the kubelet's (and the scheduler's) pod request, with the
// resources allocated to a resized pod when its status has them.
func requests(pod *v1.Pod) v1.ResourceList {
	return resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{UseStatusResources: true})
}

// amounts turns a resource list into the scheduler's units: millicores
// for cpu, bytes or counts for the rest; only the resources the scheduler
// tracks (cpu, memory, ephemeral-storage and the scalar ones).
func amounts(l v1.ResourceList) map[v1.ResourceName]int64 {
	out := make(map[v1.ResourceName]int64, len(l))
	for name, q := range l {
		switch {
		case name == v1.ResourceCPU:
			out[name] = q.MilliValue()
		case name == v1.ResourceMemory || name == v1.ResourceEphemeralStorage || isScalar(name):
			out[name] = q.Value()
		}
	}
	return out
}

// isNative: cpu, memory and ephemeral-storage, checked before the scalars.
func isNative(name v1.ResourceName) bool {
	return name == v1.ResourceCPU || name == v1.ResourceMemory || name == v1.ResourceEphemeralStorage
}

// isScalar is the scheduler's IsScalarResourceName: hugepages, extended
// resources, kubernetes.io/-prefixed native ones and attachable volumes.
func isScalar(name v1.ResourceName) bool {
	s := string(name)
	return strings.HasPrefix(s, v1.ResourceHugePagesPrefix) || strings.HasPrefix(s, v1.ResourceAttachableVolumesPrefix) ||
		strings.Contains(s, "kubernetes.io/") || isExtended(name)
}

// isExtended is IsExtendedResourceName: a qualified name with a domain
// outside kubernetes.io, not a quota's "requests." name.
func isExtended(name v1.ResourceName) bool {
	s := string(name)
	if !strings.Contains(s, "/") || strings.Contains(s, "kubernetes.io/") || strings.HasPrefix(s, v1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(v1.DefaultResourceRequestsPrefix+s)) == 0
}

// withoutMissingExtended is the kubelet's removeMissingExtendedResources:
// the containers' requests of extended resources the node does not have
// are dropped (cluster-level resources the node knows nothing of).
func withoutMissingExtended(pod *v1.Pod, allocatable v1.ResourceList) *v1.Pod {
	out := pod.DeepCopy()
	filter := func(cs []v1.Container) {
		for i := range cs {
			kept := v1.ResourceList{}
			for name, q := range cs[i].Resources.Requests {
				if _, ok := allocatable[name]; ok || !isExtended(name) {
					kept[name] = q
				}
			}
			cs[i].Resources.Requests = kept
		}
	}
	filter(out.Spec.Containers)
	filter(out.Spec.InitContainers)
	return out
}
