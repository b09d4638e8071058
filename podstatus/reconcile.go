package podstatus

import (
	"weak"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// drifted is the kubelet's needsReconcile: whether the API pod, as its
// source last delivered it (the Manager's pod, or the mirror pod), lost the
// status last written, unchanged since. It reads no API: the source keeps
// its copy fresh by watch. Each copy is compared once; after that, a
// pointer check per pass.
func (s *APIWriter) drifted(p versioned, t apiPod, r *record) bool {
	switch {
	case r.written == nil || r.version != p.version || t.obj == nil:
		return false
	case p.inPod && !t.static:
		return false // the Manager found the API's status to be ours
	}
	w := weak.Make(t.obj)
	if w == r.checked {
		return false // compared before, or current at the write: nothing new
	}
	r.checked = w
	if t.obj.DeletionTimestamp != nil && terminal(t.obj.Status.Phase) {
		return false // on its way out: not to be written
	}
	if inSync(p.pod, t.obj, r.written, metav1.NewTime(s.cfg.Clock.Now())) {
		return false
	}
	s.reconciles++
	s.cfg.Log.V(2).Info("Pod status is inconsistent with cached status for pod, a reconciliation should be triggered",
		"pod", t.namespace+"/"+t.name, "uid", t.uid, "apiPhase", t.obj.Status.Phase, "phase", r.written.Phase,
		"reconciles", s.reconciles)
	return true
}

// inSync: writing status over api's would change nothing that counts.
// api's status is normalized as a published one is (container order and
// sub-second times are no drift), and what the merge keeps of it (a
// terminal phase, StartTime, other writers' conditions) is no drift
// either: it would not be written back.
func inSync(pod, api *v1.Pod, status *v1.PodStatus, now metav1.Time) bool {
	a := api.Status
	normalize(api, &a)
	merged := mergeStatus(pod, &a, status, now)
	if !sameConditions(a.Conditions, merged.Conditions) {
		return false
	}
	merged.Conditions = a.Conditions
	return apiequality.Semantic.DeepEqual(a, merged)
}

// sameConditions: the same conditions, in any order (the API server's
// merge of a patch may reorder them).
func sameConditions(a, b []v1.PodCondition) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range b {
		c := find(a, b[i].Type)
		if c == nil || !apiequality.Semantic.DeepEqual(*c, b[i]) {
			return false
		}
	}
	return true
}
