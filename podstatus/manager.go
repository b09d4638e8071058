package podstatus

import (
	"cmp"
	"sort"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/nodekit-dev/nodekit/resources"
)

// Manager is the node's record of the statuses it has published, the
// local half of the kubelet's status manager (an APIWriter writes them to an
// API server). It is safe for concurrent use.
type Manager struct {
	clock clock.PassiveClock
	mu    sync.Mutex
	pods  map[types.UID]*entry
	// For an APIWriter: each pod's status version (the seq of its last
	// change) and a signal that something is to be written.
	versions map[types.UID]uint64
	seq      uint64
	changed  chan struct{}
}

// NewManager returns an empty Manager reading the time from clk.
func NewManager(clk clock.PassiveClock) *Manager {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Manager{clock: clk, pods: map[types.UID]*entry{}, versions: map[types.UID]uint64{},
		changed: make(chan struct{}, 1)}
}

// SetPodStatus publishes status as pod's, as the kubelet's status manager
// does: StartTime is that of the first status published (now, then), each
// condition's LastTransitionTime is kept while its status stays the same
// and is now when it changes, a terminal phase (Succeeded, Failed)
// never changes back, and ObservedGeneration is pod.Generation but never
// lower than before. Like the kubelet's, it keeps the status normalized
// (normalizeStatus): times to the second, as the API server has them,
// termination messages within MaxTerminationMessageBytes, container
// statuses sorted. Like the kubelet's, it refuses a status in which a
// container that may not run again is no longer terminated
// (CheckContainerStateTransition against the last status published, or
// the pod's own), keeping the one before. It reports whether the status
// differs from the last one published. The Manager keeps the rest of
// status as given, without a deep copy (the status is most of what it
// holds per pod): the caller must not modify it afterwards. It copies only
// what it changes.
func (m *Manager) SetPodStatus(pod *v1.Pod, status v1.PodStatus) (changed bool) {
	now := second(metav1.NewTime(m.clock.Now()))
	normalize(pod, &status)
	m.mu.Lock()
	defer m.mu.Unlock()
	var old *v1.PodStatus
	prev := m.pods[pod.UID]
	if prev != nil {
		old = &prev.status
	}
	if before := cmp.Or(old, &pod.Status); CheckContainerStateTransition(pod, before, &status) != nil {
		return false // the kubelet's "Status update on pod aborted"
	}
	switch {
	case old != nil && old.StartTime != nil:
		status.StartTime = old.StartTime
	case status.StartTime == nil:
		status.StartTime = &now
	}
	if old != nil && terminal(old.Phase) && status.Phase != old.Phase {
		status.Phase = old.Phase
	}
	// The generation of the spec this status was made from, never going
	// back (a sync of an older copy of the pod), as the kubelet's status
	// manager sets it.
	status.ObservedGeneration = pod.Generation
	if old != nil && old.ObservedGeneration > status.ObservedGeneration {
		status.ObservedGeneration = old.ObservedGeneration
	}
	for i := range status.Conditions {
		c := &status.Conditions[i]
		if old != nil {
			if prev := find(old.Conditions, c.Type); prev != nil && prev.Status == c.Status {
				c.LastTransitionTime = prev.LastTransitionTime
				continue
			}
		}
		c.LastTransitionTime = now
	}
	changed = old == nil || !apiequality.Semantic.DeepEqual(*old, status)
	switch {
	case changed:
		e := &entry{pod: pod, status: status, changedAt: m.clock.Now()}
		e.unwritten = e.changedAt
		if prev != nil && !prev.unwritten.IsZero() {
			e.unwritten = prev.unwritten
		}
		m.pods[pod.UID] = e
	case prev.pod != pod:
		// The same status kept, not the equal new one: it may be the one
		// held in the pod (ReplacePod).
		m.pods[pod.UID] = &entry{pod: pod, status: prev.status, changedAt: prev.changedAt, unwritten: prev.unwritten}
	}
	if changed {
		m.seq++
		m.versions[pod.UID] = m.seq
	}
	// A deletion request may let an APIWriter delete the pod, status unchanged.
	if changed || (pod.DeletionTimestamp != nil && prev != nil && prev.pod.DeletionTimestamp == nil) {
		select {
		case m.changed <- struct{}{}:
		default: // already signalled
		}
	}
	return changed
}

// ReplacePod holds pod, a newer object of a pod with a status here that
// differs only in its API status (a RECONCILE from its source), instead of
// the older one. When the API status is the one published (it came back
// from the API server), the Manager holds that one too, not a copy of its
// own: a node's statuses are then kept once, in its pods.
func (m *Manager) ReplacePod(pod *v1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.pods[pod.UID]
	if e == nil {
		return
	}
	// A new entry: an APIWriter may be reading the old one's status.
	ne := &entry{pod: pod, status: e.status, changedAt: e.changedAt, unwritten: e.unwritten}
	if apiequality.Semantic.DeepEqual(pod.Status, e.status) {
		ne.status, ne.inPod = pod.Status, true
	}
	m.pods[pod.UID] = ne
}

// PodStatus returns the status last published for the pod uid.
func (m *Manager) PodStatus(uid types.UID) (v1.PodStatus, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.pods[uid]
	if e == nil {
		return v1.PodStatus{}, false
	}
	return *e.status.DeepCopy(), true
}

// Pods returns every pod with its published status, by namespace and name.
func (m *Manager) Pods() []v1.Pod {
	m.mu.Lock()
	out := make([]v1.Pod, 0, len(m.pods))
	for _, e := range m.pods {
		p := *e.pod
		p.Status = e.status
		out = append(out, p)
	}
	m.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// RemovePod forgets the pod's status.
func (m *Manager) RemovePod(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.pods, uid)
	delete(m.versions, uid)
}

// RemoveOrphans forgets the statuses of pods keep does not have (the
// kubelet's RemoveOrphanedStatuses): a pod whose API object went while it
// was still terminating publishes its final status after the source last
// spoke of it, so no RemovePod would ever come.
func (m *Manager) RemoveOrphans(keep map[types.UID]bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for uid := range m.pods {
		if !keep[uid] {
			delete(m.pods, uid)
			delete(m.versions, uid)
		}
	}
}

// entry is a pod (shared: pods are never modified once handed around, the
// sources' and workers' rule) and the status published for it, the
// Manager's own: no copy of the pod per status.
type entry struct {
	pod    *v1.Pod
	status v1.PodStatus
	inPod  bool // status is pod's: the API has it, an APIWriter need not compare
	// When status was published, and when the first change an APIWriter
	// has not written yet was (zero: none); see written.
	changedAt, unwritten time.Time
}

// versioned is a published pod, its status (both shared: not to be
// modified), the version of the status and whether it is the pod's.
type versioned struct {
	pod     *v1.Pod
	status  *v1.PodStatus
	version uint64
	inPod   bool
}

// published appends every pod with its status version to dst.
func (m *Manager) published(dst []versioned) []versioned {
	m.mu.Lock()
	defer m.mu.Unlock()
	for uid, e := range m.pods {
		dst = append(dst, versioned{pod: e.pod, status: &e.status, version: m.versions[uid], inPod: e.inPod})
	}
	return dst
}

// written tells the Manager that uid's status of version is in the API
// server, and returns how long ago the first change not written before
// was published (false: none was pending). A newer change stays pending,
// from its own time: the times of changes in between are not kept.
func (m *Manager) written(uid types.UID, version uint64) (time.Duration, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.pods[uid]
	if e == nil || e.unwritten.IsZero() {
		return 0, false
	}
	took := m.clock.Since(e.unwritten)
	e.unwritten = time.Time{}
	if m.versions[uid] > version {
		e.unwritten = e.changedAt
	}
	return took, true
}

// newer is uid's published status if its version is above version.
func (m *Manager) newer(uid types.UID, version uint64) (versioned, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.pods[uid]
	if e == nil || m.versions[uid] <= version {
		return versioned{}, false
	}
	return versioned{pod: e.pod, status: &e.status, version: m.versions[uid], inPod: e.inPod}, true
}

func terminal(p v1.PodPhase) bool { return p == v1.PodSucceeded || p == v1.PodFailed }

// PodsOf returns each of pods with its published status, in their order;
// a pod with none yet is Pending (admitted, not yet synced), so a listing
// never shows a known pod without a phase.
func (m *Manager) PodsOf(pods []*v1.Pod) []v1.Pod {
	out := make([]v1.Pod, 0, len(pods))
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, pod := range pods {
		p := *pod
		if published := m.pods[pod.UID]; published != nil {
			p.Status = published.status
		} else {
			p.Status = v1.PodStatus{Phase: v1.PodPending, QOSClass: resources.ComputePodQOS(pod)}
		}
		out = append(out, p)
	}
	return out
}
