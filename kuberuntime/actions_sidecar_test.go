package kuberuntime

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/runtime/criconv"
)

// sidecarPod is [init a, sidecar s (startup probe when probed), init b] + main m.
func sidecarPod(policy v1.RestartPolicy, probed bool) *v1.Pod {
	always := v1.ContainerRestartPolicyAlways
	p := testPod(policy, "m")
	s := v1.Container{Name: "s", Image: "img:1", RestartPolicy: &always,
		LivenessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}}
	if probed {
		s.StartupProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}
	}
	p.Spec.InitContainers = []v1.Container{{Name: "a", Image: "img:1"}, s, {Name: "b", Image: "img:1"}}
	return p
}

// Each case follows the kubelet's computePodActions and
// computeInitContainerActions (pkg/kubelet/kuberuntime), as its
// TestComputePodActionsWithRestartableInitContainers does.
func TestComputePodActionsWithSidecars(t *testing.T) {
	always := sidecarPod(v1.RestartPolicyAlways, true)
	never := sidecarPod(v1.RestartPolicyNever, true)
	onFailure := sidecarPod(v1.RestartPolicyOnFailure, true)
	unprobed := sidecarPod(v1.RestartPolicyAlways, false)
	changed := always.DeepCopy()
	changed.Spec.InitContainers[1].Image = "img:2"

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
	run, exited, unknown, created := kc.ContainerStateRunning, kc.ContainerStateExited, kc.ContainerStateUnknown, kc.ContainerStateCreated

	type want struct {
		killPod, create bool
		init, start     []int
		kill            map[string]KillReason
	}
	for _, tc := range []struct {
		name   string
		pod    *v1.Pod
		status *kc.PodStatus
		probes probes
		want   want
	}{
		{"computePodActions: a new pod starts its first init container", always, nil, nil,
			want{killPod: true, create: true, init: []int{0}}},
		{"computeInitContainerActions: init a done, the sidecar starts in its place", always,
			status(ready, cstatus(always, "a", "ca", exited, 0)), nil, want{init: []int{1}}},
		{"computeInitContainerActions: sidecar running, startup probe not run yet: b waits", always,
			status(ready, cstatus(always, "s", "cs", run, 0), cstatus(always, "a", "ca", exited, 0)), probes{},
			want{}},
		{"computeInitContainerActions: sidecar started (startup probe succeeded): b starts", always,
			status(ready, cstatus(always, "s", "cs", run, 0), cstatus(always, "a", "ca", exited, 0)), probes{"cs": "started"},
			want{init: []int{2}}},
		{"computeInitContainerActions: sidecar without startup probe is started once running: b starts", unprobed,
			status(ready, cstatus(unprobed, "s", "cs", run, 0), cstatus(unprobed, "a", "ca", exited, 0)), probes{},
			want{init: []int{2}}},
		{"computeInitContainerActions: sidecar failed its startup probe: killed and restarted, b waits", always,
			status(ready, cstatus(always, "s", "cs", run, 0), cstatus(always, "a", "ca", exited, 0)), probes{"cs": "startup"},
			want{init: []int{1}, kill: map[string]KillReason{"cs": KillReasonStartupProbe}}},
		{"computeInitContainerActions: b done, sidecar running: initialized, m starts", always,
			status(ready, cstatus(always, "b", "cb", exited, 0), cstatus(always, "s", "cs", run, 0), cstatus(always, "a", "ca", exited, 0)),
			probes{"cs": "started"}, want{start: []int{0}}},
		{"computeInitContainerActions: sidecar exited while m runs: restarted even with restartPolicy Never", never,
			status(ready, cstatus(never, "m", "cm", run, 0), cstatus(never, "s", "cs", exited, 0)), nil,
			want{init: []int{1}}},
		{"computeInitContainerActions: sidecar failed while m runs: restarted with OnFailure", onFailure,
			status(ready, cstatus(onFailure, "m", "cm", run, 0), cstatus(onFailure, "s", "cs", exited, 1)), nil,
			want{init: []int{1}}},
		{"computeInitContainerActions: sidecar status gone after initialization: started again", always,
			status(ready, cstatus(always, "m", "cm", run, 0)), nil, want{init: []int{1}}},
		{"computeInitContainerActions: sidecar failed its liveness probe: killed and restarted", always,
			status(ready, cstatus(always, "m", "cm", run, 0), cstatus(always, "s", "cs", run, 0)), probes{"cs": "liveness"},
			want{init: []int{1}, kill: map[string]KillReason{"cs": KillReasonLivenessProbe}}},
		{"computeInitContainerActions: sidecar definition changed: killed and restarted", changed,
			status(ready, cstatus(changed, "m", "cm", run, 0), cstatus(always, "s", "cs", run, 0)), probes{"cs": "started"},
			want{init: []int{1}, kill: map[string]KillReason{"cs": KillReasonSpecChanged}}},
		{"computeInitContainerActions: sidecar in unknown state: killed and restarted even with Never", never,
			status(ready, cstatus(never, "m", "cm", run, 0), cstatus(never, "s", "cs", unknown, 0)), nil,
			want{init: []int{1}, kill: map[string]KillReason{"cs": KillReasonUnknownState}}},
		{"computeInitContainerActions: sidecar stuck in created: started again", always,
			status(ready, cstatus(always, "s", "cs", created, 0), cstatus(always, "a", "ca", exited, 0)), nil,
			want{init: []int{1}}},
		{"computeInitContainerActions: a regular init container is not rerun after initialization", always,
			status(ready, cstatus(always, "m", "cm", run, 0), cstatus(always, "s", "cs", run, 0), cstatus(always, "a", "ca", exited, 1)),
			probes{"cs": "started"}, want{}},
		{"computeInitContainerActions: failed regular init container with Never kills the pod", never,
			status(ready, cstatus(never, "a", "ca", exited, 1)), nil, want{killPod: true}},
		{"computeInitContainerActions: failed init container after the sidecar, Never: the pod is killed, sidecar included", never,
			status(ready, cstatus(never, "b", "cb", exited, 1), cstatus(never, "s", "cs", run, 0), cstatus(never, "a", "ca", exited, 0)),
			probes{"cs": "started"}, want{killPod: true}},
		{"computeInitContainerActions: failed regular init container with Always is restarted", always,
			status(ready, cstatus(always, "s", "cs", run, 0), cstatus(always, "b", "cb", exited, 1), cstatus(always, "a", "ca", exited, 0)),
			probes{"cs": "started"}, want{init: []int{2}}},
		{"computePodActions: all regular containers exited, Never: the pod is killed, sidecar not restarted", never,
			status(ready, cstatus(never, "m", "cm", exited, 0), cstatus(never, "s", "cs", exited, 0), cstatus(never, "b", "cb", exited, 0)),
			nil, want{killPod: true}},
		{"computePodActions: all regular containers exited 0, OnFailure: the pod is killed with its running sidecar", onFailure,
			status(ready, cstatus(onFailure, "m", "cm", exited, 0), cstatus(onFailure, "s", "cs", run, 0), cstatus(onFailure, "b", "cb", exited, 0)),
			nil, want{killPod: true}},
		{"computePodActions: Always restarts the exited regular container, the sidecar keeps running", always,
			status(ready, cstatus(always, "m", "cm", exited, 0), cstatus(always, "s", "cs", run, 0), cstatus(always, "b", "cb", exited, 0)),
			nil, want{start: []int{0}}},
		{"computePodActions: a new sandbox reruns initialization from the first init container", always,
			status(notReady, cstatus(always, "m", "cm", exited, 0), cstatus(always, "s", "cs", exited, 0)), nil,
			want{killPod: true, create: true, init: []int{0}}},
		{"computePodActions: a new sandbox for an OnFailure pod whose containers succeeded: none (hasAnyRegularContainerCreated)", onFailure,
			status(notReady, cstatus(onFailure, "m", "cm", exited, 0), cstatus(onFailure, "s", "cs", exited, 0)), nil,
			want{killPod: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var pr ProbeResults
			if tc.probes != nil {
				pr = tc.probes
			}
			got := ComputePodActions(tc.pod, tc.status, pr)
			assert.Equal(t, tc.want.killPod, got.KillPod, "KillPod")
			assert.Equal(t, tc.want.create, got.CreateSandbox, "CreateSandbox")
			assert.Equal(t, tc.want.init, got.InitContainersToStart, "InitContainersToStart")
			assert.Equal(t, tc.want.start, got.ContainersToStart, "ContainersToStart")
			kill := map[string]KillReason{}
			for id, k := range got.ContainersToKill {
				kill[id] = k.Reason
			}
			if tc.want.kill == nil {
				tc.want.kill = map[string]KillReason{}
			}
			assert.Equal(t, tc.want.kill, kill, "ContainersToKill")
		})
	}
}
