package podstatus

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
)

// ownedByKubelet: the condition types the kubelet writes
// (kubetypes.PodConditionsByKubelet); the others are other writers' (a
// readiness gate's, DisruptionTarget) and an APIWriter keeps them.
func ownedByKubelet(t v1.PodConditionType) bool {
	switch t {
	case v1.PodScheduled, v1.PodReady, v1.PodInitialized, v1.ContainersReady,
		v1.PodReadyToStartContainers, v1.PodResizePending, v1.PodResizeInProgress:
		return true
	}
	return false
}

// mergeStatus is the status an APIWriter writes over api, the API server's:
// the kubelet's mergePodStatus, with the rules its updateStatusInternal
// applies against the last status (here the API's, so that they hold
// across restarts):
//
//   - conditions not owned by the kubelet are the API's; the kubelet's keep
//     the API's LastTransitionTime while their status is the same;
//     DisruptionTarget, shared with other writers, is the kubelet's only
//     as the pod moves to a terminal phase (an eviction);
//   - StartTime, once in the API, stays;
//   - a terminal phase never changes, as in the Manager;
//   - a container that cannot restart, once terminated, stays so (where the
//     kubelet drops such a status, its terminated state is kept);
//   - resource claim statuses are the API's (not the kubelet's to write);
//   - a terminal pod is never Ready or ContainersReady (a deleted pod's
//     terminal phase is the node's: podstatus.Terminate).
//
// status is shared with the Manager: it is not modified.
func mergeStatus(pod *v1.Pod, api, status *v1.PodStatus, now metav1.Time) v1.PodStatus {
	out := *status
	out.Conditions = make([]v1.PodCondition, 0, len(api.Conditions)+len(status.Conditions))
	for _, c := range api.Conditions {
		if !ownedByKubelet(c.Type) {
			out.Conditions = append(out.Conditions, c)
		}
	}
	toTerminal := !terminal(api.Phase) && terminal(status.Phase)
	for _, c := range status.Conditions {
		switch {
		case c.Type == v1.DisruptionTarget && toTerminal:
			// Shared with other writers: the kubelet's (an eviction's)
			// is sent only with the move to a terminal phase.
			if prev := find(out.Conditions, c.Type); prev != nil {
				*prev = c
			} else {
				out.Conditions = append(out.Conditions, c)
			}
			continue
		case !ownedByKubelet(c.Type):
			continue
		}
		if prev := find(api.Conditions, c.Type); prev != nil && prev.Status == c.Status {
			c.LastTransitionTime = prev.LastTransitionTime
		}
		out.Conditions = append(out.Conditions, c)
	}
	if api.StartTime != nil && !api.StartTime.IsZero() {
		out.StartTime = api.StartTime
	}
	if terminal(api.Phase) {
		out.Phase = api.Phase
	}
	out.ContainerStatuses = keepTerminated(pod, api.ContainerStatuses, status.ContainerStatuses, pod.Spec.Containers)
	out.InitContainerStatuses = keepTerminated(pod, api.InitContainerStatuses, status.InitContainerStatuses, pod.Spec.InitContainers)
	out.ResourceClaimStatuses = api.ResourceClaimStatuses
	out.ExtendedResourceClaimStatus = api.ExtendedResourceClaimStatus
	out.NodeAllocatableResourceClaimStatuses = api.NodeAllocatableResourceClaimStatuses
	if terminal(out.Phase) {
		reason := ReasonPodFailed
		if out.Phase == v1.PodSucceeded {
			reason = ReasonPodCompleted
		}
		for i := range out.Conditions {
			c := &out.Conditions[i]
			if (c.Type == v1.PodReady || c.Type == v1.ContainersReady) && c.Status == v1.ConditionTrue {
				*c = v1.PodCondition{Type: c.Type, Status: v1.ConditionFalse, Reason: reason, LastTransitionTime: now}
			}
		}
	}
	return out
}

// keepTerminated is the kubelet's checkContainerStateTransition: unless
// the pod's restartPolicy is Always, a container terminated in api that
// will not restart (kubecontainer.ShouldRestart: its restart rules and
// policy, else the pod's; sidecars always restart) stays terminated.
// specs are the statuses' containers. It copies statuses before changing
// one.
func keepTerminated(pod *v1.Pod, api, statuses []v1.ContainerStatus, specs []v1.Container) []v1.ContainerStatus {
	if pod.Spec.RestartPolicy == v1.RestartPolicyAlways || pod.Spec.RestartPolicy == "" {
		return statuses
	}
	copied := false
	for i := range statuses {
		if statuses[i].State.Terminated != nil {
			continue
		}
		prev := byNameIn(api, statuses[i].Name)
		if prev == nil || prev.State.Terminated == nil {
			continue
		}
		if c := containerIn(specs, statuses[i].Name); c != nil && kc.ShouldRestart(c, &pod.Spec, prev.State.Terminated.ExitCode) {
			continue
		}
		if !copied {
			statuses, copied = append([]v1.ContainerStatus(nil), statuses...), true
		}
		statuses[i] = *prev
	}
	return statuses
}

func byNameIn(statuses []v1.ContainerStatus, name string) *v1.ContainerStatus {
	for i := range statuses {
		if statuses[i].Name == name {
			return &statuses[i]
		}
	}
	return nil
}

func containerIn(containers []v1.Container, name string) *v1.Container {
	for i := range containers {
		if containers[i].Name == name {
			return &containers[i]
		}
	}
	return nil
}
