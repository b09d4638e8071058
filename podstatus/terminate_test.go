package podstatus_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekit-dev/nodekit/podstatus"
)

func TestTerminate(t *testing.T) {
	api := map[string]string{"kubernetes.io/config.source": "api"}
	file := map[string]string{"kubernetes.io/config.source": "file"}
	plain := v1.PodSpec{Containers: []v1.Container{{Name: "c"}}}
	withInit := v1.PodSpec{InitContainers: []v1.Container{{Name: "i1"}, {Name: "i2"}}, Containers: []v1.Container{{Name: "c"}}}
	waiting := v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}}
	exited := func(code int32) v1.ContainerState {
		return v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: code}}
	}
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		spec        v1.PodSpec
		in          v1.PodStatus
		wantPhase   v1.PodPhase
		wantStates  []string // init containers, then containers: "unknown", "exited N", "waiting"
	}{
		{"deleted before its container started: Failed, the container unknown", api, plain,
			v1.PodStatus{Phase: v1.PodPending, ContainerStatuses: []v1.ContainerStatus{{Name: "c", State: waiting}}},
			v1.PodFailed, []string{"unknown"}},
		{"stopped while running: Failed", api, plain,
			v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{{Name: "c", State: exited(143)}}},
			v1.PodFailed, []string{"exited 143"}},
		{"already terminal: kept", api, plain,
			v1.PodStatus{Phase: v1.PodSucceeded, ContainerStatuses: []v1.ContainerStatus{{Name: "c", State: exited(0)}}},
			v1.PodSucceeded, []string{"exited 0"}},
		{"a static pod keeps its phase", file, plain,
			v1.PodStatus{Phase: v1.PodPending, ContainerStatuses: []v1.ContainerStatus{{Name: "c", State: waiting}}},
			v1.PodPending, []string{"unknown"}},
		{"not initialized: containers stay waiting, the started init container is unknown", api, withInit,
			v1.PodStatus{Phase: v1.PodPending, InitContainerStatuses: []v1.ContainerStatus{
				{Name: "i1", State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.Now()}}},
				{Name: "i2", State: waiting}},
				ContainerStatuses: []v1.ContainerStatus{{Name: "c", State: waiting}}},
			v1.PodFailed, []string{"unknown", "waiting", "waiting"}},
		{"initialized: the container is unknown", api, withInit,
			v1.PodStatus{Phase: v1.PodRunning, InitContainerStatuses: []v1.ContainerStatus{
				{Name: "i1", State: exited(0)}, {Name: "i2", State: exited(0)}},
				ContainerStatuses: []v1.ContainerStatus{{Name: "c", State: waiting}}},
			v1.PodFailed, []string{"exited 0", "exited 0", "unknown"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: tc.annotations}, Spec: tc.spec}
			status := tc.in
			podstatus.Terminate(pod, &status)
			assert.Equal(t, tc.wantPhase, status.Phase)
			var states []string
			for _, cs := range append(append([]v1.ContainerStatus(nil), status.InitContainerStatuses...), status.ContainerStatuses...) {
				switch term := cs.State.Terminated; {
				case term != nil && term.Reason == podstatus.ReasonContainerStatusUnknown:
					assert.Equal(t, int32(137), term.ExitCode)
					states = append(states, "unknown")
				case term != nil:
					states = append(states, fmt.Sprint("exited ", term.ExitCode))
				default:
					states = append(states, "waiting")
				}
			}
			assert.Equal(t, tc.wantStates, states)
		})
	}
}
