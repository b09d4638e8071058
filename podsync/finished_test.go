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
	"github.com/nodekit-dev/nodekit/podworkers"
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
