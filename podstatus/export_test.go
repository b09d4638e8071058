package podstatus

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// AfterBatch has Run call f each time it is idle after planning (nothing
// queued, nothing being written), once its retry timer is set, with the
// writes finished since the last call.
func AfterBatch(s *APIWriter, f func(tried int, retry time.Time)) { s.afterBatch = f }

// AfterPlan has Run call f after each round it plans, with the writes
// then waiting for a writer.
func AfterPlan(s *APIWriter, f func(queued int)) { s.afterPlan = f }

// Reconciles is how many statuses s found overwritten in the API.
func Reconciles(s *APIWriter) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reconciles
}

// HeldPod is the pod object m keeps with uid's status.
func HeldPod(m *Manager, uid types.UID) *v1.Pod { return held(m, uid).pod }

// HeldStatus is the status m keeps for uid (not a copy).
func HeldStatus(m *Manager, uid types.UID) *v1.PodStatus { return held(m, uid).status }

func held(m *Manager, uid types.UID) versioned {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e := m.pods[uid]; e != nil {
		return versioned{pod: e.pod, status: &e.status}
	}
	return versioned{}
}
