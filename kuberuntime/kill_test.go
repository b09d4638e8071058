package kuberuntime_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit-dev/nodekit/internal/poll"
	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/kuberuntime"
	"github.com/nodekit-dev/nodekit/runtime/fake"
)

// stubbornImage's containers ignore SIGTERM: StopContainer waits out the
// whole grace period on the fake clock.
const stubbornImage = "nodekit.local/stubborn:1"

// stopCall is one StopContainer: the container's name and the grace period
// it was given.
type stopCall struct {
	name    string
	timeout int64
}

// stopRecorder records the StopContainer calls of a Manager, in the order
// they began.
type stopRecorder struct {
	kuberuntime.RuntimeService
	mu    sync.Mutex
	calls []stopCall
}

func (r *stopRecorder) StopContainer(ctx context.Context, id string, timeout int64) error {
	st, err := r.RuntimeService.ContainerStatus(ctx, id, false)
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.calls = append(r.calls, stopCall{st.Status.Metadata.Name, timeout})
	r.mu.Unlock()
	return r.RuntimeService.StopContainer(ctx, id, timeout)
}

func (r *stopRecorder) stops() []stopCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]stopCall(nil), r.calls...)
}

// newKillEnv is a managerEnv whose Manager's StopContainer calls are
// recorded, on a fake runtime that also knows stubbornImage.
func newKillEnv(t *testing.T) (*managerEnv, *stopRecorder) {
	clk := clocktesting.NewFakeClock(time.Unix(1700000000, 0))
	f, client := startFake(t, fake.WithClock(clk), fake.WithImages(stubbornImage),
		fake.WithBehavior(stubbornImage, func(*runtimeapi.ContainerConfig) fake.Program { return fake.Program{IgnoreSIGTERM: true} }))
	rec := &stopRecorder{RuntimeService: client}
	logs := t.TempDir()
	m, err := kuberuntime.NewManager(kuberuntime.ManagerConfig{Runtime: rec, Images: client, Clock: clk,
		PodLogsDir: logs, DNS: kuberuntime.HostDNS("", nil, "")})
	require.NoError(t, err)
	return &managerEnv{t: t, clock: clk, fake: f, client: client, m: m, ctx: context.Background(), logs: logs}, rec
}

// syncUntilRunning syncs the pod until every named container runs.
func (e *managerEnv) syncUntilRunning(pod *v1.Pod, names ...string) *kc.PodStatus {
	e.t.Helper()
	var st *kc.PodStatus
	for range 10 {
		var res *kuberuntime.SyncResult
		res, st = e.sync(pod, nil)
		require.NoError(e.t, res.Err())
		all := true
		for _, n := range names {
			cs := st.FindContainerStatusByName(n)
			all = all && cs != nil && cs.State == kc.ContainerStateRunning
		}
		if all {
			return st
		}
	}
	require.FailNow(e.t, "containers not running", "%v", names)
	return nil
}

// The kubelet's killContainer (kuberuntime_container.go): the override
// replaces the grace period first; the preStop hook runs whenever the grace
// period left is positive, override or not; the 2s floor
// (minimumGracePeriodInSeconds) applies last, to the override too.
func TestKillContainerGracePeriodOverrideAndPreStop(t *testing.T) {
	e, rec := newKillEnv(t)
	i64 := func(v int64) *int64 { return &v }
	preStop := &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"/testbin", "echo", "bye"}}}}
	for i, tc := range []struct {
		name        string
		grace       *int64 // spec.terminationGracePeriodSeconds
		deletion    *int64 // metadata.deletionGracePeriodSeconds
		lifecycle   *v1.Lifecycle
		override    *int64
		wantPreStop bool
		wantTimeout int64
	}{
		{"kubelet killContainer: no override: preStop, then the pod's grace period", i64(30), nil, preStop, nil, true, 30},
		{"kubelet killContainer: override 5 replaces the grace period, preStop still runs within it", i64(30), nil, preStop, i64(5), true, 5},
		{"kubelet killContainer: override 0 skips preStop (no time left), stop gets the 2s floor", i64(30), nil, preStop, i64(0), false, 2},
		{"kubelet killContainer: override 1 is floored at minimumGracePeriodInSeconds", i64(30), nil, nil, i64(1), false, 2},
		{"kubelet killContainer: grace period 1 is floored at 2s", i64(1), nil, nil, nil, false, 2},
		{"kubelet setTerminationGracePeriod: deletionGracePeriodSeconds wins over the spec", i64(30), i64(7), preStop, nil, true, 7},
		{"kubelet killContainer: deletion grace period 0: no preStop, 2s floor", i64(30), i64(0), preStop, nil, false, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := podSpec("grace"+string(rune('a'+i)), v1.RestartPolicyAlways,
				v1.Container{Name: "c", Image: testImage, Args: []string{"serve"}, Lifecycle: tc.lifecycle})
			pod.Spec.TerminationGracePeriodSeconds = tc.grace
			pod.DeletionGracePeriodSeconds = tc.deletion
			st := e.syncUntilRunning(pod, "c")
			execs := e.fake.Calls("ExecSync")
			before := len(rec.stops())

			require.NoError(t, e.m.KillPod(e.ctx, pod, kuberuntime.PodFromStatus(st), tc.override))
			assert.Equal(t, tc.wantPreStop, e.fake.Calls("ExecSync") > execs, "preStop ran")
			assert.Equal(t, []stopCall{{"c", tc.wantTimeout}}, rec.stops()[before:])
		})
	}
}

// sidecarSpec is [init a (exits 0), sidecar s1, sidecar s2] + regular m1,
// m2, all serving until stopped.
func sidecarSpec(name string, policy v1.RestartPolicy, grace int64) *v1.Pod {
	always := v1.ContainerRestartPolicyAlways
	pod := podSpec(name, policy,
		v1.Container{Name: "m1", Image: testImage, Args: []string{"serve"}},
		v1.Container{Name: "m2", Image: testImage, Args: []string{"serve"}})
	pod.Spec.InitContainers = []v1.Container{
		{Name: "a", Image: testImage, Args: []string{"exit", "0"}},
		{Name: "s1", Image: testImage, Args: []string{"serve"}, RestartPolicy: &always},
		{Name: "s2", Image: testImage, Args: []string{"serve"}, RestartPolicy: &always},
	}
	pod.Spec.TerminationGracePeriodSeconds = &grace
	return pod
}

func names(calls []stopCall) []string {
	var out []string
	for _, c := range calls {
		out = append(out, c.name)
	}
	return out
}

// The kubelet's killContainersWithSyncResult with its terminationOrdering
// (kuberuntime_termination_order.go): regular containers stop first, in
// parallel; each sidecar waits until every regular container and every
// later sidecar has exited, so sidecars stop in reverse spec order.
func TestKillPodStopsSidecarsAfterRegularContainersInReverseOrder(t *testing.T) {
	e, rec := newKillEnv(t)
	pod := sidecarSpec("order", v1.RestartPolicyAlways, 30)
	st := e.syncUntilRunning(pod, "s1", "s2", "m1", "m2")

	require.NoError(t, e.m.KillPod(e.ctx, pod, kuberuntime.PodFromStatus(st), nil))
	got := rec.stops()
	require.Len(t, got, 4)
	assert.ElementsMatch(t, []string{"m1", "m2"}, names(got[:2]), "regular containers first")
	assert.Equal(t, []stopCall{{"s2", 30}, {"s1", 30}}, got[2:], "then sidecars, last first, with the time left")
	st, err := e.m.GetPodStatus(e.ctx, pod.UID, pod.Name, pod.Namespace)
	require.NoError(t, err)
	assert.Empty(t, st.RunningContainers())
}

// terminationOrdering.waitForTurn waits no longer than the grace period;
// killContainer then passes down what is left of it, at least 2s.
func TestKillPodSidecarWaitsAtMostItsGracePeriod(t *testing.T) {
	e, rec := newKillEnv(t)
	pod := sidecarSpec("stubborn", v1.RestartPolicyAlways, 30)
	pod.Spec.InitContainers = pod.Spec.InitContainers[:2] // a, s1
	pod.Spec.Containers = []v1.Container{{Name: "m", Image: stubbornImage}}
	st := e.syncUntilRunning(pod, "s1", "m")

	done := make(chan error, 1)
	go func() { done <- e.m.KillPod(e.ctx, pod, kuberuntime.PodFromStatus(st), nil) }()
	// m's stop waits out its 30s on the clock, s1 waits for its turn as long.
	poll.Eventually(t, func() bool { return e.clock.Waiters() >= 2 }, 5*time.Second, time.Millisecond)
	assert.Equal(t, []stopCall{{"m", 30}}, rec.stops(), "s1 waits for m")
	e.clock.Step(30 * time.Second)
	require.NoError(t, <-done)
	assert.Equal(t, []stopCall{{"m", 30}, {"s1", 2}}, rec.stops(), "s1 gets what is left, floored at 2s")
	assert.Equal(t, 137, statusOf(t, e, pod, "m").ExitCode, "m was SIGKILLed")
}

func statusOf(t *testing.T, e *managerEnv, pod *v1.Pod, name string) *kc.ContainerStatus {
	t.Helper()
	st, err := e.m.GetPodStatus(e.ctx, pod.UID, pod.Name, pod.Namespace)
	require.NoError(t, err)
	cs := st.FindContainerStatusByName(name)
	require.NotNil(t, cs, name)
	return cs
}

// TestPreStopSleep: the sleep action holds the stop for its seconds (on
// the manager's clock); seconds 0 does not wait at all.
func TestPreStopSleep(t *testing.T) {
	e, rec := newKillEnv(t)
	for _, tc := range []struct {
		name    string
		seconds int64
	}{{"sleep 0: stopped at once", 0}, {"sleep 5: stopped after 5s", 5}} {
		t.Run(tc.name, func(t *testing.T) {
			grace := int64(30)
			pod := podSpec("sleep"+strconv.FormatInt(tc.seconds, 10), v1.RestartPolicyAlways, v1.Container{Name: "c", Image: testImage,
				Args: []string{"serve"}, Lifecycle: &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: tc.seconds}}}})
			pod.Spec.TerminationGracePeriodSeconds = &grace
			st := e.syncUntilRunning(pod, "c")
			before := len(rec.stops())
			done := make(chan error, 1)
			go func() { done <- e.m.KillPod(e.ctx, pod, kuberuntime.PodFromStatus(st), nil) }()
			if tc.seconds > 0 {
				poll.Eventually(t, e.clock.HasWaiters, 10*time.Second, time.Millisecond, "the sleep waits on the clock")
				assert.Len(t, rec.stops(), before, "not stopped while sleeping")
				e.clock.Step(time.Duration(tc.seconds) * time.Second)
			}
			select {
			case err := <-done:
				require.NoError(t, err)
			case <-time.After(10 * time.Second):
				t.Fatal("KillPod did not return")
			}
			assert.Equal(t, []stopCall{{"c", grace - tc.seconds}}, rec.stops()[before:], "the sleep's time comes off the grace period")
		})
	}
}
