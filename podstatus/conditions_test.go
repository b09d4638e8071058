package podstatus_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/nodekit-dev/nodekit/podstatus"
)

// The sidecar branch of the kubelet's GeneratePodInitializedCondition and
// GenerateContainersReadyCondition (pkg/kubelet/status/generate.go): a
// sidecar counts as initialized once started, not once exited, and its
// readiness counts toward the pod's.
func TestConditionsSidecarBranch(t *testing.T) {
	type statuses = []v1.ContainerStatus
	ready := func(s v1.ContainerStatus) v1.ContainerStatus { s.Ready = true; return s }
	notReady := func(s v1.ContainerStatus) v1.ContainerStatus { s.Ready = false; return s }
	pod := spec(v1.RestartPolicyAlways, []string{"init"}, []string{"s"}, "m")
	for _, tc := range []struct {
		name                 string
		init, containers     statuses
		phase                v1.PodPhase
		wantInitialized      v1.ConditionStatus
		wantInitMessage      string
		wantContainersReady  v1.ConditionStatus
		wantContainersReason string
		wantReadyMessage     string
	}{
		{
			name:            "kubelet GeneratePodInitializedCondition: a sidecar running but not started is incomplete",
			init:            statuses{exited("init", 0), running("s", false)},
			containers:      statuses{waiting("m", "PodInitializing")},
			phase:           v1.PodPending,
			wantInitialized: v1.ConditionFalse, wantInitMessage: "containers with incomplete status: [s]",
			wantContainersReady: v1.ConditionFalse, wantContainersReason: podstatus.ReasonContainersNotReady,
			wantReadyMessage: "containers with unready status: [s m]",
		},
		{
			name:            "kubelet GeneratePodInitializedCondition: a started sidecar is initialized while it runs",
			init:            statuses{exited("init", 0), running("s", true)},
			containers:      statuses{running("m", true)},
			phase:           v1.PodRunning,
			wantInitialized: v1.ConditionTrue, wantContainersReady: v1.ConditionTrue,
		},
		{
			name:            "kubelet GeneratePodInitializedCondition: an exited sidecar is not complete (Started false), unlike an init container exited 0",
			init:            statuses{exited("init", 0), exited("s", 0)},
			containers:      statuses{waiting("m", "PodInitializing")},
			phase:           v1.PodPending,
			wantInitialized: v1.ConditionFalse, wantInitMessage: "containers with incomplete status: [s]",
			wantContainersReady: v1.ConditionFalse, wantContainersReason: podstatus.ReasonContainersNotReady,
			wantReadyMessage: "containers with unready status: [s m]",
		},
		{
			name:                "kubelet GenerateContainersReadyCondition: an unready sidecar makes the pod unready though the main container is ready",
			init:                statuses{exited("init", 0), notReady(running("s", true))},
			containers:          statuses{running("m", true)},
			phase:               v1.PodRunning,
			wantInitialized:     v1.ConditionTrue,
			wantContainersReady: v1.ConditionFalse, wantContainersReason: podstatus.ReasonContainersNotReady,
			wantReadyMessage: "containers with unready status: [s]",
		},
		{
			name:            "kubelet GenerateContainersReadyCondition: a sidecar with no status is unknown",
			init:            statuses{exited("init", 0)},
			containers:      statuses{ready(running("m", true))},
			phase:           v1.PodPending,
			wantInitialized: v1.ConditionFalse, wantInitMessage: "containers with unknown status: [s]",
			wantContainersReady: v1.ConditionFalse, wantContainersReason: podstatus.ReasonContainersNotReady,
			wantReadyMessage: "containers with unknown status: [s]",
		},
		{
			name:            "kubelet GenerateContainersReadyCondition: a regular init container's readiness does not count",
			init:            statuses{notReady(exited("init", 0)), ready(running("s", true))},
			containers:      statuses{running("m", true)},
			phase:           v1.PodRunning,
			wantInitialized: v1.ConditionTrue, wantContainersReady: v1.ConditionTrue,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &v1.PodStatus{Phase: tc.phase, InitContainerStatuses: tc.init, ContainerStatuses: tc.containers}
			init := podstatus.Initialized(pod, s, false)
			assert.Equal(t, tc.wantInitialized, init.Status)
			assert.Equal(t, tc.wantInitMessage, init.Message)
			cr := podstatus.ContainersReady(pod, s)
			assert.Equal(t, tc.wantContainersReady, cr.Status)
			assert.Equal(t, tc.wantContainersReason, cr.Reason)
			assert.Equal(t, tc.wantReadyMessage, cr.Message)
			r := podstatus.Ready(pod, s)
			assert.Equal(t, tc.wantContainersReady, r.Status, "Ready follows ContainersReady without readiness gates")
			assert.Equal(t, tc.wantReadyMessage, r.Message)
		})
	}
}

// The kubelet's GeneratePodReadyCondition: Ready is ContainersReady's
// status, reason and message unless that is True; then every readiness
// gate's condition must be True, with a message per gate that is not,
// joined by ", ". It looks the gates up in the conditions of the status
// being generated: other writers' as the pod has them, the kubelet's own
// only those generated before Ready (PodReadyToStartContainers,
// Initialized), as just generated; Ready, ContainersReady and PodScheduled
// are not there yet.
func TestReadyReadinessGates(t *testing.T) {
	type statuses = []v1.ContainerStatus
	cond := func(typ v1.PodConditionType, status v1.ConditionStatus) v1.PodCondition {
		return v1.PodCondition{Type: typ, Status: status}
	}
	pod := func(init []string, gates []v1.PodConditionType, conditions ...v1.PodCondition) *v1.Pod {
		p := spec(v1.RestartPolicyAlways, init, nil, "m")
		for _, g := range gates {
			p.Spec.ReadinessGates = append(p.Spec.ReadinessGates, v1.PodReadinessGate{ConditionType: g})
		}
		p.Status.Conditions = conditions
		return p
	}
	const g1, g2 = v1.PodConditionType("example.com/g1"), v1.PodConditionType("example.com/g2")
	for _, tc := range []struct {
		name       string
		pod        *v1.Pod
		init       statuses
		containers statuses
		phase      v1.PodPhase
		want       string // status, reason, message
	}{
		{name: "kubelet GeneratePodReadyCondition: a gate without its condition",
			pod: pod(nil, []v1.PodConditionType{g1}), containers: statuses{running("m", true)}, phase: v1.PodRunning,
			want: `False ReadinessGatesNotReady corresponding condition of pod readiness gate "example.com/g1" does not exist.`},
		{name: "kubelet GeneratePodReadyCondition: a gate False, another missing: one message each, joined",
			pod: pod(nil, []v1.PodConditionType{g1, g2}, cond(g1, v1.ConditionFalse)), containers: statuses{running("m", true)}, phase: v1.PodRunning,
			want: `False ReadinessGatesNotReady the status of pod readiness gate "example.com/g1" is not "True", but False, ` +
				`corresponding condition of pod readiness gate "example.com/g2" does not exist.`},
		{name: "kubelet GeneratePodReadyCondition: every gate True",
			pod: pod(nil, []v1.PodConditionType{g1, g2}, cond(g2, v1.ConditionTrue), cond(g1, v1.ConditionTrue)), containers: statuses{running("m", true)}, phase: v1.PodRunning,
			want: "True  "},
		{name: "kubelet GeneratePodReadyCondition: containers unready: ContainersReady's reason and message, gates unread",
			pod: pod(nil, []v1.PodConditionType{g1}), containers: statuses{running("m", false)}, phase: v1.PodRunning,
			want: "False ContainersNotReady containers with unready status: [m]"},
		{name: "kubelet GeneratePodReadyCondition: Succeeded: PodCompleted, gates unread",
			pod: pod(nil, []v1.PodConditionType{g1}, cond(g1, v1.ConditionTrue)), containers: statuses{exited("m", 0)}, phase: v1.PodSucceeded,
			want: "False PodCompleted "},
		{name: "kubelet generateAPIPodStatus: a gate naming Initialized reads the one just generated, not the pod's",
			pod:  pod([]string{"i"}, []v1.PodConditionType{v1.PodInitialized}, cond(v1.PodInitialized, v1.ConditionFalse)),
			init: statuses{exited("i", 0)}, containers: statuses{running("m", true)}, phase: v1.PodRunning,
			want: "True  "},
		{name: "kubelet generateAPIPodStatus: a gate naming ContainersReady (generated after Ready) does not exist",
			pod:        pod(nil, []v1.PodConditionType{v1.ContainersReady}, cond(v1.ContainersReady, v1.ConditionTrue)),
			containers: statuses{running("m", true)}, phase: v1.PodRunning,
			want: `False ReadinessGatesNotReady corresponding condition of pod readiness gate "ContainersReady" does not exist.`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &v1.PodStatus{Phase: tc.phase, InitContainerStatuses: tc.init, ContainerStatuses: tc.containers}
			var ready *v1.PodCondition
			for _, c := range podstatus.Conditions(tc.pod, s, true, false) {
				if c.Type == v1.PodReady {
					ready = &c
				}
			}
			require.NotNil(t, ready)
			assert.Equal(t, tc.want, string(ready.Status)+" "+ready.Reason+" "+ready.Message)
		})
	}
}

// The kubelet's NeedToReconcilePodReadiness, read on the pod a source
// delivers: stale when the pod has readiness gates and the Ready written
// in its status differs in status or message from what its status makes.
// Unlike the kubelet's, which reads only the regular containers' statuses
// (a sidecar then counts as unknown and every status-only change of such a
// pod costs a sync), sidecars count as when Ready was generated.
func TestReadyStale(t *testing.T) {
	const g = v1.PodConditionType("example.com/g")
	pod := func(sidecar bool, gated bool, conditions ...v1.PodCondition) *v1.Pod {
		var sidecars []string
		if sidecar {
			sidecars = []string{"s"}
		}
		p := spec(v1.RestartPolicyAlways, nil, sidecars, "m")
		if gated {
			p.Spec.ReadinessGates = []v1.PodReadinessGate{{ConditionType: g}}
		}
		p.Status = v1.PodStatus{Phase: v1.PodRunning, Conditions: conditions, ContainerStatuses: []v1.ContainerStatus{running("m", true)}}
		if sidecar {
			p.Status.InitContainerStatuses = []v1.ContainerStatus{running("s", true)}
		}
		return p
	}
	readyTrue := v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionTrue}
	readyMissing := v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionFalse, Reason: podstatus.ReasonReadinessGatesNotReady,
		Message: `corresponding condition of pod readiness gate "example.com/g" does not exist.`}
	gTrue, gFalse := v1.PodCondition{Type: g, Status: v1.ConditionTrue}, v1.PodCondition{Type: g, Status: v1.ConditionFalse}
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		want bool
	}{
		{"kubelet NeedToReconcilePodReadiness: the gate's condition set True, Ready says it does not exist", pod(false, true, readyMissing, gTrue), true},
		{"kubelet NeedToReconcilePodReadiness: the gate's condition set False, Ready True", pod(false, true, readyTrue, gFalse), true},
		{"kubelet NeedToReconcilePodReadiness: Ready as the gate makes it", pod(false, true, readyTrue, gTrue), false},
		{"kubelet NeedToReconcilePodReadiness: no readiness gates", pod(false, false, readyMissing), false},
		{"kubelet NeedToReconcilePodReadiness: no Ready written yet", pod(false, true, gTrue), false},
		{"a ready sidecar counts: Ready True as written is not stale", pod(true, true, readyTrue, gTrue), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, podstatus.ReadyStale(tc.pod))
		})
	}
}

// TestConditionsObservedGeneration: each condition the kubelet owns
// observes the pod's generation (PodObservedGenerationTracking, GA 1.35).
func TestConditionsObservedGeneration(t *testing.T) {
	pod := spec(v1.RestartPolicyAlways, nil, nil, "m")
	pod.Generation = 7
	s := &v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{running("m", true)}}
	got := podstatus.Conditions(pod, s, true, true)
	require.Len(t, got, 5)
	for _, c := range got {
		assert.Equal(t, int64(7), c.ObservedGeneration, c.Type)
	}
}
