package podstatus

import v1 "k8s.io/api/core/v1"

// ReasonContainerStatusUnknown is the kubelet's reason for a container whose
// end the node did not see (kubecontainer.ContainerReasonStatusUnknown).
const ReasonContainerStatusUnknown = "ContainerStatusUnknown"

// Terminate makes status, the last one of a pod whose termination is done
// (its containers and sandbox stopped), final as the kubelet's status
// manager TerminatePod does: once the pod has initialized, a container not
// terminated is, with exit code 137 and reason ContainerStatusUnknown; so
// is an init container before the last one that started; and a Pending or
// Running phase becomes Failed, except for a static pod (the kubelet's
// TODO #116484). A deleted pod is removed from the API only once its phase
// is terminal (APIWriter), so this is what ends a pod deleted before its
// containers ran.
func Terminate(pod *v1.Pod, status *v1.PodStatus) {
	unknown := v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Reason: ReasonContainerStatusUnknown,
		Message: "The container could not be located when the pod was terminated", ExitCode: 137}}
	if initialized(pod, status) {
		for i := range status.ContainerStatuses {
			if status.ContainerStatuses[i].State.Terminated == nil {
				status.ContainerStatuses[i].State = unknown
			}
		}
	}
	last := -1 // the last init container with a sign of a start
	for i, cs := range status.InitContainerStatuses {
		if cs.State.Running != nil || cs.State.Terminated != nil {
			last = i
		}
	}
	for i := 0; i <= last; i++ {
		if status.InitContainerStatuses[i].State.Terminated == nil {
			status.InitContainerStatuses[i].State = unknown
		}
	}
	if pod.Annotations["kubernetes.io/config.source"] != "api" && pod.Annotations["kubernetes.io/config.source"] != "" {
		return // static
	}
	if !terminal(status.Phase) {
		status.Phase = v1.PodFailed
	}
}

// initialized is the kubelet's hasPodInitialized: no init containers, or
// the last one exited 0 at some point.
func initialized(pod *v1.Pod, status *v1.PodStatus) bool {
	n := len(pod.Spec.InitContainers)
	if n == 0 {
		return true
	}
	for _, cs := range status.InitContainerStatuses {
		if cs.Name != pod.Spec.InitContainers[n-1].Name {
			continue
		}
		for _, t := range []*v1.ContainerStateTerminated{cs.State.Terminated, cs.LastTerminationState.Terminated} {
			if t != nil && t.ExitCode == 0 {
				return true
			}
		}
	}
	return false
}
