package podsync

import (
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The kubelet's active deadline handler's reason and message
// (pkg/kubelet/active_deadline.go).
const (
	ReasonDeadlineExceeded  = "DeadlineExceeded"
	MessageDeadlineExceeded = "Pod was active on the node longer than the specified deadline"
)

// pastActiveDeadline is the kubelet's: the pod has
// spec.activeDeadlineSeconds and has been active that long since the
// StartTime of its published status (the API's, before any).
func (s *Syncer) pastActiveDeadline(pod *v1.Pod) bool {
	if pod.Spec.ActiveDeadlineSeconds == nil {
		return false
	}
	status, ok := s.cfg.Statuses.PodStatus(pod.UID)
	if !ok {
		status = pod.Status
	}
	return s.pastDeadlineSince(pod, status.StartTime)
}

func (s *Syncer) pastDeadlineSince(pod *v1.Pod, start *metav1.Time) bool {
	if pod.Spec.ActiveDeadlineSeconds == nil || start == nil || start.IsZero() {
		return false
	}
	return s.cfg.Clock.Since(start.Time) >= time.Duration(*pod.Spec.ActiveDeadlineSeconds)*time.Second
}

// deadlineExceeded is the status edit of the kubelet's generateAPIPodStatus
// whenever the active deadline handler says to evict (ShouldEvict):
// Failed, with its reason.
func deadlineExceeded(s *v1.PodStatus) {
	s.Phase, s.Reason, s.Message = v1.PodFailed, ReasonDeadlineExceeded, MessageDeadlineExceeded
}
