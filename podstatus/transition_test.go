package podstatus_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"

	"github.com/nodekit-dev/nodekit/podstatus"
)

func TestCheckContainerStateTransition(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	exited := func(name string, code int32) v1.ContainerStatus {
		return v1.ContainerStatus{Name: name, State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: code}}}
	}
	waiting := func(name string) v1.ContainerStatus {
		return v1.ContainerStatus{Name: name, State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}}}
	}
	for _, tc := range []struct {
		name    string
		policy  v1.RestartPolicy
		init    bool // the container is an init container
		sidecar bool // with restartPolicy Always of its own
		code    int32
		wantErr string
	}{
		{"Always: a container may run again", v1.RestartPolicyAlways, false, false, 0, ""},
		{"Never: a terminated container stays so", v1.RestartPolicyNever, false, false, 0,
			"terminated container c attempted illegal transition to non-terminated state"},
		{"OnFailure: a failed container may run again", v1.RestartPolicyOnFailure, false, false, 1, ""},
		{"OnFailure: a succeeded one stays terminated", v1.RestartPolicyOnFailure, false, false, 0,
			"terminated container c attempted illegal transition to non-terminated state"},
		{"Never: a terminated init container stays so", v1.RestartPolicyNever, true, false, 0,
			"terminated init container c attempted illegal transition to non-terminated state"},
		{"Never: a sidecar (restartable init container) may run again", v1.RestartPolicyNever, true, true, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := v1.Container{Name: "c"}
			if tc.sidecar {
				c.RestartPolicy = &always
			}
			pod := &v1.Pod{Spec: v1.PodSpec{RestartPolicy: tc.policy}}
			old, status := &v1.PodStatus{}, &v1.PodStatus{}
			if tc.init {
				pod.Spec.InitContainers = []v1.Container{c}
				old.InitContainerStatuses, status.InitContainerStatuses = []v1.ContainerStatus{exited("c", tc.code)}, []v1.ContainerStatus{waiting("c")}
			} else {
				pod.Spec.Containers = []v1.Container{c}
				old.ContainerStatuses, status.ContainerStatuses = []v1.ContainerStatus{exited("c", tc.code)}, []v1.ContainerStatus{waiting("c")}
			}
			err := podstatus.CheckContainerStateTransition(pod, old, status)
			if tc.wantErr == "" {
				assert.NoError(t, err)
			} else {
				assert.EqualError(t, err, tc.wantErr)
			}
			assert.NoError(t, podstatus.CheckContainerStateTransition(pod, old, old), "staying terminated")
		})
	}
}
