package podstatus

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// AfterBatch has Run call f after each batch, once its retry timer is set.
func AfterBatch(s *Syncer, f func(tried int, retry time.Time)) { s.afterBatch = f }

// HeldPod is the pod object m keeps with uid's status.
func HeldPod(m *Manager, uid types.UID) *v1.Pod {
	for _, v := range m.published(nil) {
		if v.pod.UID == uid {
			return v.pod
		}
	}
	return nil
}

// HeldStatus is the status m keeps for uid (not a copy).
func HeldStatus(m *Manager, uid types.UID) *v1.PodStatus {
	for _, v := range m.published(nil) {
		if v.pod.UID == uid {
			return v.status
		}
	}
	return nil
}
