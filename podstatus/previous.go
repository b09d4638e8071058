package podstatus

import (
	v1 "k8s.io/api/core/v1"
)

// previous is the status a new one is generated over: the one published
// before (Input.Old, the kubelet's status manager's), else the pod's own
// (from its source: the API server's after a restart).
func previous(in Input) *v1.PodStatus {
	if in.Old != nil {
		return in.Old
	}
	return &in.Pod.Status
}

// keptPhase is the kubelet's generateAPIPodStatus on phases: a pod never
// leaves a terminal phase. A non-terminal phase gives way to the terminal
// one published before, or else to the pod's own (the API's); and the
// API's terminal phase always wins (its "illegal phase transition").
func keptPhase(in Input, phase v1.PodPhase) v1.PodPhase {
	old, api := previous(in).Phase, in.Pod.Status.Phase
	if !terminal(phase) {
		switch {
		case terminal(old):
			phase = old
		case terminal(api):
			phase = api
		}
	}
	if terminal(api) && phase != api {
		phase = api
	}
	return phase
}

// keepReason is the kubelet's: while the phase stays what it was, so do
// the reason and message that came with it (an eviction's Evicted), the
// pod's own standing in for a previous status without them.
func keepReason(in Input, s *v1.PodStatus) {
	old := previous(in)
	if s.Phase != old.Phase {
		return
	}
	s.Reason, s.Message = old.Reason, old.Message
	if s.Reason == "" {
		s.Reason = in.Pod.Status.Reason
	}
	if s.Message == "" {
		s.Message = in.Pod.Status.Message
	}
}

// keepIPs is the kubelet's rule for a stopped pod's IPs (GenericPLEG
// getPodIPs, and SyncTerminatingPod's preserveDataFromBeforeStopping): the
// runtime reports none once the sandbox is stopped, so when it reports none
// and no sandbox of the pod is ready, the IPs published before stay.
func keepIPs(in Input, s *v1.PodStatus) {
	if len(s.PodIPs) > 0 || in.Runtime.AnySandboxReady() {
		return
	}
	old := previous(in)
	if len(old.PodIPs) == 0 {
		return
	}
	s.PodIPs = append([]v1.PodIP(nil), old.PodIPs...)
	s.PodIP = s.PodIPs[0].IP
}

// oldContainerStatus is the previous status of the container named name,
// nil when there is none.
func oldContainerStatus(in Input, name string, init bool) *v1.ContainerStatus {
	list := previous(in).ContainerStatuses
	if init {
		list = previous(in).InitContainerStatuses
	}
	for i := range list {
		if list[i].Name == name {
			return &list[i]
		}
	}
	return nil
}
