package kuberuntime

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
)

// IsRestartableInitContainer reports a sidecar: an init container with
// restartPolicy Always. It starts in its place among the init containers,
// keeps running next to the regular containers and is restarted whenever it
// exits, whatever the pod's restartPolicy.
func IsRestartableInitContainer(c *v1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
}

// hasRestartableInitContainer reports whether the pod has a sidecar.
func hasRestartableInitContainer(pod *v1.Pod) bool {
	if pod == nil {
		return false
	}
	for i := range pod.Spec.InitContainers {
		if IsRestartableInitContainer(&pod.Spec.InitContainers[i]) {
			return true
		}
	}
	return false
}

// anyRegularContainerCreated: a regular container was created (running,
// created or exited), so initialization finished at some point.
func anyRegularContainerCreated(pod *v1.Pod, status *kc.PodStatus) bool {
	for i := range pod.Spec.Containers {
		cs := status.FindContainerStatusByName(pod.Spec.Containers[i].Name)
		if cs == nil {
			continue
		}
		switch cs.State {
		case kc.ContainerStateCreated, kc.ContainerStateRunning, kc.ContainerStateExited:
			return true
		}
	}
	return false
}

// initContainerActions is the kubelet's computeInitContainerActions: it adds
// to a the init containers to start (the first one not yet run, or the one
// after the last that finished or, for a sidecar, started) and the sidecars
// to restart or kill, and reports whether the pod is initialized. A regular
// init container that failed with restartPolicy Never kills the pod.
//
// The init containers are walked from the last one back, since finished
// ones may have been removed from the runtime: the newest status decides.
func initContainerActions(pod *v1.Pod, status *kc.PodStatus, probes ProbeResults, a *PodActions) bool {
	inits := pod.Spec.InitContainers
	if len(inits) == 0 {
		return true
	}
	// A created or running regular container means initialization finished
	// earlier, even if the init containers are gone now. An exited one does
	// not: after a reboot every container of the old sandbox has exited.
	initialized := false
	for i := range pod.Spec.Containers {
		if cs := status.FindContainerStatusByName(pod.Spec.Containers[i].Name); cs != nil &&
			(cs.State == kc.ContainerStateCreated || cs.State == kc.ContainerStateRunning) {
			initialized = true
			break
		}
	}
	// before: the init containers before the current one have completed.
	before := initialized
	restartOnFailure := pod.Spec.RestartPolicy != v1.RestartPolicyNever
	var toStart []int
	kill := func(cs *kc.ContainerStatus, c *v1.Container, reason KillReason, msg string) {
		a.ContainersToKill[cs.ID] = ContainerToKill{Name: c.Name, Container: c, Reason: reason, Message: msg}
	}

	for i := len(inits) - 1; i >= 0; i-- {
		c := &inits[i]
		sidecar := IsRestartableInitContainer(c)
		cs := status.FindContainerStatusByName(c.Name)
		if cs == nil {
			// A sidecar whose status is gone after initialization: start it again.
			if before && sidecar {
				toStart = append(toStart, i)
			}
			continue
		}
		if before && !sidecar {
			continue // after initialization only sidecars are kept running
		}
		switch cs.State {
		case kc.ContainerStateCreated:
			// Created but never started (the start failed): start it again.
			toStart = append(toStart, i)
		case kc.ContainerStateRunning:
			if !sidecar {
				break // a regular init container: wait for it to finish
			}
			if c.StartupProbe != nil && !probes.StartupSucceeded(cs.ID) {
				if probes.StartupFailed(cs.ID) {
					kill(cs, c, KillReasonStartupProbe, fmt.Sprintf("Init container %s failed startup probe", c.Name))
					toStart = append(toStart, i)
				}
				break // not started yet: the next init container waits
			}
			if i == len(inits)-1 {
				initialized = true
			} else if !before {
				toStart = append(toStart, i+1) // started for the first time: run the next one
			}
			if cs.Hash != kc.HashContainer(c) {
				kill(cs, c, KillReasonSpecChanged, fmt.Sprintf("Init container %s definition changed", c.Name))
				toStart = append(toStart, i)
				break
			}
			// Liveness does not hold back the next init container, but a
			// failure restarts the sidecar.
			if c.LivenessProbe != nil && probes.LivenessFailed(cs.ID) {
				kill(cs, c, KillReasonLivenessProbe, fmt.Sprintf("Init container %s failed liveness probe", c.Name))
				toStart = append(toStart, i)
			}
		case kc.ContainerStateExited:
			switch {
			case sidecar:
				toStart = append(toStart, i) // whatever the exit code and the pod's restartPolicy
			case initContainerFailed(cs):
				// Container restart rules: its own policy and rules, then
				// the pod's.
				if !kc.ShouldRestart(c, &pod.Spec, int32(cs.ExitCode)) {
					a.KillPod = true
					a.InitContainersToStart = nil
					return false
				}
				toStart = append(toStart, i)
			case i == len(inits)-1:
				initialized = true
			default:
				toStart = append(toStart, i+1)
			}
		default: // unknown: kill it before starting it again
			// No exit code to match rules against: the container's policy,
			// else the pod's.
			restart := restartOnFailure
			if c.RestartPolicy != nil {
				restart = *c.RestartPolicy != v1.ContainerRestartPolicyNever
			}
			if !sidecar && !restart {
				a.KillPod = true
				a.InitContainersToStart = nil
				return false
			}
			kill(cs, c, KillReasonUnknownState, fmt.Sprintf("Init container is in %q state, try killing it before restart", cs.State))
			toStart = append(toStart, i)
		}
		before = true
	}
	if !before {
		toStart = append(toStart, 0) // no init container ran yet
	}
	// Walked backwards: start them in spec order.
	for l, r := 0, len(toStart)-1; l < r; l, r = l+1, r-1 {
		toStart[l], toStart[r] = toStart[r], toStart[l]
	}
	a.InitContainersToStart = toStart
	return initialized
}
