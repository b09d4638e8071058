package eviction

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/nodekit-dev/nodekit/admission"
	"github.com/nodekit-dev/nodekit/resources"
)

// Admit is the kubelet's eviction admission handler for a pod arriving
// while the node has the pressure conditions given (as Manager.Conditions
// returns them): with none, or for a critical pod, yes; under memory
// pressure alone, yes for a pod that is not BestEffort or that tolerates
// the node.kubernetes.io/memory-pressure:NoSchedule taint; otherwise (disk
// or PID pressure, or a BestEffort pod under memory pressure) no, with
// "The node had condition: [MemoryPressure]. ", with
// the Reason "Evicted".
func Admit(pod *v1.Pod, conditions []v1.NodeConditionType) admission.PodAdmitResult {
	if len(conditions) == 0 || resources.IsCriticalPod(pod) {
		return admission.PodAdmitResult{Admit: true}
	}
	if len(conditions) == 1 && conditions[0] == v1.NodeMemoryPressure {
		if resources.PodQOSClass(pod) != v1.PodQOSBestEffort {
			return admission.PodAdmitResult{Admit: true}
		}
		taint := v1.Taint{Key: v1.TaintNodeMemoryPressure, Effect: v1.TaintEffectNoSchedule}
		for i := range pod.Spec.Tolerations {
			if tolerates(&pod.Spec.Tolerations[i], &taint) {
				return admission.PodAdmitResult{Admit: true}
			}
		}
	}
	return admission.PodAdmitResult{Reason: Reason, Message: fmt.Sprintf("The node had condition: %v. ", conditions)}
}

// tolerates is v1.34's Toleration.ToleratesTaint: the effect (empty: any),
// the key (empty: any, with Exists), and Exists or Equal on the value.
func tolerates(t *v1.Toleration, taint *v1.Taint) bool {
	if t.Effect != "" && t.Effect != taint.Effect {
		return false
	}
	if t.Key != "" && t.Key != taint.Key {
		return false
	}
	switch t.Operator {
	case "", v1.TolerationOpEqual:
		return t.Value == taint.Value
	case v1.TolerationOpExists:
		return true
	}
	return false
}
