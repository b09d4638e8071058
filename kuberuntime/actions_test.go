package kuberuntime

import (
	"testing"
	"time"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/runtime/criconv"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func testPod(policy v1.RestartPolicy, names ...string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid"},
		Spec: v1.PodSpec{RestartPolicy: policy}}
	for _, n := range names {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: n, Image: "img:1"})
	}
	return p
}

func readySandbox(attempt uint32, ip string) *runtimeapi.PodSandboxStatus {
	return &runtimeapi.PodSandboxStatus{Id: "sb", State: runtimeapi.PodSandboxState_SANDBOX_READY,
		Metadata: &runtimeapi.PodSandboxMetadata{Attempt: attempt},
		Network:  &runtimeapi.PodSandboxNetworkStatus{Ip: ip},
		Linux: &runtimeapi.LinuxPodSandboxStatus{Namespaces: &runtimeapi.Namespace{Options: &runtimeapi.NamespaceOption{
			Network: runtimeapi.NamespaceMode_POD}}}}
}

func cstatus(pod *v1.Pod, name, id string, state kc.ContainerState, exit int) *kc.ContainerStatus {
	c := kc.FindContainer(pod, name)
	return &kc.ContainerStatus{ID: id, Name: name, State: state, ExitCode: exit, Hash: kc.HashContainer(c)}
}

type probes map[string]string

func (p probes) LivenessFailed(id string) bool { return p[id] == "liveness" }
func (p probes) StartupFailed(id string) bool  { return p[id] == "startup" }

// StartupSucceeded: "started" passed its startup probe; "liveness" too (it is
// past its startup probe when liveness runs).
func (p probes) StartupSucceeded(id string) bool { return p[id] == "started" || p[id] == "liveness" }

func TestComputePodActions(t *testing.T) {
	base := testPod(v1.RestartPolicyAlways, "a", "b")
	never := testPod(v1.RestartPolicyNever, "a", "b")
	onFailure := testPod(v1.RestartPolicyOnFailure, "a", "b")
	withInit := testPod(v1.RestartPolicyAlways, "a")
	withInit.Spec.InitContainers = []v1.Container{{Name: "i1", Image: "img:1"}, {Name: "i2", Image: "img:1"}}
	initNever := withInit.DeepCopy()
	initNever.Spec.RestartPolicy = v1.RestartPolicyNever
	changed := base.DeepCopy()
	changed.Spec.Containers[0].Image = "img:2"
	hostNet := base.DeepCopy()
	hostNet.Spec.HostNetwork = true
	deleting := base.DeepCopy()
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)}

	status := func(pod *v1.Pod, sandboxes []*runtimeapi.PodSandboxStatus, cs ...*kc.ContainerStatus) *kc.PodStatus {
		st := &kc.PodStatus{ContainerStatuses: cs}
		for _, sb := range sandboxes {
			st.SandboxStatuses = append(st.SandboxStatuses, criconv.SandboxStatusFromCRI(sb))
		}
		return st
	}
	ready := []*runtimeapi.PodSandboxStatus{readySandbox(0, "127.1.0.1")}
	notReady := []*runtimeapi.PodSandboxStatus{{Id: "sb", State: runtimeapi.PodSandboxState_SANDBOX_NOTREADY,
		Metadata: &runtimeapi.PodSandboxMetadata{Attempt: 2}}}
	noIP := []*runtimeapi.PodSandboxStatus{readySandbox(0, "")}
	twoReady := []*runtimeapi.PodSandboxStatus{readySandbox(1, "127.1.0.2"), readySandbox(0, "127.1.0.1")}

	type want struct {
		killPod, create bool
		attempt         uint32
		sandboxID       string
		init            []int
		start           []int
		kill            map[string]KillReason
	}
	for _, tc := range []struct {
		name   string
		pod    *v1.Pod
		status *kc.PodStatus
		probes probes
		want   want
	}{
		{"new pod", base, nil, nil, want{killPod: true, create: true, start: []int{0, 1}}},
		{"all running", base, status(base, ready, cstatus(base, "a", "ca", kc.ContainerStateRunning, 0),
			cstatus(base, "b", "cb", kc.ContainerStateRunning, 0)), nil, want{sandboxID: "sb"}},
		{"one exited, Always restarts it", base, status(base, ready, cstatus(base, "a", "ca", kc.ContainerStateExited, 0),
			cstatus(base, "b", "cb", kc.ContainerStateRunning, 0)), nil, want{sandboxID: "sb", start: []int{0}}},
		{"OnFailure restarts exit 1", onFailure, status(onFailure, ready, cstatus(onFailure, "a", "ca", kc.ContainerStateExited, 1),
			cstatus(onFailure, "b", "cb", kc.ContainerStateRunning, 0)), nil, want{sandboxID: "sb", start: []int{0}}},
		{"OnFailure keeps exit 0 dead", onFailure, status(onFailure, ready, cstatus(onFailure, "a", "ca", kc.ContainerStateExited, 0),
			cstatus(onFailure, "b", "cb", kc.ContainerStateRunning, 0)), nil, want{sandboxID: "sb"}},
		{"Never: all exited kills the pod", never, status(never, ready, cstatus(never, "a", "ca", kc.ContainerStateExited, 1),
			cstatus(never, "b", "cb", kc.ContainerStateExited, 0)), nil, want{killPod: true, sandboxID: "sb"}},
		{"created and unknown containers are (re)started", base, status(base, ready, cstatus(base, "a", "ca", kc.ContainerStateCreated, 0),
			cstatus(base, "b", "cb", kc.ContainerStateUnknown, 0)), nil,
			want{sandboxID: "sb", start: []int{0, 1}, kill: map[string]KillReason{"cb": KillReasonUnknownState}}},
		{"spec hash changed restarts", changed, status(changed, ready, cstatus(base, "a", "ca", kc.ContainerStateRunning, 0),
			cstatus(base, "b", "cb", kc.ContainerStateRunning, 0)), nil,
			want{sandboxID: "sb", start: []int{0}, kill: map[string]KillReason{"ca": KillReasonSpecChanged}}},
		{"liveness failure restarts", base, status(base, ready, cstatus(base, "a", "ca", kc.ContainerStateRunning, 0),
			cstatus(base, "b", "cb", kc.ContainerStateRunning, 0)), probes{"cb": "liveness"},
			want{sandboxID: "sb", start: []int{1}, kill: map[string]KillReason{"cb": KillReasonLivenessProbe}}},
		{"startup failure with Never kills without restart", never, status(never, ready, cstatus(never, "a", "ca", kc.ContainerStateRunning, 0),
			cstatus(never, "b", "cb", kc.ContainerStateRunning, 0)), probes{"ca": "startup"},
			want{sandboxID: "sb", kill: map[string]KillReason{"ca": KillReasonStartupProbe}}},
		{"not-ready sandbox is recreated", base, status(base, notReady, cstatus(base, "a", "ca", kc.ContainerStateExited, 0)), nil,
			want{killPod: true, create: true, attempt: 3, sandboxID: "sb", start: []int{0, 1}}},
		{"Never with a dead sandbox and ran containers: nothing", never, status(never, notReady,
			cstatus(never, "a", "ca", kc.ContainerStateExited, 0)), nil, want{killPod: true, attempt: 3, sandboxID: "sb"}},
		{"sandbox without IP is recreated", base, status(base, noIP), nil,
			want{killPod: true, create: true, attempt: 1, sandboxID: "sb", start: []int{0, 1}}},
		{"two ready sandboxes", base, status(base, twoReady), nil,
			want{killPod: true, create: true, attempt: 2, sandboxID: "sb", start: []int{0, 1}}},
		{"network mode changed", hostNet, status(hostNet, ready), nil,
			want{killPod: true, create: true, attempt: 1, start: []int{0, 1}}},
		{"OnFailure: recreate sandbox skips succeeded", onFailure, status(onFailure, notReady,
			cstatus(onFailure, "a", "ca", kc.ContainerStateExited, 0), cstatus(onFailure, "b", "cb", kc.ContainerStateExited, 1)), nil,
			want{killPod: true, create: true, attempt: 3, sandboxID: "sb", start: []int{1}}},
		{"deleting pod: nothing restarts", deleting, status(deleting, ready, cstatus(base, "a", "ca", kc.ContainerStateExited, 1),
			cstatus(base, "b", "cb", kc.ContainerStateExited, 1)), nil, want{killPod: true, sandboxID: "sb"}},
		{"init: new pod starts first init", withInit, nil, nil, want{killPod: true, create: true, init: []int{0}}},
		{"init: first done, second next", withInit, status(withInit, ready, cstatus(withInit, "i1", "c1", kc.ContainerStateExited, 0)), nil,
			want{sandboxID: "sb", init: []int{1}}},
		{"init: running init waits", withInit, status(withInit, ready, cstatus(withInit, "i1", "c1", kc.ContainerStateRunning, 0)), nil,
			want{sandboxID: "sb"}},
		{"init: failed init restarts", withInit, status(withInit, ready, cstatus(withInit, "i1", "c1", kc.ContainerStateExited, 2)), nil,
			want{sandboxID: "sb", init: []int{0}}},
		{"init: failed init with Never kills pod", initNever, status(initNever, ready, cstatus(initNever, "i1", "c1", kc.ContainerStateExited, 2)), nil,
			want{killPod: true, sandboxID: "sb"}},
		{"init: unknown init is killed and restarted", withInit, status(withInit, ready, cstatus(withInit, "i1", "c1", kc.ContainerStateUnknown, 0)), nil,
			want{sandboxID: "sb", init: []int{0}, kill: map[string]KillReason{"c1": KillReasonUnknownState}}},
		{"init: all done starts containers", withInit, status(withInit, ready, cstatus(withInit, "i2", "c2", kc.ContainerStateExited, 0),
			cstatus(withInit, "i1", "c1", kc.ContainerStateExited, 0)), nil, want{sandboxID: "sb", start: []int{0}}},
		{"init: running main container means init done", withInit, status(withInit, ready, cstatus(withInit, "a", "ca", kc.ContainerStateRunning, 0)), nil,
			want{sandboxID: "sb"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var pr ProbeResults
			if tc.probes != nil {
				pr = tc.probes
			}
			got := ComputePodActions(tc.pod, tc.status, pr)
			assert.Equal(t, tc.want.killPod, got.KillPod, "KillPod")
			assert.Equal(t, tc.want.create, got.CreateSandbox, "CreateSandbox")
			assert.Equal(t, tc.want.attempt, got.Attempt, "Attempt")
			assert.Equal(t, tc.want.sandboxID, got.SandboxID, "SandboxID")
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
