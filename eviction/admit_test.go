package eviction

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"

	"github.com/nodekit-dev/nodekit/admission"
)

// managerImpl.Admit (eviction_manager.go, v1.34).
func TestAdmitKubeletRules(t *testing.T) {
	bestEffort := mkPod("be", nil, nil)
	burstable := mkPod("bu", rl("memory", "100Mi"), nil)
	tolerating := func(tol v1.Toleration) *v1.Pod {
		return mkPod("tol", nil, nil, func(p *v1.Pod) { p.Spec.Tolerations = []v1.Toleration{tol} })
	}
	mem, disk, pid := v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure
	refused := func(msg string) admission.PodAdmitResult {
		return admission.PodAdmitResult{Reason: "Evicted", Message: msg}
	}
	for _, tc := range []struct {
		rule  string
		pod   *v1.Pod
		conds []v1.NodeConditionType
		want  admission.PodAdmitResult
	}{
		{"no pressure: every pod", bestEffort, nil, admission.PodAdmitResult{Admit: true}},
		{"memory pressure: a BestEffort pod is refused", bestEffort, []v1.NodeConditionType{mem}, refused("The node had condition: [MemoryPressure]. ")},
		{"memory pressure: a Burstable pod is admitted", burstable, []v1.NodeConditionType{mem}, admission.PodAdmitResult{Admit: true}},
		{"memory pressure: a BestEffort pod tolerating memory-pressure:NoSchedule is admitted",
			tolerating(v1.Toleration{Key: "node.kubernetes.io/memory-pressure", Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}),
			[]v1.NodeConditionType{mem}, admission.PodAdmitResult{Admit: true}},
		{"memory pressure: a toleration of every taint is one of memory-pressure", tolerating(v1.Toleration{Operator: v1.TolerationOpExists}),
			[]v1.NodeConditionType{mem}, admission.PodAdmitResult{Admit: true}},
		{"memory pressure: a toleration of NoExecute is not", tolerating(v1.Toleration{Key: "node.kubernetes.io/memory-pressure",
			Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}), []v1.NodeConditionType{mem}, refused("The node had condition: [MemoryPressure]. ")},
		{"memory pressure: tolerating disk-pressure is not enough", tolerating(v1.Toleration{Key: "node.kubernetes.io/disk-pressure",
			Operator: v1.TolerationOpExists}), []v1.NodeConditionType{mem}, refused("The node had condition: [MemoryPressure]. ")},
		{"disk pressure: every pod is refused", burstable, []v1.NodeConditionType{disk}, refused("The node had condition: [DiskPressure]. ")},
		{"PID pressure: every pod is refused", burstable, []v1.NodeConditionType{pid}, refused("The node had condition: [PIDPressure]. ")},
		{"memory and disk pressure: even a pod tolerating memory pressure", tolerating(v1.Toleration{Operator: v1.TolerationOpExists}),
			[]v1.NodeConditionType{mem, disk}, refused("The node had condition: [MemoryPressure DiskPressure]. ")},
		{"a critical pod is admitted under any pressure", mkPod("crit", nil, nil, priority(2000000000)), []v1.NodeConditionType{mem, disk, pid}, admission.PodAdmitResult{Admit: true}},
		{"a static pod is admitted under any pressure", mkPod("static", nil, nil, annotate("kubernetes.io/config.source", "file")),
			[]v1.NodeConditionType{disk}, admission.PodAdmitResult{Admit: true}},
	} {
		assert.Equal(t, tc.want, Admit(tc.pod, tc.conds), tc.rule)
	}
}
