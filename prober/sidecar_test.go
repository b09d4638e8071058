package prober

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/prober/probe"
)

// newSidecarEnv: init container i, sidecar s with startup, liveness and
// readiness probes, regular container c without probes.
func newSidecarEnv(t *testing.T, policy v1.RestartPolicy) *env {
	clk := clocktesting.NewFakeClock(time.Unix(10000, 0))
	e := &env{t: t, clock: clk, st: &statuses{m: map[types.UID]*kc.PodStatus{}}, script: newScript()}
	var err error
	e.m, err = New(Config{Statuses: e.st, Runner: e.script, Clock: clk, Rand: func() float64 { return 0 }})
	require.NoError(t, err)
	always := v1.ContainerRestartPolicyAlways
	e.pod = &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid"},
		Spec: v1.PodSpec{RestartPolicy: policy,
			InitContainers: []v1.Container{{Name: "i"}, {Name: "s", RestartPolicy: &always,
				StartupProbe: execProbe("start"), LivenessProbe: execProbe("live"), ReadinessProbe: execProbe("ready")}},
			Containers: []v1.Container{{Name: "c"}}}}
	e.m.AddPod(e.pod)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { drainUpdates(e.m, stop); close(done) }()
	t.Cleanup(func() { close(stop); <-done })
	return e
}

func (e *env) probeSidecar(t ProbeType) bool {
	w := e.m.worker("uid", "s", t)
	require.NotNil(e.t, w, "a %s worker for the sidecar", t)
	return w.doProbe(context.Background())
}

// kubelet prober_manager.go AddPod: restartable init containers are probed
// like regular containers; UpdatePodStatus sets Started on every init
// container status, Ready on a sidecar from its readiness probe and on a
// regular init container once it exited 0.
func TestSidecarProbesAndInitContainerStatus(t *testing.T) {
	e := newSidecarEnv(t, v1.RestartPolicyAlways)
	assert.Equal(t, 3, e.m.Workers(), "startup, liveness and readiness workers for the sidecar")

	running := v1.ContainerState{Running: &v1.ContainerStateRunning{}}
	status := func() *v1.PodStatus {
		return &v1.PodStatus{InitContainerStatuses: []v1.ContainerStatus{
			{Name: "i", ContainerID: "containerd://idi", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 0}}},
			{Name: "s", ContainerID: "containerd://ids", State: running},
		}}
	}
	e.st.m["uid"] = &kc.PodStatus{ID: "uid", ContainerStatuses: []*kc.ContainerStatus{
		{ID: "ids", Name: "s", State: kc.ContainerStateRunning, StartedAt: e.clock.Now()},
		{ID: "idi", Name: "i", State: kc.ContainerStateExited}}}

	type want struct{ started, ready bool }
	check := func(name string, st *v1.PodStatus, i, s want) {
		t.Run(name, func(t *testing.T) {
			for n, w := range map[int]want{0: i, 1: s} {
				cs := st.InitContainerStatuses[n]
				if assert.NotNil(t, cs.Started, "%s: Started set", cs.Name) {
					assert.Equal(t, w.started, *cs.Started, "%s: Started", cs.Name)
				}
				assert.Equal(t, w.ready, cs.Ready, "%s: Ready", cs.Name)
			}
		})
	}

	st := status()
	e.m.UpdatePodStatus(e.pod, st)
	check("kubelet UpdatePodStatus: sidecar's startup probe not run yet: not started, not ready; init i exited 0: ready",
		st, want{false, true}, want{false, false})

	require.True(t, e.probeSidecar(Startup))
	assert.True(t, e.m.StartupSucceeded("ids"), "kuberuntime.ProbeResults: the sidecar started")
	st = status()
	e.m.UpdatePodStatus(e.pod, st)
	check("kubelet UpdatePodStatus: sidecar started, readiness not yet succeeded: started, not ready",
		st, want{false, true}, want{true, false})

	require.True(t, e.probeSidecar(Readiness))
	st = status()
	e.m.UpdatePodStatus(e.pod, st)
	check("kubelet UpdatePodStatus: sidecar's readiness probe succeeded: ready",
		st, want{false, true}, want{true, true})

	st = status()
	st.InitContainerStatuses[0].State = running
	st.InitContainerStatuses[1].State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 1}}
	e.m.UpdatePodStatus(e.pod, st)
	check("kubelet isContainerStarted: running init i without startup probe is started, not ready; exited sidecar neither",
		st, want{true, false}, want{false, false})
}

// A sidecar is restarted whatever the pod's restartPolicy, so its probe
// workers live on when it exits in a Never pod.
func TestSidecarWorkerOutlivesItsExitUnderNever(t *testing.T) {
	e := newSidecarEnv(t, v1.RestartPolicyNever)
	e.st.m["uid"] = &kc.PodStatus{ID: "uid", ContainerStatuses: []*kc.ContainerStatus{
		{ID: "ids", Name: "s", State: kc.ContainerStateExited, ExitCode: 1}}}
	assert.True(t, e.probeSidecar(Liveness), "the worker keeps going")
	assert.Equal(t, probe.Failure, e.result(e.m.liveness, "ids"))
}
