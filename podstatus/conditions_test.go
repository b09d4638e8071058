package podstatus_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
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
