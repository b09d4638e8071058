package kuberuntime

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/runtime/criconv"
)

// withEphemeral adds ephemeral containers (kubectl debug) to a copy of pod.
func withEphemeral(pod *v1.Pod, names ...string) *v1.Pod {
	p := pod.DeepCopy()
	for _, n := range names {
		p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, v1.EphemeralContainer{
			EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: n, Image: "img:1"}, TargetContainerName: "m"})
	}
	return p
}

// Each case follows the kubelet's computePodActions
// (pkg/kubelet/kuberuntime/kuberuntime_manager.go): an ephemeral container
// with no status at all is started, even before initialization completes;
// one that ran is never restarted; none start along with a new sandbox.
func TestComputePodActionsEphemeralContainers(t *testing.T) {
	plain := withEphemeral(testPod(v1.RestartPolicyAlways, "m"), "debug", "debug2")
	never := withEphemeral(testPod(v1.RestartPolicyNever, "m"), "debug")
	initPod := testPod(v1.RestartPolicyAlways, "m")
	initPod.Spec.InitContainers = []v1.Container{{Name: "a", Image: "img:1"}}
	initPod = withEphemeral(initPod, "debug")
	failedInit := initPod.DeepCopy()
	failedInit.Spec.RestartPolicy = v1.RestartPolicyNever

	ready := []*runtimeapi.PodSandboxStatus{readySandbox(0, "127.1.0.1")}
	notReady := []*runtimeapi.PodSandboxStatus{{Id: "sb", State: runtimeapi.PodSandboxState_SANDBOX_NOTREADY,
		Metadata: &runtimeapi.PodSandboxMetadata{Attempt: 0}}}
	status := func(sandboxes []*runtimeapi.PodSandboxStatus, cs ...*kc.ContainerStatus) *kc.PodStatus {
		st := &kc.PodStatus{ContainerStatuses: cs}
		for _, sb := range sandboxes {
			st.SandboxStatuses = append(st.SandboxStatuses, criconv.SandboxStatusFromCRI(sb))
		}
		return st
	}
	eph := func(name, id string, state kc.ContainerState, exit int) *kc.ContainerStatus {
		return &kc.ContainerStatus{ID: id, Name: name, State: state, ExitCode: exit}
	}
	run, exited, unknown := kc.ContainerStateRunning, kc.ContainerStateExited, kc.ContainerStateUnknown

	for _, tc := range []struct {
		name      string
		pod       *v1.Pod
		status    *kc.PodStatus
		ephemeral []int
		init      []int
		start     []int
		killPod   bool
	}{
		{"computePodActions: an ephemeral container with no status is started", plain,
			status(ready, cstatus(plain, "m", "cm", run, 0)), []int{0, 1}, nil, nil, false},
		{"computePodActions: only the ephemeral containers with no status are started", plain,
			status(ready, cstatus(plain, "m", "cm", run, 0), eph("debug", "cd", run, 0)), []int{1}, nil, nil, false},
		{"computePodActions: ephemeral containers are never restarted (exited non-zero, restartPolicy Always)", plain,
			status(ready, cstatus(plain, "m", "cm", run, 0), eph("debug", "cd", exited, 1), eph("debug2", "cd2", exited, 0)),
			nil, nil, nil, false},
		{"computePodActions: ephemeral containers are never restarted, nor killed (unknown state)", plain,
			status(ready, cstatus(plain, "m", "cm", run, 0), eph("debug", "cd", unknown, 0), eph("debug2", "cd2", run, 0)),
			nil, nil, nil, false},
		{"computePodActions: ephemeral containers may be started even if initialization is not yet complete", initPod,
			status(ready, cstatus(initPod, "a", "ca", run, 0)), []int{0}, nil, nil, false},
		{"computePodActions: an ephemeral container starts even when a failed init container kills the pod", failedInit,
			status(ready, cstatus(failedInit, "a", "ca", exited, 1)), []int{0}, nil, nil, true},
		{"computePodActions: no ephemeral container starts when the sandbox is created", plain,
			nil, nil, nil, []int{0}, true},
		{"computePodActions: no ephemeral container starts when the sandbox is re-created", plain,
			status(notReady, cstatus(plain, "m", "cm", exited, 0)), nil, nil, []int{0}, true},
		{"computePodActions: no ephemeral container starts when the sandbox is re-created, even with init containers", initPod,
			status(notReady, cstatus(initPod, "m", "cm", exited, 0)), nil, []int{0}, nil, true},
		{"computePodActions: a pod whose containers are done is killed; the new ephemeral container is still listed", never,
			status(ready, cstatus(never, "m", "cm", exited, 0)), []int{0}, nil, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := ComputePodActions(tc.pod, tc.status, nil)
			assert.Equal(t, tc.ephemeral, a.EphemeralContainersToStart, "ephemeral")
			assert.Equal(t, tc.init, a.InitContainersToStart, "init")
			assert.Equal(t, tc.start, a.ContainersToStart, "start")
			assert.Equal(t, tc.killPod, a.KillPod, "killPod")
			assert.Empty(t, a.ContainersToKill, "an ephemeral container is never killed by a sync")
		})
	}
}
