package podstatus_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/podstatus"
)

// withDebug adds ephemeral containers (kubectl debug) to pod.
func withDebug(pod *v1.Pod, names ...string) *v1.Pod {
	for _, n := range names {
		pod.Spec.EphemeralContainers = append(pod.Spec.EphemeralContainers, v1.EphemeralContainer{TargetContainerName: "web",
			EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: n, Image: "busybox:1"}})
	}
	return pod
}

// The kubelet's generateAPIPodStatus (convertStatusToAPIStatus) fills
// EphemeralContainerStatuses with convertToAPIContainerStatuses of the
// ephemeral containers: waiting in ContainerCreating, or PodInitializing in
// a pod with init containers, until created; then the runtime's state,
// sorted by name (kubetypes.SortedContainerStatuses). The prober never
// sets them ready, and getPhase and the readiness conditions read only the
// regular and init containers.
func TestGenerateEphemeralContainerStatuses(t *testing.T) {
	for _, tc := range []struct {
		name    string
		pod     *v1.Pod
		runtime *kc.PodStatus
		reasons map[string]podstatus.Failure
		check   func(t *testing.T, s v1.PodStatus)
	}{{
		name:    "convertToAPIContainerStatuses: not created yet, waiting in ContainerCreating, image from the spec",
		pod:     withDebug(spec(v1.RestartPolicyAlways, nil, nil, "web"), "debug"),
		runtime: runtimeStatus(ctr("web", "c1", kc.ContainerStateRunning, 0, 0)),
		check: func(t *testing.T, s v1.PodStatus) {
			require.Len(t, s.EphemeralContainerStatuses, 1)
			e := s.EphemeralContainerStatuses[0]
			assert.Equal(t, "debug", e.Name)
			assert.Equal(t, "busybox:1", e.Image)
			require.NotNil(t, e.State.Waiting)
			assert.Equal(t, "ContainerCreating", e.State.Waiting.Reason)
		},
	}, {
		name:    "convertToAPIContainerStatuses: a pod with init containers shows PodInitializing",
		pod:     withDebug(spec(v1.RestartPolicyAlways, []string{"init"}, nil, "web"), "debug"),
		runtime: runtimeStatus(ctr("init", "c0", kc.ContainerStateRunning, 0, 0)),
		check: func(t *testing.T, s v1.PodStatus) {
			require.Len(t, s.EphemeralContainerStatuses, 1)
			assert.Equal(t, "PodInitializing", s.EphemeralContainerStatuses[0].State.Waiting.Reason)
		},
	}, {
		name:    "convertToAPIContainerStatuses: a failed start shows its reason (reason cache)",
		pod:     withDebug(spec(v1.RestartPolicyAlways, nil, nil, "web"), "debug"),
		runtime: runtimeStatus(ctr("web", "c1", kc.ContainerStateRunning, 0, 0)),
		reasons: map[string]podstatus.Failure{"debug": {Reason: "CreateContainerConfigError", Message: "unable to find target container nope"}},
		check: func(t *testing.T, s v1.PodStatus) {
			w := s.EphemeralContainerStatuses[0].State.Waiting
			require.NotNil(t, w)
			assert.Equal(t, "CreateContainerConfigError", w.Reason)
			assert.Equal(t, "unable to find target container nope", w.Message)
		},
	}, {
		name: "convertToAPIContainerStatuses: running and terminated, sorted by name; never ready; phase and readiness ignore them",
		pod:  withDebug(spec(v1.RestartPolicyAlways, nil, nil, "web"), "zz-debug", "debug"),
		runtime: runtimeStatus(ctr("zz-debug", "c3", kc.ContainerStateExited, 0, 0), ctr("debug", "c2", kc.ContainerStateRunning, 0, 0),
			ctr("web", "c1", kc.ContainerStateRunning, 0, 0)),
		check: func(t *testing.T, s v1.PodStatus) {
			require.Len(t, s.EphemeralContainerStatuses, 2)
			d, z := s.EphemeralContainerStatuses[0], s.EphemeralContainerStatuses[1]
			assert.Equal(t, "debug", d.Name)
			require.NotNil(t, d.State.Running)
			assert.Equal(t, "containerd://c2", d.ContainerID)
			assert.Equal(t, "sha256:abc", d.ImageID)
			assert.False(t, d.Ready)
			assert.Nil(t, d.Started)
			assert.Equal(t, "zz-debug", z.Name)
			require.NotNil(t, z.State.Terminated)
			assert.Equal(t, int32(0), z.State.Terminated.ExitCode)
			assert.Equal(t, v1.PodRunning, s.Phase)
			assert.Equal(t, "True  ", conditions(s)[v1.PodReady])
			assert.Equal(t, "True  ", conditions(s)[v1.ContainersReady])
			assert.Len(t, s.ContainerStatuses, 1)
		},
	}, {
		name:    "getPhase: an ephemeral container still running does not keep a finished pod Running",
		pod:     withDebug(spec(v1.RestartPolicyNever, nil, nil, "web"), "debug"),
		runtime: runtimeStatus(ctr("debug", "c2", kc.ContainerStateRunning, 0, 0), ctr("web", "c1", kc.ContainerStateExited, 0, 0)),
		check: func(t *testing.T, s v1.PodStatus) {
			assert.Equal(t, v1.PodSucceeded, s.Phase)
			require.NotNil(t, s.EphemeralContainerStatuses[0].State.Running)
		},
	}, {
		name:    "no ephemeral containers: none listed",
		pod:     spec(v1.RestartPolicyAlways, nil, nil, "web"),
		runtime: runtimeStatus(ctr("web", "c1", kc.ContainerStateRunning, 0, 0)),
		check:   func(t *testing.T, s v1.PodStatus) { assert.Nil(t, s.EphemeralContainerStatuses) },
	}} {
		t.Run(tc.name, func(t *testing.T) {
			tc.check(t, podstatus.Generate(podstatus.Input{Pod: tc.pod, Runtime: tc.runtime, Reasons: tc.reasons,
				RuntimeName: "containerd"}))
		})
	}
}
