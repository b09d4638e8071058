package main

import (
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/resources"
	"github.com/nodekit-dev/nodekit/runtime"
)

// apiStatus computes the pod's API status from the runtime's view and the
// last sync's failures, as the kubelet's generateAPIPodStatus does for what
// a standalone node knows: container states with restart counts and last
// termination, waiting reasons from failed sync steps, phase, conditions,
// IPs and QoS class. Ready and Started are filled in by the prober after.
func apiStatus(pod *v1.Pod, st *kc.PodStatus, lastSync *runtime.SyncResult, runtimePrefix, hostIP string, started time.Time) v1.PodStatus {
	out := v1.PodStatus{HostIP: hostIP, QOSClass: resources.ComputePodQOS(pod)}
	if hostIP != "" {
		out.HostIPs = []v1.HostIP{{IP: hostIP}}
	}
	if !started.IsZero() {
		t := metav1.NewTime(started)
		out.StartTime = &t
	}
	ips := st.IPs
	if pod.Spec.HostNetwork && hostIP != "" {
		ips = []string{hostIP}
	}
	for i, ip := range ips {
		if i == 0 {
			out.PodIP = ip
		}
		out.PodIPs = append(out.PodIPs, v1.PodIP{IP: ip})
	}
	failures := map[string]runtime.SyncStep{}
	if lastSync != nil {
		for _, s := range lastSync.Steps {
			if s.Err != nil {
				failures[s.Target] = s
			}
		}
	}
	for _, c := range pod.Spec.InitContainers {
		out.InitContainerStatuses = append(out.InitContainerStatuses, containerStatus(&c, st, failures, runtimePrefix))
	}
	for _, c := range pod.Spec.Containers {
		out.ContainerStatuses = append(out.ContainerStatuses, containerStatus(&c, st, failures, runtimePrefix))
	}
	out.Phase = phase(pod, &out)
	sandboxReady := len(st.SandboxStatuses) > 0 && st.SandboxStatuses[0].State == runtimeapi.PodSandboxState_SANDBOX_READY
	out.Conditions = []v1.PodCondition{
		condition(v1.PodScheduled, true, ""),
		condition(v1.PodReadyToStartContainers, sandboxReady, ""),
		condition(v1.PodInitialized, initialized(&out), "ContainersNotInitialized"),
	}
	return out
}

// finishConditions adds ContainersReady and Ready once the prober has set
// each container's Ready.
func finishConditions(status *v1.PodStatus) {
	ready := len(status.ContainerStatuses) > 0
	for _, c := range status.ContainerStatuses {
		ready = ready && c.Ready
	}
	status.Conditions = append(status.Conditions,
		condition(v1.ContainersReady, ready, "ContainersNotReady"),
		condition(v1.PodReady, ready, "ContainersNotReady"))
}

func condition(t v1.PodConditionType, ok bool, reason string) v1.PodCondition {
	c := v1.PodCondition{Type: t, Status: v1.ConditionTrue}
	if !ok {
		c.Status, c.Reason = v1.ConditionFalse, reason
	}
	return c
}

func containerStatus(c *v1.Container, st *kc.PodStatus, failures map[string]runtime.SyncStep, prefix string) v1.ContainerStatus {
	out := v1.ContainerStatus{Name: c.Name, Image: c.Image}
	var cur, prev *kc.ContainerStatus
	for _, cs := range st.ContainerStatuses {
		if cs.Name != c.Name {
			continue
		}
		if cur == nil {
			cur = cs
		} else {
			prev = cs
			break
		}
	}
	if prev != nil && prev.State == kc.ContainerStateExited {
		out.LastTerminationState = v1.ContainerState{Terminated: terminated(prev, prefix)}
	}
	if cur != nil {
		out.ContainerID = prefix + cur.ID
		out.ImageID = cur.ImageRef
		out.RestartCount = int32(cur.RestartCount)
	}
	switch {
	case cur != nil && cur.State == kc.ContainerStateRunning:
		out.State.Running = &v1.ContainerStateRunning{StartedAt: metav1.NewTime(cur.StartedAt)}
	case failures[c.Name].Err != nil:
		f := failures[c.Name]
		out.State.Waiting = &v1.ContainerStateWaiting{Reason: f.Reason(), Message: f.Message}
		if cur != nil && cur.State == kc.ContainerStateExited {
			out.LastTerminationState = v1.ContainerState{Terminated: terminated(cur, prefix)}
		}
	case cur != nil && cur.State == kc.ContainerStateExited:
		out.State.Terminated = terminated(cur, prefix)
	default:
		out.State.Waiting = &v1.ContainerStateWaiting{Reason: "ContainerCreating"}
	}
	return out
}

func terminated(cs *kc.ContainerStatus, prefix string) *v1.ContainerStateTerminated {
	return &v1.ContainerStateTerminated{ExitCode: int32(cs.ExitCode), Reason: cs.Reason, Message: cs.Message,
		StartedAt: metav1.NewTime(cs.StartedAt), FinishedAt: metav1.NewTime(cs.FinishedAt), ContainerID: prefix + cs.ID}
}

func initialized(s *v1.PodStatus) bool {
	for _, c := range s.InitContainerStatuses {
		if c.State.Terminated == nil || c.State.Terminated.ExitCode != 0 {
			return false
		}
	}
	return true
}

// phase is the kubelet's getPhase for regular containers: Pending while
// initializing or anything waits for its first start; Running while any
// runs (or, under Always, after they stopped); Succeeded when all exited 0;
// Failed when they stopped and Never restarts them.
func phase(pod *v1.Pod, s *v1.PodStatus) v1.PodPhase {
	if !initialized(s) {
		for _, c := range s.InitContainerStatuses {
			if t := c.State.Terminated; t != nil && t.ExitCode != 0 && pod.Spec.RestartPolicy == v1.RestartPolicyNever {
				return v1.PodFailed
			}
		}
		return v1.PodPending
	}
	var running, waiting, stopped, succeeded int
	for _, c := range s.ContainerStatuses {
		switch {
		case c.State.Running != nil:
			running++
		case c.State.Terminated != nil:
			stopped++
			if c.State.Terminated.ExitCode == 0 {
				succeeded++
			}
		case c.LastTerminationState.Terminated != nil:
			stopped++ // waiting to restart
		default:
			waiting++
		}
	}
	switch {
	case waiting > 0:
		return v1.PodPending
	case running > 0:
		return v1.PodRunning
	case stopped > 0:
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
