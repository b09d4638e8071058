package podstatus_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/podstatus"
)

// The kubelet's convertToAPIContainerStatuses gives every container it has
// nothing to say about (not created, no failed start in the reason cache)
// one default waiting reason, decided by the pod alone: PodInitializing if
// the pod has init containers, for its init, regular and ephemeral
// containers alike and in every phase, else ContainerCreating. kubectl
// shows "Init:0/2" from it; the [NodeConformance] spec "InitContainer
// should not start app containers if init containers fail on a
// RestartAlways pod" fails on anything else.
func TestGenerateDefaultWaitingReason(t *testing.T) {
	type want = map[string]string // container name: waiting reason ("" not waiting)
	debug := func(p *v1.Pod) *v1.Pod { return withDebug(p, "debug") }
	for _, tc := range []struct {
		name      string
		pod       *v1.Pod
		runtime   *kc.PodStatus
		reasons   map[string]podstatus.Failure
		wantPhase v1.PodPhase
		init, app want
	}{{
		name: "kubelet convertToAPIContainerStatuses: no init containers: ContainerCreating",
		pod:  debug(spec(v1.RestartPolicyAlways, nil, nil, "web")), wantPhase: v1.PodPending,
		app: want{"web": "ContainerCreating", "debug": "ContainerCreating"},
	}, {
		name: "kubelet convertToAPIContainerStatuses: init containers not created yet: PodInitializing for all (Init:0/2)",
		pod:  debug(spec(v1.RestartPolicyAlways, []string{"init1", "init2"}, nil, "run1")), wantPhase: v1.PodPending,
		init: want{"init1": "PodInitializing", "init2": "PodInitializing"},
		app:  want{"run1": "PodInitializing", "debug": "PodInitializing"},
	}, {
		name:    "kubelet convertToAPIContainerStatuses: the first init container crash-loops (RestartAlways spec): the second waits in PodInitializing",
		pod:     spec(v1.RestartPolicyAlways, []string{"init1", "init2"}, nil, "run1"),
		runtime: runtimeStatus(ctr("init1", "x2", kc.ContainerStateExited, 1, 1), ctr("init1", "x1", kc.ContainerStateExited, 1, 0)),
		reasons: map[string]podstatus.Failure{"init1": {Reason: "CrashLoopBackOff", Message: "back-off 10s"}}, wantPhase: v1.PodPending,
		init: want{"init1": "CrashLoopBackOff", "init2": "PodInitializing"},
		app:  want{"run1": "PodInitializing"},
	}, {
		name:    "kubelet convertToAPIContainerStatuses: the first init container runs: the next one and the app container wait in PodInitializing",
		pod:     spec(v1.RestartPolicyAlways, []string{"init1", "init2"}, nil, "run1"),
		runtime: runtimeStatus(ctr("init1", "x1", kc.ContainerStateRunning, 0, 0)), wantPhase: v1.PodPending,
		init: want{"init1": "", "init2": "PodInitializing"},
		app:  want{"run1": "PodInitializing"},
	}, {
		name:    "kubelet convertToAPIContainerStatuses: Never, Failed by its init container (RestartNever spec): the rest stay in PodInitializing",
		pod:     spec(v1.RestartPolicyNever, []string{"init1", "init2"}, nil, "run1"),
		runtime: runtimeStatus(ctr("init1", "x1", kc.ContainerStateExited, 1, 0)), wantPhase: v1.PodFailed,
		init: want{"init1": "", "init2": "PodInitializing"},
		app:  want{"run1": "PodInitializing"},
	}, {
		name:      "kubelet convertToAPIContainerStatuses: initialized, one app container running, the other not created yet: PodInitializing",
		pod:       spec(v1.RestartPolicyAlways, []string{"init1"}, nil, "run1", "run2"),
		runtime:   runtimeStatus(ctr("run1", "y1", kc.ContainerStateRunning, 0, 0), ctr("init1", "x1", kc.ContainerStateExited, 0, 0)),
		wantPhase: v1.PodPending, // getPhase: one waits
		init:      want{"init1": ""},
		app:       want{"run1": "", "run2": "PodInitializing"},
	}, {
		name:    "kubelet convertToAPIContainerStatuses: a failed start shows the reason cache's, with init containers too",
		pod:     spec(v1.RestartPolicyAlways, []string{"init1"}, nil, "run1"),
		reasons: map[string]podstatus.Failure{"init1": {Reason: "ErrImagePull", Message: "not found"}}, wantPhase: v1.PodPending,
		init: want{"init1": "ErrImagePull"},
		app:  want{"run1": "PodInitializing"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			s := podstatus.Generate(podstatus.Input{Pod: tc.pod, Runtime: tc.runtime, Reasons: tc.reasons,
				RuntimeName: "containerd", HostIPs: []string{"127.0.0.1"}})
			assert.Equal(t, tc.wantPhase, s.Phase)
			reasons := func(statuses []v1.ContainerStatus) want {
				out := want{}
				for _, c := range statuses {
					out[c.Name] = ""
					if c.State.Waiting != nil {
						out[c.Name] = c.State.Waiting.Reason
					}
				}
				return out
			}
			require.Len(t, s.InitContainerStatuses, len(tc.init))
			if len(tc.init) > 0 {
				assert.Equal(t, tc.init, reasons(s.InitContainerStatuses), "init containers")
			}
			assert.Equal(t, tc.app, reasons(append(s.ContainerStatuses, s.EphemeralContainerStatuses...)), "regular and ephemeral containers")
		})
	}
}
