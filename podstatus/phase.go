package podstatus

import (
	v1 "k8s.io/api/core/v1"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
)

// Phase is the kubelet's getPhase, with container restart rules (beta and
// on by default since v1.35). s holds the container statuses (Started set
// for restartable init containers); initializedBefore says a regular
// container has run in the pod's newest sandbox, so init containers that
// are gone or sidecars restarting do not send the pod back to Pending.
// Whether an exited container restarts is kubecontainer.ShouldRestart:
// its restart rules, its restartPolicy, else the pod's.
//
//   - An init container that failed and will not restart: Failed.
//   - A regular init container not done or a sidecar not started (unless
//     initializedBefore), or a container waiting for its first start:
//     Pending.
//   - Something running and every container known: Running.
//   - Nothing running, all stopped: Running while one of them restarts,
//     else Succeeded when all exited 0, else Failed.
//   - Otherwise Pending.
func Phase(pod *v1.Pod, s *v1.PodStatus, initializedBefore bool) v1.PodPhase {
	return phase(pod, s, initializedBefore, false)
}

// phase is Phase; terminal is the kubelet's podIsTerminal (the pod is
// being terminated for good): then a pod of the API whose containers all
// stopped is Succeeded or Failed, whatever would restart them.
func phase(pod *v1.Pod, s *v1.PodStatus, initializedBefore, terminal bool) v1.PodPhase {
	init := byName(s.InitContainerStatuses)
	pendingInit, failedInitNotRestartable := 0, 0
	var running, waiting, stopped, stoppedNotRestartable, succeeded, unknown int
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
		switch t := lastExit(cs); {
		case !ok, cs.State.Running != nil:
			pendingInit++
		case t != nil:
			if t.ExitCode != 0 && !kc.ShouldRestart(c, &pod.Spec, t.ExitCode) {
				failedInitNotRestartable++
			}
		default:
			pendingInit++
		}
	}
	regular := byName(s.ContainerStatuses)
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		cs, ok := regular[c.Name]
		switch t := lastExit(cs); {
		case !ok:
			unknown++
		case cs.State.Running != nil:
			running++
		case t != nil: // exited, or waiting to restart
			stopped++
			if !kc.ShouldRestart(c, &pod.Spec, t.ExitCode) {
				stoppedNotRestartable++
			}
			if cs.State.Terminated != nil && t.ExitCode == 0 {
				succeeded++
			}
		case cs.State.Waiting != nil:
			waiting++
		default:
			unknown++
		}
	}
	if failedInitNotRestartable > 0 {
		return v1.PodFailed
	}
	switch {
	case pendingInit > 0 && !initializedBefore, waiting > 0:
		return v1.PodPending
	case running > 0 && unknown == 0:
		return v1.PodRunning
	case running == 0 && stopped > 0 && unknown == 0:
		switch {
		case terminal && !isStaticPod(pod) && stopped == succeeded:
			return v1.PodSucceeded
		case terminal && !isStaticPod(pod):
			return v1.PodFailed
		case stopped != stoppedNotRestartable:
			return v1.PodRunning // at least one restarts
		case stopped == succeeded:
			return v1.PodSucceeded
		}
		return v1.PodFailed
	}
	return v1.PodPending
}

// lastExit is the termination a container status shows: terminated now, or
// waiting after one; nil otherwise (or for nil).
func lastExit(cs *v1.ContainerStatus) *v1.ContainerStateTerminated {
	switch {
	case cs == nil:
		return nil
	case cs.State.Terminated != nil:
		return cs.State.Terminated
	case cs.State.Waiting != nil:
		return cs.LastTerminationState.Terminated
	}
	return nil
}

func byName(statuses []v1.ContainerStatus) map[string]*v1.ContainerStatus {
	m := make(map[string]*v1.ContainerStatus, len(statuses))
	for i := range statuses {
		m[statuses[i].Name] = &statuses[i]
	}
	return m
}

// isStaticPod: from a file or URL source (the kubelet's IsStaticPod).
func isStaticPod(pod *v1.Pod) bool {
	src, ok := pod.Annotations["kubernetes.io/config.source"]
	return ok && src != "api"
}
