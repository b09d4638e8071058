package pleg

import (
	"k8s.io/apimachinery/pkg/types"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
)

// containerState is a container's state as the relister compares it.
type containerState string

const (
	stateRunning     containerState = "running"
	stateExited      containerState = "exited"
	stateUnknown     containerState = "unknown"
	stateNonExistent containerState = "non-existent"
)

func convertState(s kc.ContainerState) containerState {
	switch s {
	case kc.ContainerStateRunning:
		return stateRunning
	case kc.ContainerStateExited:
		return stateExited
	default: // created counts as unknown, as in the kubelet
		return stateUnknown
	}
}

// stateIn returns the state of the container or sandbox id in pod.
func stateIn(pod *kc.Pod, id string) containerState {
	if pod == nil {
		return stateNonExistent
	}
	if c := pod.FindContainerByID(id); c != nil {
		return convertState(c.State)
	}
	if s := pod.FindSandboxByID(id); s != nil {
		return convertState(s.State)
	}
	return stateNonExistent
}

// generateEvents maps a state transition to events (the kubelet's table).
func generateEvents(uid types.UID, id string, old, cur containerState) []*PodLifecycleEvent {
	if old == cur {
		return nil
	}
	switch cur {
	case stateRunning:
		return []*PodLifecycleEvent{{ID: uid, Type: ContainerStarted, ContainerID: id}}
	case stateExited:
		return []*PodLifecycleEvent{{ID: uid, Type: ContainerDied, ContainerID: id}}
	case stateUnknown:
		return []*PodLifecycleEvent{{ID: uid, Type: ContainerChanged, ContainerID: id}}
	}
	// Gone: a container that was already reported dead is only removed.
	if old == stateExited {
		return []*PodLifecycleEvent{{ID: uid, Type: ContainerRemoved, ContainerID: id}}
	}
	return []*PodLifecycleEvent{{ID: uid, Type: ContainerDied, ContainerID: id}, {ID: uid, Type: ContainerRemoved, ContainerID: id}}
}

// computePodEvents compares every container and sandbox of a pod between two
// relists, in a stable order: the old pod's first, then new ones.
func computePodEvents(uid types.UID, old, cur *kc.Pod) []*PodLifecycleEvent {
	var events []*PodLifecycleEvent
	seen := func(id string) bool { return old != nil && stateIn(old, id) != stateNonExistent }
	visit := func(id string) {
		events = append(events, generateEvents(uid, id, stateIn(old, id), stateIn(cur, id))...)
	}
	for _, p := range []*kc.Pod{old, cur} {
		if p == nil {
			continue
		}
		for _, cs := range [][]*kc.Container{p.Sandboxes, p.Containers} {
			for _, c := range cs {
				if p == cur && seen(c.ID) {
					continue
				}
				visit(c.ID)
			}
		}
	}
	return events
}
