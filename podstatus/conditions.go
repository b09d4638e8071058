package podstatus

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// The kubelet's condition reasons (pkg/kubelet/status).
const (
	ReasonUnknownContainerStatuses = "UnknownContainerStatuses"
	ReasonPodCompleted             = "PodCompleted"
	ReasonPodFailed                = "PodFailed"
	ReasonContainersNotReady       = "ContainersNotReady"
	ReasonContainersNotInitialized = "ContainersNotInitialized"
	ReasonReadinessGatesNotReady   = "ReadinessGatesNotReady"
)

// Conditions are the pod's conditions in the kubelet's order:
// PodReadyToStartContainers (the newest sandbox is ready), Initialized,
// Ready, ContainersReady, PodScheduled (a pod on a node was scheduled).
// s holds the container statuses with Ready and Started set and the phase.
// Each observes pod.Generation, as with the kubelet's
// PodObservedGenerationTracking (GA in v1.35).
func Conditions(pod *v1.Pod, s *v1.PodStatus, sandboxReady, initializedBefore bool) []v1.PodCondition {
	out := make([]v1.PodCondition, 2, 5)
	out[0] = condition(v1.PodReadyToStartContainers, sandboxReady, "", "")
	out[1] = Initialized(pod, s, initializedBefore)
	// As in the kubelet, a gate naming a condition of its own sees only
	// those generated before Ready.
	out = append(out, ready(pod, s, out), ContainersReady(pod, s),
		v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionTrue})
	for i := range out {
		out[i].ObservedGeneration = pod.Generation
	}
	return out
}

// Initialized is the kubelet's GeneratePodInitializedCondition.
func Initialized(pod *v1.Pod, s *v1.PodStatus, initializedBefore bool) v1.PodCondition {
	if len(pod.Spec.InitContainers) == 0 {
		return condition(v1.PodInitialized, true, "", "")
	}
	init := byName(s.InitContainerStatuses)
	var unknown, incomplete []string
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		cs, ok := init[c.Name]
		switch {
		case !ok:
			unknown = append(unknown, c.Name)
		case restartable(c):
			if cs.Started == nil || !*cs.Started {
				incomplete = append(incomplete, c.Name)
			}
		case cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 0:
			incomplete = append(incomplete, c.Name)
		}
	}
	if s.Phase == v1.PodSucceeded && len(unknown) == 0 {
		return condition(v1.PodInitialized, true, ReasonPodCompleted, "")
	}
	if initializedBefore {
		return condition(v1.PodInitialized, true, "", "")
	}
	if msg := unreadyMessage(unknown, "incomplete", incomplete); msg != "" {
		return condition(v1.PodInitialized, false, ReasonContainersNotInitialized, msg)
	}
	return condition(v1.PodInitialized, true, "", "")
}

// ContainersReady is the kubelet's GenerateContainersReadyCondition:
// every regular container and sidecar ready.
func ContainersReady(pod *v1.Pod, s *v1.PodStatus) v1.PodCondition {
	init, regular := byName(s.InitContainerStatuses), byName(s.ContainerStatuses)
	var unknown, unready []string
	check := func(c *v1.Container, statuses map[string]*v1.ContainerStatus) {
		switch cs, ok := statuses[c.Name]; {
		case !ok:
			unknown = append(unknown, c.Name)
		case !cs.Ready:
			unready = append(unready, c.Name)
		}
	}
	for i := range pod.Spec.InitContainers {
		if restartable(&pod.Spec.InitContainers[i]) {
			check(&pod.Spec.InitContainers[i], init)
		}
	}
	for i := range pod.Spec.Containers {
		check(&pod.Spec.Containers[i], regular)
	}
	switch {
	case s.Phase == v1.PodSucceeded && len(unknown) == 0:
		return condition(v1.ContainersReady, false, ReasonPodCompleted, "")
	case s.Phase == v1.PodFailed:
		return condition(v1.ContainersReady, false, ReasonPodFailed, "")
	}
	if msg := unreadyMessage(unknown, "unready", unready); msg != "" {
		return condition(v1.ContainersReady, false, ReasonContainersNotReady, msg)
	}
	return condition(v1.ContainersReady, true, "", "")
}

// Ready is the kubelet's GeneratePodReadyCondition: ContainersReady, then
// every readiness gate's condition True. A gate's condition is another
// writer's from pod.Status.Conditions (a controller sets it in the API);
// a gate naming one of the kubelet's own is looked up in s.Conditions.
func Ready(pod *v1.Pod, s *v1.PodStatus) v1.PodCondition {
	return ready(pod, s, s.Conditions)
}

// ready is Ready with the kubelet's conditions generated before it: in
// the kubelet's generateAPIPodStatus a gate naming Initialized reads the
// new one, and one naming ContainersReady (generated after) finds none.
func ready(pod *v1.Pod, s *v1.PodStatus, generated []v1.PodCondition) v1.PodCondition {
	cr := ContainersReady(pod, s)
	if cr.Status != v1.ConditionTrue {
		return condition(v1.PodReady, false, cr.Reason, cr.Message)
	}
	var msgs []string
	for _, gate := range pod.Spec.ReadinessGates {
		c := find(pod.Status.Conditions, gate.ConditionType)
		if ownedByKubelet(gate.ConditionType) {
			c = find(generated, gate.ConditionType)
		}
		switch {
		case c == nil:
			msgs = append(msgs, fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.", gate.ConditionType))
		case c.Status != v1.ConditionTrue:
			msgs = append(msgs, fmt.Sprintf("the status of pod readiness gate %q is not \"True\", but %v", gate.ConditionType, c.Status))
		}
	}
	if len(msgs) > 0 {
		return condition(v1.PodReady, false, ReasonReadinessGatesNotReady, strings.Join(msgs, ", "))
	}
	return condition(v1.PodReady, true, "", "")
}

// ReadyStale is the kubelet's NeedToReconcilePodReadiness: pod has
// readiness gates and the Ready condition in its status differs, in status
// or message, from the one its status now makes, because a gate's
// condition changed in the API. Such a status-only change needs a sync at
// once (HandlePodReconcile), not at the next resync. A status without
// Ready yet is not stale: the pod's first sync writes one.
func ReadyStale(pod *v1.Pod) bool {
	if len(pod.Spec.ReadinessGates) == 0 {
		return false
	}
	cur := find(pod.Status.Conditions, v1.PodReady)
	if cur == nil {
		return false
	}
	want := Ready(pod, &pod.Status)
	return cur.Status != want.Status || cur.Message != want.Message
}

// unreadyMessage is the kubelet's wording, e.g. "containers with unknown
// status: [a], containers with unready status: [b c]".
func unreadyMessage(unknown []string, kind string, names []string) string {
	var msgs []string
	if len(unknown) > 0 {
		msgs = append(msgs, fmt.Sprintf("containers with unknown status: %s", unknown))
	}
	if len(names) > 0 {
		msgs = append(msgs, fmt.Sprintf("containers with %s status: %s", kind, names))
	}
	return strings.Join(msgs, ", ")
}

func condition(t v1.PodConditionType, ok bool, reason, message string) v1.PodCondition {
	c := v1.PodCondition{Type: t, Status: v1.ConditionFalse, Reason: reason, Message: message}
	if ok {
		c.Status = v1.ConditionTrue
	}
	return c
}

func find(conditions []v1.PodCondition, t v1.PodConditionType) *v1.PodCondition {
	for i := range conditions {
		if conditions[i].Type == t {
			return &conditions[i]
		}
	}
	return nil
}
