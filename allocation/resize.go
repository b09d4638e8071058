package allocation

import (
	"encoding/json"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/nodekit-dev/nodekit/resources"
)

// HandleResize decides about pod, whose spec asks for resources other
// than its allocation, as the kubelet's handlePodResourcesResize: when
// the spec is the allocation again, a pending resize is dropped; when
// the resized pod fits beside the other active pods (as allocated), the
// spec becomes the allocation, checkpointed, and the resize is in
// progress (PodResizeInProgress, a ResizeStarted event); otherwise it is
// pending (PodResizePending, reason Infeasible when Fit says so, else
// Deferred, to be retried by RetryPending). It reports whether the
// allocation changed: the pod must then be synced.
func (m *Manager) HandleResize(pod *v1.Pod, active []*v1.Pod) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	allocated := m.handleResize(pod, active)
	if c := m.conditions[pod.UID]; c.pending != nil && c.pending.Reason == v1.PodReasonDeferred && !slices.Contains(m.pending, pod.UID) {
		m.pending = append(m.pending, pod.UID)
	}
	return allocated
}

func (m *Manager) handleResize(pod *v1.Pod, active []*v1.Pod) bool {
	if _, differs := m.allocatedPod(pod); !differs {
		m.setPending(pod.UID, nil)
		return false
	}
	others := make([]*v1.Pod, 0, len(active))
	for _, o := range active {
		if o.UID != pod.UID && m.allocated.has(o.UID) {
			a, _ := m.allocatedPod(o)
			others = append(others, a)
		}
	}
	fit, reason, message := m.cfg.Fit(pod, others)
	if !fit {
		if reason != v1.PodReasonInfeasible {
			reason = v1.PodReasonDeferred // as the kubelet: any other refusal waits
		}
		old := m.conditions[pod.UID].pending
		if old == nil || old.Reason != reason || old.ObservedGeneration != pod.Generation {
			event := EventResizeDeferred
			if reason == v1.PodReasonInfeasible {
				event = EventResizeInfeasible
			}
			m.event(pod, v1.EventTypeWarning, event, "Pod resize "+reason, message, pod.Generation)
		}
		m.setPending(pod.UID, m.condition(v1.PodResizePending, old, reason, message, pod.Generation))
		return false
	}
	if err := m.allocated.setPod(pod.UID, specResources(pod)); err != nil {
		m.cfg.Log.Error(err, "allocation checkpoint", "pod", klogName(pod))
		return false
	}
	m.setPending(pod.UID, nil)
	c := m.conditions[pod.UID]
	c.inProgress = m.condition(v1.PodResizeInProgress, nil, "", "", pod.Generation)
	m.conditions[pod.UID] = c
	m.event(pod, v1.EventTypeNormal, EventResizeStarted, "Pod resize started", "", pod.Generation)
	return true
}

func (m *Manager) setPending(uid types.UID, cond *v1.PodCondition) {
	c := m.conditions[uid]
	c.pending = cond
	m.conditions[uid] = c
	if cond == nil || cond.Reason != v1.PodReasonDeferred {
		m.pending = deleteUIDs(m.pending, func(u types.UID) bool { return u == uid })
	}
}

// RetryPending takes the deferred resizes again, as the kubelet's
// retryPendingResizes: those that do not ask for more go first, then by
// priority, then Guaranteed before Burstable, then the longest pending.
// pod looks up a pending pod (gone: forgotten); active lists the active
// pods. It returns the pods whose resize was allocated now, to be synced.
func (m *Manager) RetryPending(pod func(types.UID) (*v1.Pod, bool), active []*v1.Pod) []*v1.Pod {
	m.mu.Lock()
	defer m.mu.Unlock()
	pods := make([]*v1.Pod, 0, len(m.pending))
	for _, uid := range m.pending {
		if p, ok := pod(uid); ok {
			pods = append(pods, p)
		}
	}
	slices.SortStableFunc(pods, m.retryOrder)
	m.pending = m.pending[:0]
	var allocated []*v1.Pod
	for _, p := range pods {
		if m.handleResize(p, active) {
			allocated = append(allocated, p)
		}
		if c := m.conditions[p.UID].pending; c != nil && c.Reason == v1.PodReasonDeferred {
			m.pending = append(m.pending, p.UID)
		}
	}
	return allocated
}

func (m *Manager) retryOrder(a, b *v1.Pod) int {
	if ia, ib := m.increasing(a), m.increasing(b); ia != ib {
		if !ia {
			return -1
		}
		return 1
	}
	pa, pb := priority(a), priority(b)
	if pa != pb {
		if pa > pb {
			return -1
		}
		return 1
	}
	ga, gb := resources.PodQOSClass(a) == v1.PodQOSGuaranteed, resources.PodQOSClass(b) == v1.PodQOSGuaranteed
	if ga != gb {
		if ga {
			return -1
		}
		return 1
	}
	ta, tb := m.conditions[a.UID].pending, m.conditions[b.UID].pending
	if ta != nil && tb != nil {
		return ta.LastTransitionTime.Compare(tb.LastTransitionTime.Time)
	}
	return 0
}

// increasing says whether the spec asks for more cpu or memory than
// allocated.
func (m *Manager) increasing(pod *v1.Pod) bool {
	allocated, differs := m.allocatedPod(pod)
	if !differs {
		return false
	}
	was := resourcehelper.PodRequests(allocated, resourcehelper.PodResourcesOptions{})
	want := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	return want.Cpu().Cmp(*was.Cpu()) > 0 || want.Memory().Cmp(*was.Memory()) > 0
}

func priority(p *v1.Pod) int32 {
	if p.Spec.Priority != nil {
		return *p.Spec.Priority
	}
	return 0
}

// SyncDone tells the Manager how the sync of allocated (its AllocatedPod)
// went: with err, the resize in progress says Error and the message (a
// ResizeError event, once per message); without, and with every
// container running what was allocated (inProgress false: kuberuntime's
// ResizeInProgress), the resize is complete: the condition goes and a
// ResizeCompleted event says so.
func (m *Manager) SyncDone(allocated *v1.Pod, inProgress bool, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.conditions[allocated.UID]
	switch {
	case c.inProgress == nil:
		return
	case err != nil:
		if c.inProgress.Message != err.Error() {
			m.event(allocated, v1.EventTypeWarning, EventResizeError, "Pod resize error", err.Error(), c.inProgress.ObservedGeneration)
		}
		c.inProgress = m.condition(v1.PodResizeInProgress, c.inProgress, v1.PodReasonError, err.Error(), c.inProgress.ObservedGeneration)
	case !inProgress:
		m.event(allocated, v1.EventTypeNormal, EventResizeCompleted, "Pod resize completed", "", c.inProgress.ObservedGeneration)
		c.inProgress = nil
	default:
		return
	}
	m.conditions[allocated.UID] = c
}

// Conditions are the pod's resize conditions, PodResizePending then
// PodResizeInProgress, those it has (copies).
func (m *Manager) Conditions(uid types.UID) []v1.PodCondition {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []v1.PodCondition
	for _, c := range []*v1.PodCondition{m.conditions[uid].pending, m.conditions[uid].inProgress} {
		if c != nil {
			out = append(out, *c)
		}
	}
	return out
}

// condition is the kubelet's updatedPodResizeCondition: True, probed now,
// its transition time kept while the reason stays.
func (m *Manager) condition(t v1.PodConditionType, old *v1.PodCondition, reason, message string, generation int64) *v1.PodCondition {
	now := m.now()
	c := &v1.PodCondition{Type: t, Status: v1.ConditionTrue, LastProbeTime: now, LastTransitionTime: now,
		ObservedGeneration: generation, Reason: reason, Message: message}
	if old != nil && old.Reason == reason {
		c.LastTransitionTime = old.LastTransitionTime
	}
	return c
}

// event records a resize event with the kubelet's message: prefix, then
// the containers' resources as JSON (the spec's, or the allocation's),
// the generation and the error.
func (m *Manager) event(pod *v1.Pod, eventType, reason, prefix, errMessage string, generation int64) {
	if m.cfg.Recorder == nil {
		return
	}
	m.cfg.Recorder.Eventf(pod, eventType, reason, "%s", resizeMessage(pod, prefix, errMessage, generation))
}

type containerAllocation struct {
	Name      string                  `json:"name"`
	Resources v1.ResourceRequirements `json:"resources,omitempty"`
}

type podResourceSummary struct {
	InitContainers []containerAllocation `json:"initContainers,omitempty"`
	Containers     []containerAllocation `json:"containers,omitempty"`
	Generation     int64                 `json:"generation"`
	Error          string                `json:"error,omitempty"`
}

func resizeMessage(pod *v1.Pod, prefix, errMessage string, generation int64) string {
	s := podResourceSummary{Generation: generation, Error: errMessage}
	for _, c := range pod.Spec.InitContainers {
		s.InitContainers = append(s.InitContainers, containerAllocation{Name: c.Name, Resources: c.Resources})
	}
	for _, c := range pod.Spec.Containers {
		s.Containers = append(s.Containers, containerAllocation{Name: c.Name, Resources: c.Resources})
	}
	b, err := json.Marshal(s)
	if err != nil {
		return prefix
	}
	return fmt.Sprintf("%s: %s", prefix, b)
}

// Backfill takes the resize conditions pod's API status has (the agent
// restarted during a resize), as the kubelet's
// BackfillPodResizeConditions, so that a resize in progress or pending
// stays so until decided again; a pending one is queued for RetryPending.
func (m *Manager) Backfill(pod *v1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.conditions[pod.UID]
	for i := range pod.Status.Conditions {
		pc := pod.Status.Conditions[i]
		switch pc.Type {
		case v1.PodResizePending:
			c.pending = &pc
		case v1.PodResizeInProgress:
			c.inProgress = &pc
		}
	}
	m.conditions[pod.UID] = c
	if _, differs := m.allocatedPod(pod); differs && !slices.Contains(m.pending, pod.UID) {
		m.pending = append(m.pending, pod.UID)
	}
}
