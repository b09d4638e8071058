package nodeagent_test

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/nodekit-dev/nodekit/internal/poll"
	"github.com/nodekit-dev/nodekit/nodeagent"
)

// TestAgentRunsManifestsOnFakeRuntime runs the whole agent on the fake
// runtime: a good manifest next to a bad one runs and becomes Ready through
// its exec readiness probe, a crashing container restarts, and a removed
// manifest's pod is killed and removed.
func TestAgentRunsManifestsOnFakeRuntime(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
	}
	write("good.yaml", `apiVersion: v1
kind: Pod
metadata: {name: good}
spec:
  containers:
  - name: c
    image: nodekit.local/testbin:1
    args: [sleep]
    readinessProbe:
      exec: {command: [/testbin, echo, ok]}
      periodSeconds: 1
`)
	write("crash.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: crash}\nspec:\n  containers:\n  - {name: c, image: nodekit.local/testbin:1, args: [exit, \"3\"]}\n")
	write("bad.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: bad}\nspec:\n  containers:\n  - {name: c, image: \"\"}\n")
	write(".hidden.yaml", "not: a pod")
	write("elsewhere.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: elsewhere}\nspec:\n  nodeSelector: {disk: nvme}\n"+
		"  containers:\n  - {name: c, image: nodekit.local/testbin:1, args: [sleep]}\n")

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	registry := prometheus.NewRegistry()
	a := startFakeAgent(t, ctx, dir, func(c *nodeagent.Config) { c.Registerer, c.Gatherer = registry, registry }).Agent

	pod := func(name string) *v1.Pod { return podNamed(a, name) }
	poll.Eventually(t, func() bool {
		p := pod("good-n1")
		return p != nil && p.Status.Phase == v1.PodRunning && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].Ready
	}, 20*time.Second, 20*time.Millisecond, "good pod Running and Ready")
	assert.Nil(t, pod("bad-n1"), "the bad manifest is skipped")
	mfs, err := registry.Gather()
	require.NoError(t, err)
	invalid := 0.0
	for _, mf := range mfs {
		if mf.GetName() == "podsource_invalid_manifests_total" {
			for _, m := range mf.GetMetric() {
				invalid += m.GetCounter().GetValue()
			}
		}
	}
	assert.GreaterOrEqual(t, invalid, 1.0, "the bad manifest is counted")
	// The kubelet's pod sync metrics, on /metrics.
	for _, name := range []string{"kubelet_started_pods_total", "kubelet_started_containers_total",
		"kubelet_pod_start_duration_seconds", "kubelet_pod_worker_duration_seconds"} {
		assert.True(t, slices.ContainsFunc(mfs, func(mf *dto.MetricFamily) bool { return mf.GetName() == name }), name)
	}
	// The predicate admit handler refuses the pod whose node selector does
	// not match, with the kubelet's rejectPod status.
	poll.Eventually(t, func() bool {
		return slices.ContainsFunc(a.Statuses().Pods(), func(p v1.Pod) bool {
			return p.Name == "elsewhere-n1" && p.Status.Phase == v1.PodFailed && p.Status.Reason == "NodeAffinity" &&
				p.Status.Message == "Pod was rejected: Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"
		})
	}, 20*time.Second, 20*time.Millisecond, "pod for another node rejected")

	// Editing a manifest (a new env value) replaces its pod: static pods get
	// their UID from their content, so the old one is killed, a new one runs.
	oldUID := pod("good-n1").UID
	write("good.yaml", `apiVersion: v1
kind: Pod
metadata: {name: good}
spec:
  containers:
  - name: c
    image: nodekit.local/testbin:1
    args: [sleep]
    env: [{name: VERSION, value: "2"}]
    readinessProbe:
      exec: {command: [/testbin, echo, ok]}
      periodSeconds: 1
`)
	poll.Eventually(t, func() bool {
		p := pod("good-n1")
		if p == nil || p.UID == oldUID || p.Status.Phase != v1.PodRunning {
			return false
		}
		pods, err := a.Runtime().GetPods(ctx, true)
		require.NoError(t, err)
		for _, rp := range pods {
			if rp.ID == oldUID {
				return false
			}
		}
		return true
	}, 20*time.Second, 20*time.Millisecond, "edited pod replaced")
	poll.Eventually(t, func() bool {
		p := pod("crash-n1")
		return p != nil && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount >= 1 &&
			p.Status.ContainerStatuses[0].LastTerminationState.Terminated != nil &&
			p.Status.ContainerStatuses[0].LastTerminationState.Terminated.ExitCode == 3
	}, 20*time.Second, 20*time.Millisecond, "crashing container restarted")

	// The crashing container's log, through /containerLogs.
	rec := httptest.NewRecorder()
	a.APIHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/containerLogs/default/crash-n1/c?tailLines=1", nil))
	assert.Equal(t, 200, rec.Code, rec.Body.String())
	assert.Equal(t, "exiting with 3\n", rec.Body.String())
	rec = httptest.NewRecorder()
	a.APIHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/containerLogs/default/crash-n1/c?tailLines=x", nil))
	assert.Equal(t, 400, rec.Code)
	assert.Contains(t, rec.Body.String(), `tailLines: invalid value "x"`)
	rec = httptest.NewRecorder()
	a.APIHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/containerLogs/default/nope/c", nil))
	assert.Equal(t, 404, rec.Code)

	require.NoError(t, os.Remove(filepath.Join(dir, "good.yaml")))
	poll.Eventually(t, func() bool {
		pods, err := a.Runtime().GetPods(ctx, true)
		require.NoError(t, err)
		for _, p := range pods {
			if p.Name == "good-n1" {
				return false
			}
		}
		return pod("good-n1") == nil
	}, 20*time.Second, 20*time.Millisecond, "removed pod gone from the runtime")
}
