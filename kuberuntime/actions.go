package kuberuntime

import (
	"fmt"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// KillReason says why a running container is killed.
type KillReason string

// Kill reasons, as the kubelet reports them.
const (
	KillReasonSpecChanged    KillReason = "SpecChanged"
	KillReasonLivenessProbe  KillReason = "LivenessProbe"
	KillReasonStartupProbe   KillReason = "StartupProbe"
	KillReasonUnknownState   KillReason = "Unknown"
	KillReasonPodTerminating KillReason = "PodTerminating"
)

// ContainerToKill is a running container SyncPod will stop.
type ContainerToKill struct {
	Name      string
	Container *v1.Container
	Reason    KillReason
	Message   string
}

// PodActions is what SyncPod must do to bring a pod's containers in line
// with its spec. It is computed by ComputePodActions, a pure function.
type PodActions struct {
	// KillPod stops every container and the sandbox first.
	KillPod bool
	// CreateSandbox creates a new sandbox with Attempt.
	CreateSandbox bool
	// SandboxID is the current sandbox (empty when none).
	SandboxID string
	Attempt   uint32
	// InitContainersToStart are indexes into pod.Spec.InitContainers, in
	// spec order: the next init container to run and the sidecars
	// (restartable init containers) to (re)start. They start before any
	// regular container.
	InitContainersToStart []int
	// ContainersToStart are indexes into pod.Spec.Containers.
	ContainersToStart []int
	// EphemeralContainersToStart are indexes into
	// pod.Spec.EphemeralContainers (kubectl debug): those with no status
	// yet. They start first, even while initialization goes on, and are
	// never restarted nor started along with a new sandbox.
	EphemeralContainersToStart []int
	// ContainersToKill maps container IDs to why they are killed.
	ContainersToKill map[string]ContainerToKill
}

// ProbeResults tells ComputePodActions what the prober's results managers
// know about running containers: which failed their liveness or startup
// probe, and which passed their startup probe (a sidecar with a startup
// probe holds back the next init container until it has).
type ProbeResults interface {
	LivenessFailed(containerID string) bool
	StartupFailed(containerID string) bool
	StartupSucceeded(containerID string) bool
}

// noProbeResults stands for a node without a prober: no probe ever fails,
// and a startup probe counts as passed, so sidecars do not wait forever.
type noProbeResults struct{}

func (noProbeResults) LivenessFailed(string) bool   { return false }
func (noProbeResults) StartupFailed(string) bool    { return false }
func (noProbeResults) StartupSucceeded(string) bool { return true }

// ComputePodActions is the kubelet's computePodActions: given the desired pod
// and what the runtime reports, decide whether to (re)create the sandbox,
// which ephemeral containers, init containers and sidecars start, which
// containers start and which are killed. It does no I/O; restart back-off is applied later, when
// starting.
func ComputePodActions(pod *v1.Pod, status *kc.PodStatus, probes ProbeResults) PodActions {
	if probes == nil {
		probes = noProbeResults{}
	}
	if status == nil {
		status = &kc.PodStatus{}
	}
	create, attempt, sandboxID := sandboxChanged(pod, status)
	a := PodActions{
		KillPod:          create,
		CreateSandbox:    create,
		SandboxID:        sandboxID,
		Attempt:          attempt,
		ContainersToKill: map[string]ContainerToKill{},
	}
	restartOnFailure := pod.Spec.RestartPolicy != v1.RestartPolicyNever

	if create {
		// A pod that must not restart and already ran gets no new sandbox.
		if !restartOnFailure && attempt != 0 && len(status.ContainerStatuses) != 0 {
			a.CreateSandbox = false
			return a
		}
		var toStart []int
		for i := range pod.Spec.Containers {
			c := &pod.Spec.Containers[i]
			runOnce := pod.Spec.RestartPolicy == v1.RestartPolicyOnFailure
			if c.RestartPolicy != nil { // container restart rules: its own policy
				runOnce = *c.RestartPolicy == v1.ContainerRestartPolicyOnFailure
			}
			if runOnce && containerSucceeded(c, status) {
				continue
			}
			toStart = append(toStart, i)
		}
		// Nothing to start and initialization done (a regular container
		// was created): no new sandbox.
		if len(toStart) == 0 && anyRegularContainerCreated(pod, status) {
			a.CreateSandbox = false
			return a
		}
		if len(pod.Spec.InitContainers) != 0 {
			a.InitContainersToStart = []int{0}
			return a
		}
		a.ContainersToStart = toStart
		return a
	}

	// Ephemeral containers start whatever the initialization's progress:
	// they are how one debugs a pod stuck in it. One that ran, whatever
	// its end, is never started again.
	for i := range pod.Spec.EphemeralContainers {
		if status.FindContainerStatusByName(pod.Spec.EphemeralContainers[i].Name) == nil {
			a.EphemeralContainersToStart = append(a.EphemeralContainersToStart, i)
		}
	}

	if initialized := initContainerActions(pod, status, probes, &a); a.KillPod || !initialized {
		return a // initialization failed or goes on: regular containers wait
	}

	keep := 0
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		cs := status.FindContainerStatusByName(c.Name)
		if cs == nil || cs.State != kc.ContainerStateRunning {
			if ShouldContainerBeRestarted(c, pod, status) {
				a.ContainersToStart = append(a.ContainersToStart, i)
				if cs != nil && cs.State == kc.ContainerStateUnknown {
					a.ContainersToKill[cs.ID] = ContainerToKill{Name: c.Name, Container: c, Reason: KillReasonUnknownState,
						Message: fmt.Sprintf("Container is in %q state, try killing it before restart", cs.State)}
				}
			}
			continue
		}
		var (
			reason  KillReason
			message string
			restart = restartOnFailure
		)
		switch {
		case cs.Hash != kc.HashContainer(c):
			reason, message = KillReasonSpecChanged, fmt.Sprintf("Container %s definition changed", c.Name)
			restart = true // the spec changed: restart whatever the policy
		case probes.LivenessFailed(cs.ID):
			reason, message = KillReasonLivenessProbe, fmt.Sprintf("Container %s failed liveness probe", c.Name)
		case probes.StartupFailed(cs.ID):
			reason, message = KillReasonStartupProbe, fmt.Sprintf("Container %s failed startup probe", c.Name)
		default:
			keep++
			continue
		}
		if restart {
			message += ", will be restarted"
			a.ContainersToStart = append(a.ContainersToStart, i)
		}
		a.ContainersToKill[cs.ID] = ContainerToKill{Name: c.Name, Container: c, Reason: reason, Message: message}
	}
	if keep == 0 && len(a.ContainersToStart) == 0 {
		// Every regular container is done for good: the pod is killed,
		// sidecars included, and they are not restarted to keep it alive.
		a.KillPod = true
		a.InitContainersToStart = nil
	}
	return a
}

// ShouldContainerBeRestarted is the kubelet's rule for a container that is
// not running: start it if it never ran, is in an unknown or created state,
// or exited and its restart rules, its restartPolicy or else the pod's
// allow (kubecontainer.ShouldRestart).
func ShouldContainerBeRestarted(c *v1.Container, pod *v1.Pod, status *kc.PodStatus) bool {
	if pod.DeletionTimestamp != nil {
		return false
	}
	cs := status.FindContainerStatusByName(c.Name)
	if cs == nil {
		return true
	}
	switch cs.State {
	case kc.ContainerStateRunning:
		return false
	case kc.ContainerStateUnknown, kc.ContainerStateCreated:
		return true
	}
	return kc.ShouldRestart(c, &pod.Spec, int32(cs.ExitCode))
}

// sandboxChanged reports whether a new sandbox is needed: none exists, more
// than one is ready, the newest is not ready, its network namespace mode no
// longer matches the pod, or a pod-network sandbox lost its IP.
func sandboxChanged(pod *v1.Pod, status *kc.PodStatus) (bool, uint32, string) {
	if len(status.SandboxStatuses) == 0 {
		return true, 0, ""
	}
	ready := 0
	for _, s := range status.SandboxStatuses {
		if s.Ready() {
			ready++
		}
	}
	newest := status.SandboxStatuses[0]
	next := newest.Attempt + 1
	switch {
	case ready > 1, !newest.Ready():
		return true, next, newest.ID
	case newest.HostNetwork != pod.Spec.HostNetwork:
		return true, next, ""
	case !pod.Spec.HostNetwork && len(newest.IPs) == 0:
		return true, next, newest.ID
	}
	return false, newest.Attempt, newest.ID
}

func containerSucceeded(c *v1.Container, status *kc.PodStatus) bool {
	cs := status.FindContainerStatusByName(c.Name)
	return cs != nil && cs.State == kc.ContainerStateExited && cs.ExitCode == 0
}

func initContainerFailed(cs *kc.ContainerStatus) bool {
	return cs.State == kc.ContainerStateUnknown || (cs.State == kc.ContainerStateExited && cs.ExitCode != 0)
}

func networkNamespaceMode(pod *v1.Pod) runtimeapi.NamespaceMode {
	if pod.Spec.HostNetwork {
		return runtimeapi.NamespaceMode_NODE
	}
	return runtimeapi.NamespaceMode_POD
}
