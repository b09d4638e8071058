//go:build integration

package kuberuntime_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/nodekit-dev/nodekit/internal/poll"
	"github.com/nodekit-dev/nodekit/internal/testenv"
	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/kuberuntime"
)

// startupGate stands in for the prober: sidecar s1's startup probe
// succeeds only once the test opens the gate.
type startupGate struct {
	s1 atomic.Value // container ID of s1
	on atomic.Bool
}

func (*startupGate) LivenessFailed(string) bool { return false }
func (*startupGate) StartupFailed(string) bool  { return false }
func (g *startupGate) StartupSucceeded(id string) bool {
	return g.on.Load() || g.s1.Load() != id
}

// TestSidecarsOnContainerd: [init a (exit 0), sidecar s1 (startup probe),
// sidecar s2, init b (exit 0)] + m under restartPolicy Never, on
// containerd. The sidecars start in their place and b waits for s1's
// startup probe; m starts last; s1 is restarted when it dies while m runs,
// Never notwithstanding; KillPod stops m, then s2, then s1.
func TestSidecarsOnContainerd(t *testing.T) {
	backoff := kuberuntime.NewBackoff(nil, 500*time.Millisecond, 4*time.Second)
	m, client := newContainerdManager(t, backoff)
	ctx := context.Background()
	grace := int64(10)
	always := v1.ContainerRestartPolicyAlways
	uid := types.UID("sidecar-" + rand.String(8))
	ctr := func(name string, args ...string) v1.Container {
		return v1.Container{Name: name, Image: testenv.TestImage, Args: args, ImagePullPolicy: v1.PullNever}
	}
	s1 := ctr("s1", "sleep")
	s1.RestartPolicy = &always
	s1.StartupProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"/testbin", "echo", "ok"}}}}
	s2 := ctr("s2", "sleep")
	s2.RestartPolicy = &always
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "sidecar", Namespace: "default", UID: uid},
		Spec: v1.PodSpec{
			HostNetwork:                   true,
			RestartPolicy:                 v1.RestartPolicyNever,
			TerminationGracePeriodSeconds: &grace,
			InitContainers:                []v1.Container{ctr("a", "exit", "0"), s1, s2, ctr("b", "exit", "0")},
			Containers:                    []v1.Container{ctr("m", "sleep")},
		},
	}
	cleanupPod(t, m, client, uid)
	gate := &startupGate{}
	gate.s1.Store("")

	// Act as a pod worker until cond holds for the runtime's status.
	syncUntil := func(what string, cond func(*kc.PodStatus) bool) *kc.PodStatus {
		t.Helper()
		var st *kc.PodStatus
		poll.Eventually(t, func() bool {
			var err error
			st, err = m.GetPodStatus(ctx, uid, pod.Name, pod.Namespace)
			require.NoError(t, err)
			if cs := st.FindContainerStatusByName("s1"); cs != nil {
				gate.s1.Store(cs.ID)
			}
			if cond(st) {
				return true
			}
			res := m.SyncPod(ctx, pod, st, kuberuntime.SyncOptions{CgroupParent: testenv.CgroupParent(string(uid)), Probes: gate})
			for _, s := range res.Steps {
				if s.Err != nil {
					require.ErrorIs(t, s.Err, kuberuntime.ErrCrashLoopBackOff, "only back-off may fail: %s", res)
				}
			}
			return false
		}, 30*time.Second, 100*time.Millisecond, what)
		return st
	}
	state := func(st *kc.PodStatus, name string) kc.ContainerState {
		if cs := st.FindContainerStatusByName(name); cs != nil {
			return cs.State
		}
		return ""
	}

	st := syncUntil("s1 running", func(st *kc.PodStatus) bool { return state(st, "s1") == kc.ContainerStateRunning })
	// s1's startup probe has not succeeded: a few more syncs start nothing after it.
	syncs := 0
	st = syncUntil("five more syncs", func(*kc.PodStatus) bool { syncs++; return syncs > 5 })
	assert.Nil(t, st.FindContainerStatusByName("s2"), "s2 waits for s1's startup probe")
	assert.Nil(t, st.FindContainerStatusByName("b"), "b waits for s1's startup probe")
	assert.Nil(t, st.FindContainerStatusByName("m"), "m waits for initialization")

	gate.on.Store(true)
	st = syncUntil("m running", func(st *kc.PodStatus) bool { return state(st, "m") == kc.ContainerStateRunning })
	started := func(name string) time.Time {
		cs := st.FindContainerStatusByName(name)
		require.NotNil(t, cs, name)
		return cs.StartedAt
	}
	assert.Equal(t, kc.ContainerStateExited, state(st, "a"))
	assert.Equal(t, kc.ContainerStateExited, state(st, "b"))
	assert.True(t, started("a").Before(started("s1")), "a before s1")
	assert.True(t, started("s1").Before(started("s2")), "s1 before s2")
	assert.True(t, started("s2").Before(started("b")), "s2 before b")
	assert.True(t, started("b").Before(started("m")), "b before m")

	// s1 dies while m runs: restarted, although the pod's policy is Never.
	old := st.FindContainerStatusByName("s1")
	require.NoError(t, client.StopContainer(ctx, old.ID, 0))
	st = syncUntil("s1 restarted", func(st *kc.PodStatus) bool {
		cs := st.FindContainerStatusByName("s1")
		return cs != nil && cs.ID != old.ID && cs.State == kc.ContainerStateRunning
	})
	assert.Equal(t, 1, st.FindContainerStatusByName("s1").RestartCount)
	assert.Equal(t, kc.ContainerStateRunning, state(st, "m"), "m kept running")
	assert.Equal(t, kc.ContainerStateRunning, state(st, "s2"))

	// KillPod: m first, then the sidecars in reverse order.
	require.NoError(t, m.KillPod(ctx, pod, kuberuntime.PodFromStatus(st), nil))
	st, err := m.GetPodStatus(ctx, uid, pod.Name, pod.Namespace)
	require.NoError(t, err)
	finished := func(name string) time.Time {
		cs := st.FindContainerStatusByName(name)
		require.NotNil(t, cs, name)
		require.Equal(t, kc.ContainerStateExited, cs.State, name)
		return cs.FinishedAt
	}
	assert.False(t, finished("m").After(finished("s2")), "m stops before s2")
	assert.False(t, finished("s2").After(finished("s1")), "s2 stops before s1")
	t.Logf("finished: m %s, s2 %s, s1 %s", finished("m").Format(time.StampMicro),
		finished("s2").Format(time.StampMicro), finished("s1").Format(time.StampMicro))
}
