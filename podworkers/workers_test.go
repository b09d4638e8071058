package podworkers_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit-dev/nodekit/internal/poll"
	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/podworkers"
	"github.com/nodekit-dev/nodekit/statuscache"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Unix(1700000000, 0)

// cache answers at once with a status of the pod read at its clock's time.
type cache struct{ clock *clocktesting.FakeClock }

func (c cache) GetNewerThan(ctx context.Context, uid types.UID, _ time.Time) (*kc.PodStatus, error) {
	return &kc.PodStatus{ID: uid, TimeStamp: c.clock.Now()}, nil // it always has one
}

// env runs Workers whose syncer reports each call on calls, fails the
// calls failNext says, and reports each recorded result on done.
type env struct {
	t     *testing.T
	clock *clocktesting.FakeClock
	w     *podworkers.Workers
	calls chan podworkers.Work
	done  chan podworkers.Work

	mu       sync.Mutex
	failNext map[types.UID]int
}

func newEnv(t *testing.T) *env {
	e := &env{t: t, clock: clocktesting.NewFakeClock(t0), calls: make(chan podworkers.Work, 100),
		done: make(chan podworkers.Work, 100), failNext: map[types.UID]int{}}
	w, err := podworkers.New(podworkers.Config{
		PodSyncer: podworkers.PodSyncerFunc(func(_ context.Context, w podworkers.Work) error {
			e.calls <- w
			e.mu.Lock()
			defer e.mu.Unlock()
			if e.failNext[w.Pod.UID] > 0 {
				e.failNext[w.Pod.UID]--
				return errors.New("runtime said no")
			}
			return nil
		}),
		Cache: cache{e.clock}, Clock: e.clock, Jitter: func(d time.Duration) time.Duration { return d },
		OnDone: func(w podworkers.Work, _ time.Duration, _ error) { e.done <- w },
	})
	require.NoError(t, err)
	e.w = w
	return e
}

func pod(uid, name string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(uid)}}
}

// next waits for the syncer's next call and for its result to be recorded.
func (e *env) next() podworkers.Work {
	e.t.Helper()
	var w podworkers.Work
	select {
	case w = <-e.calls:
	case <-time.After(10 * time.Second):
		e.t.Fatal("no call to the syncer within 10s")
	}
	select {
	case <-e.done:
	case <-time.After(10 * time.Second):
		e.t.Fatal("the call's result was not recorded within 10s")
	}
	return w
}

func (e *env) expect(typ podworkers.WorkType, uid string) podworkers.Work {
	e.t.Helper()
	w := e.next()
	require.Equal(e.t, typ.String()+" "+uid, w.Type.String()+" "+string(w.Pod.UID))
	return w
}

func TestWorkersRunPodsThroughTheirLives(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	e.w.UpdatePod(podworkers.Update{Type: podworkers.SyncPodCreate, Pod: pod("a", "web")}) // before Run: held
	ran := make(chan struct{})
	go func() { defer close(ran); e.w.Run(ctx) }()

	first := e.expect(podworkers.SyncPod, "a")
	assert.True(t, first.NewerThan.IsZero())
	assert.Equal(t, types.UID("a"), first.Status.ID, "the syncer gets the cached status")

	// An event: synced again, with a status newer than the last sync. It fails.
	e.mu.Lock()
	e.failNext["a"] = 1
	e.mu.Unlock()
	e.clock.Step(time.Second)
	e.w.Sync("a")
	assert.Equal(t, t0, e.expect(podworkers.SyncPod, "a").NewerThan)
	e.w.Sync("unknown") // ignored
	// Retried once the back-off has passed.
	e.clock.Step(9 * time.Second)
	e.w.Tick()
	e.clock.Step(time.Second)
	e.w.Tick()
	assert.Equal(t, t0.Add(time.Second), e.expect(podworkers.SyncPod, "a").NewerThan)

	// A new version waits for the old one's termination.
	e.w.UpdatePod(podworkers.Update{Type: podworkers.SyncPodCreate, Pod: pod("a2", "web")})
	state, ok := e.w.State("a2")
	require.True(t, ok)
	assert.Equal(t, podworkers.Waiting, state)
	assert.ElementsMatch(t, []string{"a", "a2"}, names(e.w.Pods()))
	e.w.UpdatePod(podworkers.Update{Type: podworkers.SyncPodKill, Pod: pod("a", "web")})
	e.expect(podworkers.TerminatePod, "a")
	e.expect(podworkers.SyncPod, "a2")
	_, ok = e.w.State("a")
	assert.False(t, ok, "terminated and forgotten")
	assert.Equal(t, map[types.UID]bool{"a2": true}, e.w.Known())

	// An orphan only the runtime knows.
	e.w.UpdatePod(podworkers.Update{Type: podworkers.SyncPodKill, Pod: pod("x", "gone"), RuntimeOnly: true})
	orphan := e.expect(podworkers.TerminatePod, "x")
	assert.True(t, orphan.RuntimeOnly)

	// Resync after the interval.
	e.clock.Step(time.Minute)
	e.w.Tick()
	e.expect(podworkers.SyncPod, "a2")

	cancel()
	<-ran
	assert.Empty(t, e.calls, "no call beyond those expected")
}

func TestWorkersStopWithTheirContextMidSync(t *testing.T) {
	block := make(chan struct{})
	w, err := podworkers.New(podworkers.Config{
		PodSyncer: podworkers.PodSyncerFunc(func(ctx context.Context, _ podworkers.Work) error {
			close(block)
			<-ctx.Done()
			return ctx.Err()
		}),
		Cache: cache{clocktesting.NewFakeClock(t0)},
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); w.Run(ctx) }()
	w.UpdatePod(podworkers.Update{Type: podworkers.SyncPodCreate, Pod: pod("a", "web")})
	<-block
	cancel()
	<-ran // Run waits for the worker; goleak checks nothing is left
}

func TestNewRefusesBadConfig(t *testing.T) {
	_, err := podworkers.New(podworkers.Config{})
	assert.ErrorContains(t, err, "PodSyncer and Cache are required")
	_, err = podworkers.New(podworkers.Config{PodSyncer: podworkers.PodSyncerFunc(nil), Cache: cache{},
		BackOffPeriod: -time.Second})
	assert.ErrorContains(t, err, `BackOffPeriod: invalid value -1s`)
}

func names(pods []*v1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, string(p.UID))
	}
	return out
}

func TestKillPodNowWaitsForTheTermination(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); e.w.Run(ctx) }()
	defer func() { cancel(); <-ran }()
	e.w.UpdatePod(podworkers.Update{Type: podworkers.SyncPodCreate, Pod: pod("a", "web")})
	e.expect(podworkers.SyncPod, "a")
	assert.False(t, e.w.IsTerminated(pod("a", "web")))

	// The first try fails; KillPodNow returns only once a retry succeeds.
	e.mu.Lock()
	e.failNext["a"] = 1
	e.mu.Unlock()
	ten := int64(10) // KillPodNow waits 15 s
	status := func(s *v1.PodStatus) { s.Phase = v1.PodFailed }
	killed := make(chan error, 1)
	go func() {
		killed <- e.w.KillPodNow(ctx, pod("a", "web"), podworkers.KillPodOptions{GracePeriodSecondsOverride: &ten, Status: status})
	}()
	w := e.expect(podworkers.TerminatePod, "a")
	require.NotNil(t, w.KillOptions)
	assert.Equal(t, int64(10), *w.KillOptions.GracePeriodSecondsOverride)
	assert.Empty(t, killed, "not terminated yet")
	e.clock.Step(10 * time.Second) // the back-off
	e.w.Tick()
	e.expect(podworkers.TerminatePod, "a")
	require.NoError(t, <-killed)

	state, ok := e.w.State("a")
	require.True(t, ok, "kept while its source has it")
	assert.Equal(t, podworkers.Terminated, state)
	assert.True(t, e.w.IsTerminated(pod("a", "web")))
	assert.Empty(t, e.w.Pods(), "not active")
	assert.Equal(t, map[types.UID]bool{"a": true}, e.w.Known(), "its status is kept")
	require.NoError(t, e.w.KillPodNow(ctx, pod("a", "web"), podworkers.KillPodOptions{}), "already terminated")
	require.NoError(t, e.w.KillPodNow(ctx, pod("b", "db"), podworkers.KillPodOptions{}), "unknown: nothing to wait for")

	// Updates from its source do not start it again; its removal forgets it.
	e.w.UpdatePod(podworkers.Update{Type: podworkers.SyncPodUpdate, Pod: pod("a", "web")})
	e.w.UpdatePod(podworkers.Update{Type: podworkers.SyncPodCreate, Pod: pod("a", "web")})
	e.w.UpdatePod(podworkers.Update{Type: podworkers.SyncPodKill, Pod: pod("a", "web")})
	_, ok = e.w.State("a")
	assert.False(t, ok)
	assert.Empty(t, e.calls, "no call beyond those expected")
}

func TestKillPodNowGivesUpAfterTheKubeletsTimeout(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); e.w.Run(ctx) }()
	defer func() { cancel(); <-ran }()
	e.w.UpdatePod(podworkers.Update{Type: podworkers.SyncPodCreate, Pod: pod("a", "web")})
	e.expect(podworkers.SyncPod, "a")
	e.mu.Lock()
	e.failNext["a"] = 100
	e.mu.Unlock()
	grace := int64(30)
	killed := make(chan error, 1)
	go func() {
		killed <- e.w.KillPodNow(ctx, pod("a", "web"), podworkers.KillPodOptions{GracePeriodSecondsOverride: &grace})
	}()
	e.expect(podworkers.TerminatePod, "a")
	// Run's ticker and KillPodNow's deadline.
	poll.Eventually(t, func() bool { return e.clock.Waiters() >= 2 }, 10*time.Second, time.Millisecond)
	e.clock.Step(44 * time.Second)
	assert.Empty(t, killed, "30 s and half again is 45 s")
	e.clock.Step(time.Second)
	select {
	case err := <-killed:
		require.EqualError(t, err, "pod ns/web was not terminated within 45s")
	case <-time.After(10 * time.Second):
		t.Fatal("KillPodNow did not time out")
	}
}

// kubelet filterOutInactivePods: a pod still terminating keeps its
// resources for admission; terminated pods and runtime-only orphans do not.
func TestWorkersActivePods(t *testing.T) {
	for _, tc := range []struct {
		name    string
		updates []podworkers.Update
		active  []string
	}{
		{"kubelet filterOutInactivePods: syncing and waiting pods are active",
			[]podworkers.Update{{Type: podworkers.SyncPodCreate, Pod: pod("a", "web")}, {Type: podworkers.SyncPodCreate, Pod: pod("a2", "web")}},
			[]string{"a", "a2"}},
		{"kubelet filterOutInactivePods: a terminating pod is active until known terminated",
			[]podworkers.Update{{Type: podworkers.SyncPodCreate, Pod: pod("a", "web")}, {Type: podworkers.SyncPodKill, Pod: pod("a", "web")}},
			[]string{"a"}},
		{"kubelet filterOutInactivePods: an orphan only the runtime has is not in the pod manager",
			[]podworkers.Update{{Type: podworkers.SyncPodKill, RuntimeOnly: true, Pod: pod("o", "orphan")}},
			[]string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t) // not running: the states stay as the updates leave them
			for _, u := range tc.updates {
				e.w.UpdatePod(u)
			}
			assert.ElementsMatch(t, tc.active, names(e.w.ActivePods()))
		})
	}
}

func TestWorkersSourcePods(t *testing.T) {
	finished := pod("f", "job")
	finished.Status.Phase = v1.PodSucceeded
	for _, tc := range []struct {
		name    string
		updates []podworkers.Update
		want    []string
	}{
		{"kubelet pod manager: a finished pod stays until its source removes it (its logs are served)",
			[]podworkers.Update{{Type: podworkers.SyncPodCreate, Pod: pod("a", "web")}, {Type: podworkers.SyncPodCreate, Pod: finished}},
			[]string{"a", "f"}},
		{"kubelet pod manager: a pod its source removed is gone at once, even while it is killed",
			[]podworkers.Update{{Type: podworkers.SyncPodCreate, Pod: pod("a", "web")}, {Type: podworkers.SyncPodKill, Pod: pod("a", "web")}},
			[]string{}},
		{"kubelet pod manager: an orphan only the runtime has is not there",
			[]podworkers.Update{{Type: podworkers.SyncPodKill, RuntimeOnly: true, Pod: pod("o", "orphan")}},
			[]string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			for _, u := range tc.updates {
				e.w.UpdatePod(u)
			}
			assert.ElementsMatch(t, tc.want, names(e.w.SourcePods()))
		})
	}
}

// A status-only change (RECONCILE) replaces the object a known pod's
// worker holds, with no work; an unknown pod is not taken.
func TestWorkersReplacePod(t *testing.T) {
	e := newEnv(t) // not running: no work happens
	a := pod("a", "web")
	e.w.UpdatePod(podworkers.Update{Type: podworkers.SyncPodCreate, Pod: a})
	newer := a.DeepCopy()
	newer.Status.Phase = v1.PodRunning
	e.w.ReplacePod(newer)
	require.Len(t, e.w.SourcePods(), 1)
	assert.Same(t, newer, e.w.SourcePods()[0])
	st, _ := e.w.State(a.UID)
	assert.Equal(t, podworkers.Syncing, st)

	e.w.ReplacePod(pod("b", "other"))
	_, known := e.w.State("b")
	assert.False(t, known, "an unknown pod is not created")
}

// A pod that arrives Failed or Succeeded (its source's view after a
// restart) is taken for done only if the status cache shows nothing of it
// running: the agent may have stopped between publishing the final status
// and terminating the pod, and then the pod must be terminated.
func TestWorkersTakeAFinishedPodForDoneOnlyIfNothingRuns(t *testing.T) {
	sandbox := func(s kc.SandboxState) *kc.SandboxStatus { return &kc.SandboxStatus{ID: "s", State: s} }
	container := func(s kc.ContainerState) *kc.ContainerStatus {
		return &kc.ContainerStatus{ID: "c", Name: "job", State: s}
	}
	for _, tc := range []struct {
		name     string
		relisted bool
		status   *kc.PodStatus // cached for the pod, if set
		want     podworkers.State
	}{
		{"no relist yet: nothing cached, as the kubelet's empty status", false, nil, podworkers.Terminated},
		{"relisted, not in the runtime", true, nil, podworkers.Terminated},
		{"sandbox and container stopped", true, &kc.PodStatus{SandboxStatuses: []*kc.SandboxStatus{sandbox(kc.SandboxStateNotReady)},
			ContainerStatuses: []*kc.ContainerStatus{container(kc.ContainerStateExited)}}, podworkers.Terminated},
		{"sandbox still ready", true, &kc.PodStatus{SandboxStatuses: []*kc.SandboxStatus{sandbox(kc.SandboxStateReady)},
			ContainerStatuses: []*kc.ContainerStatus{container(kc.ContainerStateExited)}}, podworkers.Syncing},
		{"a container still running", true, &kc.PodStatus{SandboxStatuses: []*kc.SandboxStatus{sandbox(kc.SandboxStateNotReady)},
			ContainerStatuses: []*kc.ContainerStatus{container(kc.ContainerStateRunning)}}, podworkers.Syncing},
		{"a cached error", true, nil, podworkers.Syncing},
		{"refused at admission: the cache is not asked", false, nil, podworkers.Terminated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := statuscache.New()
			p := pod("f", "job")
			p.Status.Phase = v1.PodSucceeded
			switch {
			case tc.status != nil:
				tc.status.ID = p.UID
				c.Set(p.UID, tc.status, nil, t0)
			case tc.name == "a cached error":
				c.Set(p.UID, nil, errors.New("runtime down"), t0)
			}
			if tc.relisted {
				c.UpdateTime(t0)
			}
			w, err := podworkers.New(podworkers.Config{PodSyncer: podworkers.PodSyncerFunc(nil), Cache: c})
			require.NoError(t, err)
			w.UpdatePod(podworkers.Update{Type: podworkers.SyncPodCreate, Pod: p, Refused: strings.HasPrefix(tc.name, "refused")})
			state, ok := w.State(p.UID)
			require.True(t, ok)
			assert.Equal(t, tc.want, state)
		})
	}
}

// A Sync that read the pod's status back after its last action says so
// (StatusReadAt), and the next Work takes that status: it waits for no
// newer read. Without it, the next Work waits for a status read after
// the previous one ended (here, the cache's UpdateTime).
func TestStatusReadAtLetsTheNextWorkTakeTheReadBack(t *testing.T) {
	for _, readBack := range []bool{true, false} {
		t.Run(map[bool]string{true: "read back", false: "not read back"}[readBack], func(t *testing.T) {
			clk := clocktesting.NewFakeClock(t0)
			c := statuscache.New()
			c.Set("a", &kc.PodStatus{ID: "a"}, nil, t0)
			back := &kc.PodStatus{ID: "a", IPs: []string{"127.0.0.1"}}
			var readAt time.Time
			calls := make(chan podworkers.Work, 10)
			w, err := podworkers.New(podworkers.Config{Clock: clk, Cache: c, Jitter: func(d time.Duration) time.Duration { return d },
				PodSyncer: podworkers.PodSyncerFunc(func(ctx context.Context, w podworkers.Work) error {
					if readAt.IsZero() { // the first Work started something, and read the pod back
						clk.Step(time.Second)
						readAt = clk.Now()
						c.Set("a", back, nil, readAt)
						if readBack {
							podworkers.StatusReadAt(ctx, readAt)
						}
						clk.Step(time.Second) // then published, say: the Work ends later
					}
					calls <- w
					return nil
				})})
			require.NoError(t, err)
			ctx, cancel := context.WithCancel(context.Background())
			ran := make(chan struct{})
			go func() { defer close(ran); _ = w.Run(ctx) }()
			defer func() { cancel(); <-ran }()

			w.UpdatePod(podworkers.Update{Type: podworkers.SyncPodCreate, Pod: pod("a", "web")})
			<-calls     // the clock is at the first Work's end from here on
			w.Sync("a") // an event, during or after the first Work
			if !readBack {
				c.UpdateTime(clk.Now().Add(time.Nanosecond)) // a relist after the Work's end
			}
			var second podworkers.Work
			select {
			case second = <-calls:
			case <-time.After(10 * time.Second):
				t.Fatal("no second Work within 10s")
			}
			assert.Same(t, back, second.Status, "the read-back status")
			if readBack {
				assert.Equal(t, readAt.Add(-time.Nanosecond), second.NewerThan)
			} else {
				assert.Equal(t, readAt.Add(time.Second), second.NewerThan, "the first Work's end")
			}
		})
	}
}
