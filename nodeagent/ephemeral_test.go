//go:build integration

package nodeagent_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodekit-dev/nodekit/internal/poll"
)

func ephemeralStatus(p *v1.Pod, name string) v1.ContainerStatus {
	for _, s := range p.Status.EphemeralContainerStatuses {
		if s.Name == name {
			return s
		}
	}
	return v1.ContainerStatus{}
}

// podSyncs is how many times the agent's pod workers have synced a pod,
// of any operation type (kubelet_pod_worker_duration_seconds' count).
func podSyncs(t *testing.T, g prometheus.Gatherer) uint64 {
	return histogramCount(t, g, "kubelet_pod_worker_duration_seconds")
}

// histogramCount is how many observations the histogram name holds, over
// all its series.
func histogramCount(t *testing.T, g prometheus.Gatherer, name string) uint64 {
	t.Helper()
	mfs, err := g.Gather()
	require.NoError(t, err)
	var n uint64
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.GetMetric() {
				n += m.GetHistogram().GetSampleCount()
			}
		}
	}
	return n
}

// TestEphemeralContainerOnContainerd is kubectl debug against the agent on
// containerd and a real API server: an ephemeral container added through
// the pods/ephemeralcontainers subresource, targeting the pod's container,
// is started in the running pod (the kubelet's computePodActions), runs to
// completion, shows in status.ephemeralContainerStatuses terminated with
// exit code 0, leaves its output in its log, and is not restarted; the
// pod's own container is untouched and the pod stays Running and Ready.
func TestEphemeralContainerOnContainerd(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, stop := startClusterAgent(t, ctx)
	defer stop()

	c.create("debug-me", v1.PodSpec{HostNetwork: true, TerminationGracePeriodSeconds: ptr.To[int64](5),
		Containers: []v1.Container{testbin("app", "sleep")}})
	poll.Eventually(t, func() bool {
		p := c.get("debug-me")
		return p.Status.Phase == v1.PodRunning && containerStatus(p, "app").State.Running != nil
	}, 60*time.Second, 100*time.Millisecond, "the pod running")
	before := containerStatus(c.get("debug-me"), "app")

	// What kubectl debug -it debug-me --image=... --target=app does.
	p := c.get("debug-me")
	p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, v1.EphemeralContainer{TargetContainerName: "app",
		EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debugger", Image: testbinImage,
			ImagePullPolicy: v1.PullNever, Args: []string{"echo", "debug-hello"},
			TerminationMessagePolicy: v1.TerminationMessageReadFile}})
	_, err := c.api.Admin.CoreV1().Pods("default").UpdateEphemeralContainers(ctx, "debug-me", p, metav1.UpdateOptions{})
	require.NoError(t, err)

	poll.Eventually(t, func() bool {
		return ephemeralStatus(c.get("debug-me"), "debugger").State.Terminated != nil
	}, 60*time.Second, 100*time.Millisecond, "the ephemeral container terminated in the pod's status")
	synced := podSyncs(t, c.metrics)
	p = c.get("debug-me")
	debugger := ephemeralStatus(p, "debugger")
	assert.Equal(t, int32(0), debugger.State.Terminated.ExitCode)
	assert.Equal(t, "Completed", debugger.State.Terminated.Reason)
	assert.Equal(t, testbinImage, debugger.Image)
	assert.NotEmpty(t, debugger.ContainerID)
	assert.Zero(t, debugger.RestartCount)
	assert.False(t, debugger.Ready)

	path, err := c.a.LogPath(ctx, "default", "debug-me", "debugger", false)
	require.NoError(t, err)
	log, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Contains(t, string(log), "debug-hello")

	// A few syncs later (SyncFrequency 2s; the node has no other pod): not
	// restarted, the target untouched, the pod still Running and Ready.
	poll.Eventually(t, func() bool { return podSyncs(t, c.metrics) >= synced+3 }, 30*time.Second, 100*time.Millisecond,
		"three more syncs of the pod")
	p = c.get("debug-me")
	again := ephemeralStatus(p, "debugger")
	assert.Equal(t, debugger.ContainerID, again.ContainerID, "ephemeral containers are never restarted")
	assert.Zero(t, again.RestartCount)
	app := containerStatus(p, "app")
	assert.Equal(t, before.ContainerID, app.ContainerID, "the target container was not restarted")
	assert.Zero(t, app.RestartCount)
	require.NotNil(t, app.State.Running)
	assert.Equal(t, v1.PodRunning, p.Status.Phase)
	assert.Equal(t, v1.ConditionTrue, podCondition(p, v1.PodReady), "an ephemeral container does not count toward readiness")
	for _, e := range c.events("debug-me") {
		assert.False(t, strings.HasPrefix(e, "Failed"), "event %q", e)
	}
}
