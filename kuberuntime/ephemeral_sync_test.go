package kuberuntime_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/kuberuntime"
	"github.com/nodekit-dev/nodekit/runtime/fake"
)

// newEphemeralEnv is a managerEnv with an event recorder and sync metrics.
func newEphemeralEnv(t *testing.T) (*managerEnv, *recorder, *kuberuntime.SyncMetrics) {
	clk := clocktesting.NewFakeClock(time.Unix(1700000000, 0))
	f, client := startFake(t, fake.WithClock(clk))
	rec, metrics := &recorder{}, kuberuntime.NewSyncMetrics()
	m, err := kuberuntime.NewManager(kuberuntime.ManagerConfig{Runtime: client, Images: client, Clock: clk, PodLogsDir: t.TempDir(),
		DNS: kuberuntime.HostDNS("", nil, ""), Recorder: rec, Metrics: metrics})
	require.NoError(t, err)
	return &managerEnv{t: t, clock: clk, fake: f, client: client, m: m, ctx: t.Context()}, rec, metrics
}

// debug is what kubectl debug adds: an ephemeral container, targeting
// target's process namespace when target is set.
func debug(name, target string, args ...string) v1.EphemeralContainer {
	return v1.EphemeralContainer{TargetContainerName: target,
		EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: name, Image: testImage, Args: args}}
}

// pidNamespace reads the Pid namespace mode and target the runtime got for
// container id, from its verbose status.
func pidNamespace(t *testing.T, e *managerEnv, id string) (mode, target string) {
	t.Helper()
	resp, err := e.client.ContainerStatus(e.ctx, id, true)
	require.NoError(t, err)
	var info struct {
		Config struct {
			Linux struct {
				SecurityContext struct {
					NamespaceOptions struct {
						Pid      string `json:"pid"`
						TargetID string `json:"targetId"`
					} `json:"namespaceOptions"`
				} `json:"securityContext"`
			} `json:"linux"`
		} `json:"config"`
	}
	require.NoError(t, json.Unmarshal([]byte(resp.Info["info"]), &info))
	ns := info.Config.Linux.SecurityContext.NamespaceOptions
	if ns.Pid == "" {
		ns.Pid = "POD" // the zero value, left out of the JSON
	}
	return ns.Pid, ns.TargetID
}

// The kubelet's SyncPod step 5 starts the ephemeral containers computePodActions
// lists; startContainer resolves targetContainerName with getTargetID (the
// target's status, by name) and generateLinuxContainerConfig turns a Pid
// mode CONTAINER into TARGET with the target's ID; a pod sharing its
// process namespace keeps POD. Ephemeral containers are never restarted,
// and the target keeps running.
func TestSyncPodStartsEphemeralContainers(t *testing.T) {
	for _, tc := range []struct {
		name       string
		eph        v1.EphemeralContainer
		sharePID   bool
		wantMode   string
		wantTarget bool
		wantReason string
	}{
		{name: "kubelet getTargetID + generateLinuxContainerConfig: targetContainerName joins the target's PID namespace",
			eph: debug("debug", "m", "echo", "debug-hello"), wantMode: "TARGET", wantTarget: true},
		{name: "kubelet generateLinuxContainerConfig: no targetContainerName keeps the pod's Pid mode CONTAINER",
			eph: debug("debug", "", "echo", "debug-hello"), wantMode: "CONTAINER"},
		{name: "kubelet generateLinuxContainerConfig: shareProcessNamespace keeps Pid mode POD, target or not",
			eph: debug("debug", "m", "echo", "debug-hello"), sharePID: true, wantMode: "POD"},
		{name: "kubelet startContainer: an unknown target fails with CreateContainerConfigError",
			eph: debug("debug", "nope", "echo", "debug-hello"), wantReason: "CreateContainerConfigError"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, _, _ := newEphemeralEnv(t)
			pod := podSpec("eph", v1.RestartPolicyAlways, v1.Container{Name: "m", Image: testImage, Args: []string{"sleep"}})
			pod.Spec.ShareProcessNamespace = &tc.sharePID
			st := e.syncUntilRunning(pod, "m")
			main := st.FindContainerStatusByName("m")

			pod.Spec.EphemeralContainers = []v1.EphemeralContainer{tc.eph}
			res, st := e.sync(pod, nil)
			s := step(res, kuberuntime.ActionStartContainer, "debug")
			require.NotNil(t, s, "the ephemeral container is started: %+v", res.Steps)
			if tc.wantReason != "" {
				assert.Equal(t, tc.wantReason, s.Reason())
				assert.ErrorContains(t, s.Err, "unable to find target container nope")
				assert.Nil(t, st.FindContainerStatusByName("debug"))
				return
			}
			require.NoError(t, s.Err)
			cs := st.FindContainerStatusByName("debug")
			require.NotNil(t, cs)
			mode, target := pidNamespace(t, e, cs.ID)
			assert.Equal(t, tc.wantMode, mode)
			if tc.wantTarget {
				assert.Equal(t, main.ID, target)
			} else {
				assert.Empty(t, target)
			}

			// It exited: never restarted; the main container was not touched.
			require.Equal(t, kc.ContainerStateExited, cs.State)
			for range 2 {
				res, st = e.sync(pod, nil)
				require.NoError(t, res.Err())
				assert.Nil(t, step(res, kuberuntime.ActionStartContainer, "debug"), "ephemeral containers are never restarted")
			}
			assert.Equal(t, cs.ID, st.FindContainerStatusByName("debug").ID)
			m := st.FindContainerStatusByName("m")
			assert.Equal(t, main.ID, m.ID)
			assert.Equal(t, kc.ContainerStateRunning, m.State)
		})
	}
}

// The kubelet's SyncPod starts the ephemeral containers (step 5) before the
// init containers (step 6), so one runs even while initialization is stuck;
// kubelet_started_containers_total counts it as "ephemeral_container", and
// its events name spec.ephemeralContainers{name} (kubecontainer's fieldPath).
func TestSyncPodStartsEphemeralContainersBeforeInitContainers(t *testing.T) {
	e, rec, metrics := newEphemeralEnv(t)
	pod := podSpec("order", v1.RestartPolicyAlways, v1.Container{Name: "m", Image: testImage, Args: []string{"sleep"}})
	pod.Spec.InitContainers = []v1.Container{
		{Name: "a", Image: testImage, Args: []string{"exit", "0"}},
		{Name: "b", Image: testImage, Args: []string{"sleep"}}, // never completes
	}
	res, st := e.sync(pod, nil)
	require.NoError(t, res.Err())
	require.Equal(t, kc.ContainerStateExited, st.FindContainerStatusByName("a").State)

	pod.Spec.EphemeralContainers = []v1.EphemeralContainer{debug("debug", "", "sleep")}
	rec.take()
	res, st = e.sync(pod, nil)
	require.NoError(t, res.Err())
	var order []string
	for _, s := range res.Steps {
		order = append(order, string(s.Action)+" "+s.Target)
	}
	assert.Equal(t, []string{"StartContainer debug", "InitContainer b"}, order)
	assert.Equal(t, kc.ContainerStateRunning, st.FindContainerStatusByName("debug").State)
	assert.Contains(t, rec.take(), "order spec.ephemeralContainers{debug} Normal Started: Started container debug")

	require.NoError(t, testutil.CollectAndCompare(metrics, strings.NewReader(`
# HELP kubelet_started_containers_total Cumulative number of containers started
# TYPE kubelet_started_containers_total counter
kubelet_started_containers_total{container_type="ephemeral_container"} 1
kubelet_started_containers_total{container_type="init_container"} 2
`), "kubelet_started_containers_total"))
}

// The kubelet's killContainer finds an ephemeral container's spec
// (kubecontainer.GetContainerSpec visits every container type): killing
// the pod stops it with the pod's grace period and records its Killing
// event.
func TestKillPodStopsEphemeralContainers(t *testing.T) {
	e, rec, _ := newEphemeralEnv(t)
	pod := podSpec("kill", v1.RestartPolicyAlways, v1.Container{Name: "m", Image: testImage, Args: []string{"sleep"}})
	e.syncUntilRunning(pod, "m")
	pod.Spec.EphemeralContainers = []v1.EphemeralContainer{debug("debug", "m", "sleep")}
	e.syncUntilRunning(pod, "m", "debug")
	rec.take()

	st, err := e.m.TerminatePod(e.ctx, pod, nil)
	require.NoError(t, err)
	assert.Equal(t, kc.ContainerStateExited, st.FindContainerStatusByName("debug").State)
	assert.Contains(t, rec.take(), "kill spec.ephemeralContainers{debug} Normal Killing: Stopping container debug")
}
