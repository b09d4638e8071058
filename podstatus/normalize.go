package podstatus

import (
	"slices"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MaxTerminationMessageBytes is what all of a pod's containers' termination
// messages may hold together in its status (the kubelet's
// MaxPodTerminationMessageLogLength, 12 KiB), shared out evenly.
const MaxTerminationMessageBytes = 12 * 1024

// normalize is the kubelet's normalizeStatus, which its status manager
// applies to every status it keeps: times to the second (what the API
// server stores, so a status read back from it compares equal), each
// termination message cut to its share of MaxTerminationMessageBytes,
// container and ephemeral container statuses by name, init container
// statuses in spec order. It copies what it changes, never writing through
// status's pointers or into its slices' arrays: the caller may still share
// them.
func normalize(pod *v1.Pod, status *v1.PodStatus) {
	perContainer := MaxTerminationMessageBytes
	if n := len(pod.Spec.Containers) + len(pod.Spec.InitContainers); n > 0 {
		perContainer /= n
	}
	if status.StartTime != nil {
		t := second(*status.StartTime)
		status.StartTime = &t
	}
	status.Conditions = slices.Clone(status.Conditions)
	for i := range status.Conditions {
		c := &status.Conditions[i]
		c.LastProbeTime, c.LastTransitionTime = second(c.LastProbeTime), second(c.LastTransitionTime)
	}
	status.ContainerStatuses = normalizeContainers(status.ContainerStatuses, perContainer)
	status.InitContainerStatuses = normalizeContainers(status.InitContainerStatuses, perContainer)
	status.EphemeralContainerStatuses = normalizeContainers(status.EphemeralContainerStatuses, perContainer)
	byName := func(s []v1.ContainerStatus) {
		sort.SliceStable(s, func(i, j int) bool { return s[i].Name < s[j].Name })
	}
	byName(status.ContainerStatuses)
	byName(status.EphemeralContainerStatuses)
	if init := status.InitContainerStatuses; len(init) > 1 {
		order := make(map[string]int, len(pod.Spec.InitContainers))
		for i, c := range pod.Spec.InitContainers {
			order[c.Name] = i
		}
		sort.SliceStable(init, func(i, j int) bool { return order[init[i].Name] < order[init[j].Name] })
	}
}

func normalizeContainers(statuses []v1.ContainerStatus, maxMessage int) []v1.ContainerStatus {
	statuses = slices.Clone(statuses)
	for i := range statuses {
		normalizeState(&statuses[i].State, maxMessage)
		normalizeState(&statuses[i].LastTerminationState, maxMessage)
	}
	return statuses
}

func normalizeState(s *v1.ContainerState, maxMessage int) {
	if r := s.Running; r != nil {
		s.Running = &v1.ContainerStateRunning{StartedAt: second(r.StartedAt)}
	}
	if t := s.Terminated; t != nil {
		c := *t
		c.StartedAt, c.FinishedAt = second(t.StartedAt), second(t.FinishedAt)
		if len(c.Message) > maxMessage {
			c.Message = c.Message[:maxMessage]
		}
		s.Terminated = &c
	}
}

// second is t.Rfc3339Copy() without its format and parse (this runs for
// every time of every status published): t down to the second, in UTC.
func second(t metav1.Time) metav1.Time { return metav1.NewTime(t.Truncate(time.Second).UTC()) }
