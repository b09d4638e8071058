package kubecontainer

import v1 "k8s.io/api/core/v1"

// FindContainer is the spec of pod's container called name, among its
// containers, init containers (sidecars included) and ephemeral containers
// (as a v1.Container, the kubelet's GetContainerSpec), or nil.
func FindContainer(pod *v1.Pod, name string) *v1.Container {
	for _, cs := range [][]v1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range cs {
			if cs[i].Name == name {
				return &cs[i]
			}
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if ec := &pod.Spec.EphemeralContainers[i]; ec.Name == name {
			return (*v1.Container)(&ec.EphemeralContainerCommon)
		}
	}
	return nil
}

// ContainerFieldPath is how an event names a container of pod, as the
// kubelet's container references do: spec.initContainers{name} for an
// init container (or sidecar), spec.ephemeralContainers{name} for an
// ephemeral one, spec.containers{name} otherwise.
func ContainerFieldPath(pod *v1.Pod, name string) string {
	for _, c := range pod.Spec.InitContainers {
		if c.Name == name {
			return "spec.initContainers{" + name + "}"
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		if c.Name == name {
			return "spec.ephemeralContainers{" + name + "}"
		}
	}
	return "spec.containers{" + name + "}"
}
