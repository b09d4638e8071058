package podstatus

import (
	"sort"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/resources"
)

// The kubelet's waiting reasons for a container not created yet that has
// no failed start to show (kubelet.ContainerCreating, PodInitializing):
// PodInitializing for every container of a pod with init containers,
// whatever its phase, else ContainerCreating.
const (
	ReasonContainerCreating = "ContainerCreating"
	ReasonPodInitializing   = "PodInitializing"
)

// Probes sets each container status's Started and Ready from the probe
// results, as the kubelet's prober does; *prober.Manager implements it.
type Probes interface {
	UpdatePodStatus(pod *v1.Pod, status *v1.PodStatus)
}

// Input is what a pod's API status is generated from.
type Input struct {
	// Pod is the desired pod. Its Status.Conditions are read for the
	// conditions its readiness gates name (set by others, as in the API).
	Pod *v1.Pod
	// Runtime is the runtime's view of the pod (nil: nothing created yet).
	Runtime *kc.PodStatus
	// Reasons are the containers' last failed starts, from a ReasonCache.
	Reasons map[string]Failure
	// Probes sets Started and Ready; nil: a container has started when it
	// runs and is ready when it has started (a pod without probes).
	Probes Probes
	// RuntimeName prefixes container IDs: "<name>://<id>", e.g. containerd.
	RuntimeName string
	// HostIPs are the node's IPs; a host-network pod's IPs are these too.
	HostIPs []string
	// Old is the status published before (Manager.PodStatus); nil: none,
	// and the pod's own Status stands in. A terminal phase, the reason of
	// an unchanged phase and a stopped pod's IPs are kept from it.
	Old *v1.PodStatus
	// Actuated, if set, is what each container was last given (for
	// in-place resize: *allocation.Manager's Actuated for the pod); it
	// fills the status resources its runtime does not report. Pod is then
	// the allocated pod.
	Actuated func(container string) (v1.ResourceRequirements, bool)
	// Terminal says the pod is being terminated for good (the kubelet's
	// podIsTerminal: deleted, evicted or done): once its containers all
	// stopped, a pod of the API is Succeeded or Failed, not Running
	// because a restartPolicy would restart them.
	Terminal bool
}

// Generate is the kubelet's generateAPIPodStatus for what a node knows: the
// containers' statuses, ephemeral ones included (state, last termination, restart count, image ID,
// waiting reasons of failed starts, Started and Ready), the phase
// (getPhase), the conditions, the pod and host IPs, and the QoS class. It
// reads nothing but its input. Times that depend on what was published
// before (StartTime, each condition's LastTransitionTime) are the status
// manager's: see Manager.
func Generate(in Input) v1.PodStatus {
	pod := in.Pod
	out := v1.PodStatus{QOSClass: resources.ComputePodQOS(pod)}
	for i, ip := range in.HostIPs {
		if i == 0 {
			out.HostIP = ip
		}
		out.HostIPs = append(out.HostIPs, v1.HostIP{IP: ip})
	}
	var ips []string
	if in.Runtime != nil {
		ips = in.Runtime.IPs
	}
	if pod.Spec.HostNetwork {
		ips = in.HostIPs
	}
	for i, ip := range ips {
		if i == 0 {
			out.PodIP = ip
		}
		out.PodIPs = append(out.PodIPs, v1.PodIP{IP: ip})
	}
	out.InitContainerStatuses = containerStatuses(in, pod.Spec.InitContainers, true)
	out.ContainerStatuses = containerStatuses(in, pod.Spec.Containers, false)
	out.EphemeralContainerStatuses = ephemeralStatuses(in)
	started := anyRegularContainerStarted(pod, in.Runtime)
	if in.Probes != nil {
		in.Probes.UpdatePodStatus(pod, &out)
	} else {
		defaultProbes(pod, &out)
	}
	// Probes first: the phase reads a restartable init container's Started
	// (pending until its startup probe succeeds).
	out.Phase = keptPhase(in, phase(pod, &out, started, in.Terminal))
	keepReason(in, &out)
	keepIPs(in, &out)
	out.Conditions = Conditions(pod, &out, sandboxReady(in.Runtime), started)
	return out
}

// containerStatuses is the kubelet's convertToAPIContainerStatuses.
func containerStatuses(in Input, specs []v1.Container, init bool) []v1.ContainerStatus {
	if len(specs) == 0 {
		return nil
	}
	// The kubelet's rule reads the pod, not the container: init containers
	// too wait in PodInitializing (kubectl's "Init:0/2").
	waiting := ReasonContainerCreating
	if len(in.Pod.Spec.InitContainers) > 0 {
		waiting = ReasonPodInitializing
	}
	out := make([]v1.ContainerStatus, 0, len(specs))
	for i := range specs {
		c := &specs[i]
		cur, prev := newestTwo(in.Runtime, c.Name)
		s := v1.ContainerStatus{Name: c.Name, Image: c.Image}
		if cur == nil {
			s.State.Waiting = &v1.ContainerStateWaiting{Reason: waiting}
		} else {
			s.ContainerID = containerID(in.RuntimeName, cur.ID)
			s.ImageID = cur.ImageRef
			s.RestartCount = int32(cur.RestartCount)
			s.State = apiState(cur, in.RuntimeName)
			if prev != nil && prev.State == kc.ContainerStateExited {
				s.LastTerminationState = apiState(prev, in.RuntimeName)
			}
		}
		var act *v1.ResourceRequirements
		if in.Actuated != nil {
			if r, ok := in.Actuated(c.Name); ok {
				act = &r
			}
		}
		s.Resources = statusResources(c, cur, s.ContainerID, act, oldContainerStatus(in, c.Name, init))
		s.AllocatedResources = c.Resources.Requests
		// A container the next sync will (re)start shows why its last
		// start failed, as the kubelet's reason cache makes it.
		if f, ok := in.Reasons[c.Name]; ok && willStart(in.Pod, c, cur, init) {
			if s.State.Terminated != nil {
				s.LastTerminationState = s.State
			}
			s.State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: f.Reason, Message: f.Message}}
		}
		out = append(out, s)
	}
	return out
}

// ephemeralStatuses is convertToAPIContainerStatuses for the ephemeral
// containers (kubectl debug), sorted by name as the kubelet sorts them.
// Nothing else reads them: they never count toward the phase or
// readiness, and the prober leaves them unready.
func ephemeralStatuses(in Input) []v1.ContainerStatus {
	eph := in.Pod.Spec.EphemeralContainers
	if len(eph) == 0 {
		return nil
	}
	specs := make([]v1.Container, len(eph))
	for i := range eph {
		specs[i] = v1.Container(eph[i].EphemeralContainerCommon)
	}
	out := containerStatuses(in, specs, false)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func containerID(runtimeName, id string) string {
	if runtimeName == "" {
		runtimeName = "cri"
	}
	return runtimeName + "://" + id
}

// newestTwo returns the newest and the second newest status of the
// container named name (statuses are newest first).
func newestTwo(st *kc.PodStatus, name string) (cur, prev *kc.ContainerStatus) {
	if st == nil {
		return nil, nil
	}
	for _, cs := range st.ContainerStatuses {
		if cs.Name != name {
			continue
		}
		if cur == nil {
			cur = cs
			continue
		}
		return cur, cs
	}
	return cur, nil
}

func apiState(cs *kc.ContainerStatus, runtimeName string) v1.ContainerState {
	switch cs.State {
	case kc.ContainerStateRunning:
		return v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(cs.StartedAt)}}
	case kc.ContainerStateExited:
		return v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: int32(cs.ExitCode),
			Reason: cs.Reason, Message: cs.Message, StartedAt: metav1.NewTime(cs.StartedAt),
			FinishedAt: metav1.NewTime(cs.FinishedAt), ContainerID: containerID(runtimeName, cs.ID)}}
	}
	// Created, or unknown: waiting to run, with no reason (the kubelet's).
	return v1.ContainerState{Waiting: &v1.ContainerStateWaiting{}}
}

// willStart is the kubelet's ShouldContainerBeRestarted (for an init
// container: unless it completed): whether the next sync starts c.
func willStart(pod *v1.Pod, c *v1.Container, cur *kc.ContainerStatus, init bool) bool {
	if pod.DeletionTimestamp != nil {
		return false
	}
	if cur == nil {
		return true
	}
	if init && cur.State == kc.ContainerStateExited && cur.ExitCode == 0 && !restartable(c) {
		return false
	}
	switch cur.State {
	case kc.ContainerStateRunning:
		return false
	case kc.ContainerStateExited:
	default:
		return true
	}
	return kc.ShouldRestart(c, &pod.Spec, int32(cur.ExitCode))
}

// restartable: an init container with restartPolicy Always (a sidecar).
func restartable(c *v1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
}

// defaultProbes is the prober's answer for a pod without probes: running
// containers and sidecars are started and ready; a regular init container
// is ready only once it exited 0 (the kubelet's UpdatePodStatus).
func defaultProbes(pod *v1.Pod, s *v1.PodStatus) {
	for i := range s.ContainerStatuses {
		c := &s.ContainerStatuses[i]
		running := c.State.Running != nil
		c.Started, c.Ready = &running, running
	}
	for i := range s.InitContainerStatuses {
		c := &s.InitContainerStatuses[i]
		running := c.State.Running != nil
		c.Started = &running
		if spec := kc.FindContainer(pod, c.Name); spec != nil && restartable(spec) {
			c.Ready = running
			continue
		}
		c.Ready = c.State.Terminated != nil && c.State.Terminated.ExitCode == 0
	}
}

// anyRegularContainerStarted is the kubelet's
// HasAnyActiveRegularContainerStarted: a regular container of the newest
// sandbox runs or has run, so the pod was initialized in it.
func anyRegularContainerStarted(pod *v1.Pod, st *kc.PodStatus) bool {
	if st == nil || len(st.SandboxStatuses) == 0 {
		return false
	}
	sandbox := st.SandboxStatuses[0].ID
	regular := make(map[string]bool, len(pod.Spec.Containers))
	for _, c := range pod.Spec.Containers {
		regular[c.Name] = true
	}
	for _, cs := range st.ContainerStatuses {
		if regular[cs.Name] && cs.SandboxID == sandbox &&
			(cs.State == kc.ContainerStateRunning || cs.State == kc.ContainerStateExited) {
			return true
		}
	}
	return false
}

func sandboxReady(st *kc.PodStatus) bool {
	return st != nil && len(st.SandboxStatuses) > 0 && st.SandboxStatuses[0].Ready()
}
