package podstartup

import (
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
)

// started is the kubelet's hasPodStartedSLO: every container is running,
// with its start time (the SLI's "all containers started").
func started(pod *v1.Pod) bool {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.State.Running == nil || cs.State.Running.StartedAt.IsZero() {
			return false
		}
	}
	return true
}

// isStateful is the SLI's stateful pod: one that mounts a volume other
// than a secret, configMap, downwardAPI, emptyDir or projected one.
func isStateful(pod *v1.Pod) bool {
	for _, v := range pod.Spec.Volumes {
		if v.Secret == nil && v.ConfigMap == nil && v.DownwardAPI == nil && v.EmptyDir == nil && v.Projected == nil {
			return true
		}
	}
	return false
}

// unschedulable: PodScheduled is False; such a pod is not "immediately
// schedulable" and the SLI leaves it out.
func unschedulable(pod *v1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse {
			return true
		}
	}
	return false
}

// pullingTime is the time covered by the pulls, overlaps counted once.
func pullingTime(pulls []pull) time.Duration {
	sorted := append([]pull(nil), pulls...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].start.Before(sorted[j].start) })
	var total time.Duration
	var end time.Time
	for _, p := range sorted {
		switch {
		case p.start.After(end) || end.IsZero():
			total += p.end.Sub(p.start)
			end = p.end
		case p.end.After(end):
			total += p.end.Sub(end)
			end = p.end
		}
	}
	return total
}

// klogRef is the pod as klog.KObj logs it.
func klogRef(pod *v1.Pod) string { return pod.Namespace + "/" + pod.Name }
