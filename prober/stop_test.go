package prober

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/prober/probe"
)

// kubelet prober manager StopLivenessAndStartup (called by
// SyncTerminatingPod before the kill): liveness and startup stop, readiness
// goes on until RemovePod.
func TestStopLivenessAndStartupKeepsReadiness(t *testing.T) {
	e := newEnv(t, v1.Container{ReadinessProbe: execProbe("ready"), LivenessProbe: execProbe("live"),
		StartupProbe: execProbe("start")})
	e.st.set("uid", "c", "id1", kc.ContainerStateRunning, e.clock.Now(), 0)
	e.probe(Startup)
	e.probe(Readiness)
	e.probe(Liveness)
	assert.Equal(t, 3, e.m.Workers())

	e.m.StopLivenessAndStartup("other")
	assert.Equal(t, 3, e.m.Workers(), "another pod's probes are not touched")

	e.m.StopLivenessAndStartup("uid")
	assert.Equal(t, 1, e.m.Workers())
	assert.Nil(t, e.m.worker("uid", "c", Liveness))
	assert.Nil(t, e.m.worker("uid", "c", Startup))
	_, ok := e.m.liveness.Get("id1")
	assert.False(t, ok, "liveness results go with the worker")
	assert.False(t, e.m.LivenessFailed("id1"), "so no restart comes of them")

	e.script.push("ready", probe.Failure, probe.Failure, probe.Failure) // its failure threshold
	for range 3 {
		assert.True(t, e.probe(Readiness), "readiness still probes")
	}
	assert.Equal(t, probe.Failure, e.result(e.m.readiness, "id1"))
	status := &v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: "c", ContainerID: "containerd://id1",
		State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}}
	e.m.UpdatePodStatus(e.pod, status)
	assert.True(t, *status.ContainerStatuses[0].Started, "no startup worker: started")
	assert.False(t, status.ContainerStatuses[0].Ready, "readiness still decides Ready")

	e.m.RemovePod("uid")
	assert.Equal(t, 0, e.m.Workers())
}
