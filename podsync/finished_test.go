package podsync_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodekit-dev/nodekit/internal/poll"
	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/podsource"
	"github.com/nodekit-dev/nodekit/podstatus"
	"github.com/nodekit-dev/nodekit/podsync"
	"github.com/nodekit-dev/nodekit/podworkers"
	"github.com/nodekit-dev/nodekit/statuscache"
)

// kubelet SyncPod: once the generated phase is terminal it returns
// isTerminal without touching the runtime; SyncTerminatingPod then kills
// what still runs, and the finished pod's containers stay (stopped, with
// their logs) until it is deleted.
func TestFinishedPodIsKilledNotRemoved(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  []string
		apiOf func(*v1.Pod)
		phase v1.PodPhase
	}{{
		name: "kubelet getPhase + SyncPod isTerminal: a pod whose containers all exited 0 under Never is Succeeded",
		args: []string{"exit", "0"}, phase: v1.PodSucceeded,
	}, {
		name: "kubelet generateAPIPodStatus: a running pod its API status says Failed stays Failed, and is killed",
		args: []string{"serve"}, phase: v1.PodFailed,
		apiOf: func(p *v1.Pod) { p.Status.Phase = v1.PodFailed },
	}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "job", Namespace: "default", UID: "u-job"},
				Spec: v1.PodSpec{RestartPolicy: v1.RestartPolicyNever,
					Containers: []v1.Container{{Name: "c", Image: testImage, Args: tc.args}}}}
			require.NoError(t, e.syncer.Sync(ctx, podworkers.Work{Type: podworkers.SyncPod, Pod: pod}))
			if tc.apiOf != nil {
				pod = pod.DeepCopy()
				tc.apiOf(pod)
			}
			var st *kc.PodStatus
			poll.Eventually(t, func() bool {
				var err error
				st, err = e.mgr.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
				return err == nil && len(st.ContainerStatuses) == 1 &&
					(tc.apiOf != nil || st.ContainerStatuses[0].State == kc.ContainerStateExited)
			}, 10*time.Second, 10*time.Millisecond)
			before := len(e.probes.calls)

			err := e.syncer.Sync(ctx, podworkers.Work{Type: podworkers.SyncPod, Pod: pod, Status: st})
			require.True(t, errors.Is(err, podworkers.ErrPodTerminal), "got %v", err)
			status, _ := e.statuses.PodStatus(pod.UID)
			assert.Equal(t, tc.phase, status.Phase)
			after, err := e.mgr.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
			require.NoError(t, err)
			assert.Equal(t, st.ContainerStatuses[0].State, after.ContainerStatuses[0].State, "the runtime not touched")

			require.NoError(t, e.syncer.Sync(ctx, podworkers.Work{Type: podworkers.TerminatePod, Pod: pod, Finished: true}))
			assert.Equal(t, []string{"StopLivenessAndStartup", "KillPod", "RemovePod"}, e.probes.calls[before:])
			final, err := e.mgr.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
			require.NoError(t, err)
			require.Len(t, final.ContainerStatuses, 1, "kept in the runtime, with its logs")
			assert.Equal(t, kc.ContainerStateExited, final.ContainerStatuses[0].State, "killed")
			require.NotEmpty(t, final.SandboxStatuses)
			assert.False(t, final.SandboxStatuses[0].Ready(), "sandbox stopped")
			status, ok := e.statuses.PodStatus(pod.UID)
			require.True(t, ok, "its final status stays published")
			assert.Equal(t, tc.phase, status.Phase)
			require.NotNil(t, status.ContainerStatuses[0].State.Terminated)
			assert.NotEmpty(t, status.PodIPs, "the stopped pod keeps its IPs")
		})
	}
}

// kubelet UpdatePod (isPodStatusCacheTerminal): after a restart a Job's
// pod arrives Succeeded from its source. If the agent stopped after
// publishing the final status and before terminating the pod, its sandbox
// still runs: it is synced, seen terminal and terminated, rather than
// taken for done with the sandbox left running; its final status stays,
// also when its container is gone from the runtime (the kubelet's status
// manager refuses the status then generated, and its TerminatePod
// finishes the one held). One long gone from the runtime is taken for
// done, its final status kept, also when the status cache holds nothing
// yet.
func TestRestartTerminatesAFinishedPodStillRunning(t *testing.T) {
	for _, tc := range []struct {
		name string
		// gone: what the runtime lost before the restart ("pod": all of
		// it, terminated and removed; "container": the container alone);
		// relisted: the cache was filled before the pod arrived.
		gone     string
		relisted bool
	}{
		{"stopped before its termination", "", true},
		{"stopped before its termination, its container removed", "container", true},
		{"removed from the runtime long ago", "pod", true},
		{"removed from the runtime long ago, cache not yet filled", "pod", false},
	} {
		t.Run(tc.name, func(t *testing.T) { testRestartWithFinishedPod(t, tc.gone, tc.relisted) })
	}
}

func testRestartWithFinishedPod(t *testing.T, gone string, relisted bool) {
	e := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "job", Namespace: "default", UID: "u-job"},
		Spec: v1.PodSpec{RestartPolicy: v1.RestartPolicyNever,
			Containers: []v1.Container{{Name: "c", Image: testImage, Args: []string{"exit", "0"}}}}}
	require.NoError(t, e.syncer.Sync(ctx, podworkers.Work{Type: podworkers.SyncPod, Pod: pod}))
	cache := e.cache
	relist := func() *kc.PodStatus {
		st, err := e.mgr.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
		require.NoError(t, err)
		cache.Set(pod.UID, st, nil, time.Now())
		cache.UpdateTime(time.Now())
		return st
	}
	poll.Eventually(t, func() bool {
		st := relist()
		return len(st.ContainerStatuses) == 1 && st.ContainerStatuses[0].State == kc.ContainerStateExited
	}, 10*time.Second, 10*time.Millisecond)
	err := e.syncer.Sync(ctx, podworkers.Work{Type: podworkers.SyncPod, Pod: pod, Status: relist()})
	require.ErrorIs(t, err, podworkers.ErrPodTerminal)
	final, _ := e.statuses.PodStatus(pod.UID)
	require.Equal(t, v1.PodSucceeded, final.Phase)
	require.NotNil(t, final.ContainerStatuses[0].State.Terminated)
	switch gone {
	case "pod":
		_, err := e.mgr.TerminatePod(ctx, pod, nil)
		require.NoError(t, err)
	case "container":
		require.NoError(t, e.client.RemoveContainer(ctx, relist().ContainerStatuses[0].ID))
		fallthrough
	default:
		require.True(t, relist().AnySandboxReady(), "killed before its termination: the sandbox still runs")
	}

	// The restart: a new status cache, status manager, syncer and
	// workers; the API's pod.
	cache = statuscache.New()
	if relisted {
		relist()
	}
	statuses := podstatus.NewManager(nil)
	syncer, err := podsync.New(podsync.Config{Runtime: e.mgr, Prober: e.probes, Cache: cache, Statuses: statuses,
		Reasons: podstatus.NewReasonCache(), RuntimeName: "nodekit-fake", HostIPs: []string{"127.0.0.1"}})
	require.NoError(t, err)
	workers, err := podworkers.New(podworkers.Config{PodSyncer: syncer, Cache: cache, TickPeriod: 10 * time.Millisecond})
	require.NoError(t, err)
	d, err := podsync.NewDispatcher(podsync.DispatchConfig{Workers: workers, Prober: &recorded{}, Statuses: statuses})
	require.NoError(t, err)
	done := make(chan struct{})
	go func() { defer close(done); _ = workers.Run(ctx) }()
	defer func() { cancel(); <-done }()
	apiPod := pod.DeepCopy()
	apiPod.Status = final
	d.Dispatch(podsource.PodUpdate{Op: podsource.ADD, Pods: []*v1.Pod{apiPod}})

	poll.Eventually(t, func() bool {
		relist() // the PLEG's: each Work waits for a status read after the last
		state, _ := workers.State(pod.UID)
		return state == podworkers.Terminated
	}, 10*time.Second, 10*time.Millisecond)
	assert.False(t, relist().AnySandboxReady(), "sandbox stopped")
	status, ok := statuses.PodStatus(pod.UID)
	require.True(t, ok)
	assert.Equal(t, v1.PodSucceeded, status.Phase)
	require.Len(t, status.ContainerStatuses, 1)
	assert.Equal(t, final.ContainerStatuses[0].State, status.ContainerStatuses[0].State, "the final status kept")
}
