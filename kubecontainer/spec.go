package kubecontainer

import v1 "k8s.io/api/core/v1"

// FindContainer is the spec of pod's container called name, among its
// containers and init containers (sidecars included), or nil.
func FindContainer(pod *v1.Pod, name string) *v1.Container {
	for _, cs := range [][]v1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range cs {
			if cs[i].Name == name {
				return &cs[i]
			}
		}
	}
	return nil
}

// ContainerFieldPath is how an event names a container of pod, as the
// kubelet's container references do: spec.initContainers{name} for an
// init container (or sidecar), spec.containers{name} otherwise.
func ContainerFieldPath(pod *v1.Pod, name string) string {
	for _, c := range pod.Spec.InitContainers {
		if c.Name == name {
			return "spec.initContainers{" + name + "}"
		}
	}
	return "spec.containers{" + name + "}"
}
