package podstatus

import v1 "k8s.io/api/core/v1"

// Phase is the kubelet's getPhase. s holds the container statuses (Started
// set for restartable init containers); initializedBefore says a regular
// container has run in the pod's newest sandbox, so init containers that
// are gone or sidecars restarting do not send the pod back to Pending.
//
//   - An init container that failed under restartPolicy Never: Failed.
//   - A regular init container not done or a sidecar not started (unless
//     initializedBefore), or a container waiting for its first start:
//     Pending.
//   - Something running and every container known: Running.
//   - Nothing running, all stopped: Running under Always (they restart),
//     Succeeded when all exited 0, Failed under Never, else Running.
//   - Otherwise Pending.
func Phase(pod *v1.Pod, s *v1.PodStatus, initializedBefore bool) v1.PodPhase {
	init := byName(s.InitContainerStatuses)
	pendingInit, failedInit := 0, 0
	var running, waiting, stopped, succeeded, unknown int
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		cs, ok := init[c.Name]
		if restartable(c) {
			switch {
			case !ok:
				unknown++
			case cs.State.Running != nil:
				if cs.Started == nil || !*cs.Started {
					pendingInit++
				}
				running++
			case cs.State.Terminated != nil, cs.LastTerminationState.Terminated != nil:
				// A stopped sidecar does not count.
			case cs.State.Waiting != nil:
				pendingInit++
				waiting++
			default:
				pendingInit++
				unknown++
			}
			continue
		}
		switch {
		case !ok, cs.State.Running != nil:
			pendingInit++
		case cs.State.Terminated != nil:
			if cs.State.Terminated.ExitCode != 0 {
				failedInit++
			}
		case cs.State.Waiting != nil && cs.LastTerminationState.Terminated != nil:
			if cs.LastTerminationState.Terminated.ExitCode != 0 {
				failedInit++
			}
		default:
			pendingInit++
		}
	}
	regular := byName(s.ContainerStatuses)
	for _, c := range pod.Spec.Containers {
		cs, ok := regular[c.Name]
		switch {
		case !ok:
			unknown++
		case cs.State.Running != nil:
			running++
		case cs.State.Terminated != nil:
			stopped++
			if cs.State.Terminated.ExitCode == 0 {
				succeeded++
			}
		case cs.State.Waiting != nil && cs.LastTerminationState.Terminated != nil:
			stopped++ // waiting to restart
		case cs.State.Waiting != nil:
			waiting++
		default:
			unknown++
		}
	}
	if failedInit > 0 && pod.Spec.RestartPolicy == v1.RestartPolicyNever {
		return v1.PodFailed
	}
	switch {
	case pendingInit > 0 && !initializedBefore, waiting > 0:
		return v1.PodPending
	case running > 0 && unknown == 0:
		return v1.PodRunning
	case running == 0 && stopped > 0 && unknown == 0:
		switch {
		case pod.Spec.RestartPolicy == v1.RestartPolicyAlways:
			return v1.PodRunning
		case stopped == succeeded:
			return v1.PodSucceeded
		case pod.Spec.RestartPolicy == v1.RestartPolicyNever:
			return v1.PodFailed
		}
		return v1.PodRunning
	}
	return v1.PodPending
}

func byName(statuses []v1.ContainerStatus) map[string]*v1.ContainerStatus {
	m := make(map[string]*v1.ContainerStatus, len(statuses))
	for i := range statuses {
		m[statuses[i].Name] = &statuses[i]
	}
	return m
}
