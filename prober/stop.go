package prober

import "k8s.io/apimachinery/pkg/types"

// StopLivenessAndStartup stops the pod's liveness and startup workers and
// keeps its readiness workers: the kubelet's StopLivenessAndStartup, which
// its SyncTerminatingPod calls before it kills the containers, so that no
// liveness failure restarts a container being stopped while readiness
// still tells endpoints the pod is going. RemovePod, once the containers
// are stopped, stops the rest.
func (m *Manager) StopLivenessAndStartup(uid types.UID) {
	m.mu.Lock()
	var ws []*worker
	for k, w := range m.workers {
		if k.uid == uid && (k.probeType == Liveness || k.probeType == Startup) {
			ws = append(ws, w)
		}
	}
	m.mu.Unlock()
	for _, w := range ws {
		m.stop(w)
	}
}
