package pleg

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit-dev/nodekit/internal/poll"
	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/statuscache"
)

func TestMain(m *testing.M) {
	code := m.Run()
	closeBench()
	if err := goleak.Find(); code == 0 && err != nil {
		fmt.Fprintln(os.Stderr, "goleak:", err)
		code = 1
	}
	os.Exit(code)
}

const (
	running = kc.ContainerStateRunning
	exited  = kc.ContainerStateExited
	created = kc.ContainerStateCreated
	unknown = kc.ContainerStateUnknown
)

type env struct {
	rt      *stubRuntime
	cache   *recordingCache
	clock   *clocktesting.FakeClock
	g       *GenericPLEG
	metrics *countMetrics
}

func newEnv(cfg Config) *env {
	e := &env{rt: newStubRuntime(), cache: newRecordingCache(), clock: clocktesting.NewFakeClock(time.Unix(1000, 0)),
		metrics: &countMetrics{}}
	cfg.Runtime, cfg.Cache, cfg.Clock = e.rt, e.cache, e.clock
	if cfg.Metrics == nil {
		cfg.Metrics = e.metrics
	}
	g, err := NewGeneric(cfg)
	if err != nil {
		panic(err)
	}
	e.g = g
	return e
}

// drain returns the events sent so far as "uid/type/id" strings.
func drain(ch <-chan *PodLifecycleEvent) []string {
	var out []string
	for {
		select {
		case e := <-ch:
			out = append(out, string(e.ID)+"/"+string(e.Type)+"/"+e.ContainerID)
		default:
			return out
		}
	}
}

// A changed pod whose cached status (read back after its sync, say) already
// shows what the listing found is not read again: the status is kept, the
// relist vouches for it as of its start, and its events are sent.
func TestRelistKeepsACachedStatusTheListingShows(t *testing.T) {
	type st = map[string]kc.ContainerState
	cs := func(id string, s kc.ContainerState) *kc.ContainerStatus { return &kc.ContainerStatus{ID: id, State: s} }
	sb := func(id string, s kc.SandboxState) *kc.SandboxStatus { return &kc.SandboxStatus{ID: id, State: s} }
	ready, notReady := kc.SandboxStateReady, kc.SandboxStateNotReady
	for _, tc := range []struct {
		name       string
		sandboxes  st // listed at the second relist
		containers st
		cached     *kc.PodStatus
		cachedErr  error
		read       bool // GetPodStatus called
	}{
		{name: "same sandbox and containers, same states", sandboxes: st{"s1": running}, containers: st{"c1": running, "c0": exited},
			cached: &kc.PodStatus{SandboxStatuses: []*kc.SandboxStatus{sb("s1", ready)},
				ContainerStatuses: []*kc.ContainerStatus{cs("c1", running), cs("c0", exited)}}},
		{name: "a container's state differs", sandboxes: st{"s1": running}, containers: st{"c1": running},
			cached: &kc.PodStatus{SandboxStatuses: []*kc.SandboxStatus{sb("s1", ready)},
				ContainerStatuses: []*kc.ContainerStatus{cs("c1", created)}}, read: true},
		{name: "the sandbox's state differs", sandboxes: st{"s1": exited}, containers: st{"c1": exited},
			cached: &kc.PodStatus{SandboxStatuses: []*kc.SandboxStatus{sb("s1", ready)},
				ContainerStatuses: []*kc.ContainerStatus{cs("c1", exited)}}, read: true},
		{name: "a sandbox not ready lists as exited", sandboxes: st{"s1": exited}, containers: st{"c1": exited},
			cached: &kc.PodStatus{SandboxStatuses: []*kc.SandboxStatus{sb("s1", notReady)},
				ContainerStatuses: []*kc.ContainerStatus{cs("c1", exited)}}},
		{name: "a container the cache lacks", sandboxes: st{"s1": running}, containers: st{"c1": running, "c2": running},
			cached: &kc.PodStatus{SandboxStatuses: []*kc.SandboxStatus{sb("s1", ready)},
				ContainerStatuses: []*kc.ContainerStatus{cs("c1", running)}}, read: true},
		{name: "a container since removed", sandboxes: st{"s1": running}, containers: st{"c2": running},
			cached: &kc.PodStatus{SandboxStatuses: []*kc.SandboxStatus{sb("s1", ready)},
				ContainerStatuses: []*kc.ContainerStatus{cs("c1", exited), cs("c2", running)}}, read: true},
		{name: "another sandbox", sandboxes: st{"s2": running}, containers: st{"c1": running},
			cached: &kc.PodStatus{SandboxStatuses: []*kc.SandboxStatus{sb("s1", ready)},
				ContainerStatuses: []*kc.ContainerStatus{cs("c1", running)}}, read: true},
		{name: "state unknown", sandboxes: st{"s1": running}, containers: st{"c1": unknown},
			cached: &kc.PodStatus{SandboxStatuses: []*kc.SandboxStatus{sb("s1", ready)},
				ContainerStatuses: []*kc.ContainerStatus{cs("c1", unknown)}}, read: true},
		{name: "an error cached", sandboxes: st{"s1": running}, containers: st{"c1": running},
			cached: &kc.PodStatus{SandboxStatuses: []*kc.SandboxStatus{sb("s1", ready)},
				ContainerStatuses: []*kc.ContainerStatus{cs("c1", running)}}, cachedErr: errors.New("boom"), read: true},
		{name: "nothing cached", sandboxes: st{"s1": running}, containers: st{"c1": running}, read: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt, cache := newStubRuntime(), statuscache.New()
			clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
			g, err := NewGeneric(Config{Runtime: rt, Cache: cache, Clock: clk})
			require.NoError(t, err)
			ctx := context.Background()
			g.Relist(ctx) // nothing yet: every container listed next is new
			rt.set("p", tc.sandboxes, tc.containers)
			if tc.cached != nil {
				tc.cached.ID = "p"
				cache.Set("p", tc.cached, tc.cachedErr, clk.Now()) // the sync's read-back
			}
			clk.Step(time.Second)
			listed := clk.Now()
			g.Relist(ctx)
			assert.NotEmpty(t, drain(g.Watch()), "the listing's events are sent either way")
			wantReads := 0
			if tc.read {
				wantReads = 1
			}
			assert.Equal(t, wantReads, rt.calls["p"], "GetPodStatus calls")
			done, cancel := context.WithCancel(ctx)
			cancel() // data already there wins over a done ctx
			got, err := cache.GetNewerThan(done, "p", listed.Add(-time.Nanosecond))
			require.NoError(t, err, "the pod's status is as new as the listing")
			if !tc.read {
				assert.Same(t, tc.cached, got, "the cached status is kept")
			}
		})
	}
}

func TestRelistTransitions(t *testing.T) {
	type st = map[string]kc.ContainerState
	for _, tc := range []struct {
		name     string
		before   st // containers at the first relist (nil: pod absent)
		after    st
		want     []string
		deleted  bool
		statuses int // GetPodStatus calls in the second relist
	}{
		{"new running container", nil, st{"c1": running}, []string{"p/ContainerStarted/c1"}, false, 1},
		{"created is unknown: cache refreshed, no event", nil, st{"c1": created}, nil, false, 1},
		{"created to running", st{"c1": created}, st{"c1": running}, []string{"p/ContainerStarted/c1"}, false, 1},
		{"running to exited", st{"c1": running}, st{"c1": exited}, []string{"p/ContainerDied/c1"}, false, 1},
		{"exited to removed", st{"c1": exited, "c2": running}, st{"c2": running}, []string{"p/ContainerRemoved/c1"}, false, 1},
		{"running to removed", st{"c1": running, "c2": running}, st{"c2": running}, []string{"p/ContainerDied/c1", "p/ContainerRemoved/c1"}, false, 1},
		{"running to unknown: ContainerChanged is not sent", st{"c1": running}, st{"c1": unknown}, nil, false, 1},
		{"exited to running (restart in place)", st{"c1": exited}, st{"c1": running}, []string{"p/ContainerStarted/c1"}, false, 1},
		{"new exited container", nil, st{"c1": exited}, []string{"p/ContainerDied/c1"}, false, 1},
		{"nothing changed", st{"c1": running}, st{"c1": running}, nil, false, 0},
		{"pod gone: cache entry deleted", st{"c1": exited}, nil, []string{"p/ContainerRemoved/c1"}, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(Config{})
			ctx := context.Background()
			if tc.before != nil {
				e.rt.set("p", nil, tc.before)
			}
			e.g.Relist(ctx)
			drain(e.g.Watch())
			calls := e.rt.calls["p"]
			e.rt.set("p", nil, tc.after)
			e.clock.Step(time.Second)
			e.g.Relist(ctx)
			got := drain(e.g.Watch())
			sort.Strings(got)
			sort.Strings(tc.want)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.statuses, e.rt.calls["p"]-calls, "status refreshes")
			assert.Equal(t, tc.deleted, len(e.cache.deletes) == 1, "cache delete")
			assert.Equal(t, e.clock.Now(), e.cache.times[len(e.cache.times)-1], "cache time is the relist start")
		})
	}
}

func TestRelistSandboxEvents(t *testing.T) {
	e := newEnv(Config{})
	ctx := context.Background()
	e.rt.set("p", map[string]kc.ContainerState{"sb": running}, nil)
	e.g.Relist(ctx)
	assert.Equal(t, []string{"p/ContainerStarted/sb"}, drain(e.g.Watch()))
	e.rt.set("p", map[string]kc.ContainerState{"sb": exited}, nil)
	e.g.Relist(ctx)
	assert.Equal(t, []string{"p/ContainerDied/sb"}, drain(e.g.Watch()))
}

func TestRelistRetriesFailedRefresh(t *testing.T) {
	e := newEnv(Config{})
	ctx := context.Background()
	boom := errors.New("boom")
	e.rt.statusErr["p"] = boom
	e.rt.set("p", nil, map[string]kc.ContainerState{"c1": running})
	e.g.Relist(ctx)
	assert.Empty(t, drain(e.g.Watch()), "no events while the status can't be read")
	assert.Equal(t, boom, e.cache.errs["p"], "the error is cached for pod workers")

	e.g.Relist(ctx)
	assert.Empty(t, drain(e.g.Watch()))
	assert.Equal(t, 2, e.rt.calls["p"], "retried on the next relist")

	delete(e.rt.statusErr, "p")
	e.g.Relist(ctx)
	assert.Equal(t, []string{"p/ContainerStarted/c1"}, drain(e.g.Watch()), "events once the refresh succeeds")
	e.g.Relist(ctx)
	assert.Equal(t, 3, e.rt.calls["p"], "no more refreshes once it succeeded")

	// A pod that failed with no further change is still reinspected.
	e.rt.statusErr["p"] = boom
	e.rt.set("p", nil, map[string]kc.ContainerState{"c1": exited})
	e.g.Relist(ctx)
	e.rt.statusErr["p"] = nil
	e.g.Relist(ctx)
	assert.Equal(t, []string{"p/ContainerDied/c1"}, drain(e.g.Watch()))
}

func TestHealthy(t *testing.T) {
	e := newEnv(Config{})
	ok, err := e.g.Healthy()
	assert.False(t, ok)
	assert.EqualError(t, err, "pleg has yet to be successful")

	e.g.Relist(context.Background())
	ok, err = e.g.Healthy()
	assert.True(t, ok)
	assert.NoError(t, err)

	e.clock.Step(3 * time.Minute)
	ok, _ = e.g.Healthy()
	assert.True(t, ok, "at the threshold")

	// A failing relist does not count as seen.
	e.rt.listErr = errors.New("runtime down")
	e.g.Relist(context.Background())
	e.clock.Step(time.Second)
	ok, err = e.g.Healthy()
	assert.False(t, ok)
	assert.EqualError(t, err, "pleg was last seen active 3m1s ago; threshold is 3m0s")

	e.rt.listErr = nil
	e.g.Relist(context.Background())
	ok, _ = e.g.Healthy()
	assert.True(t, ok)
}

func TestRelistedClosesAtTheFirstSuccessfulRelist(t *testing.T) {
	e := newEnv(Config{})
	closed := func() bool {
		select {
		case <-e.g.Relisted():
			return true
		default:
			return false
		}
	}
	assert.False(t, closed(), "before any relist")
	e.rt.listErr = errors.New("runtime down")
	e.g.Relist(context.Background())
	assert.False(t, closed(), "after a failed relist")
	e.rt.listErr = nil
	e.rt.set("p", nil, map[string]kc.ContainerState{"c1": running})
	e.g.Relist(context.Background())
	require.True(t, closed(), "after a relist")
	assert.Len(t, e.cache.sets["p"], 1, "the relist's statuses are in the cache once it is closed")
	assert.Len(t, e.cache.times, 1, "and the cache's time moved")
	e.g.Relist(context.Background()) // closes once only
	assert.True(t, closed())
}

func TestChannelOverflowDropsAndCounts(t *testing.T) {
	e := newEnv(Config{ChannelCapacity: 2})
	e.rt.set("p", nil, map[string]kc.ContainerState{"a": running, "b": running, "c": running})
	e.g.Relist(context.Background())
	assert.Len(t, drain(e.g.Watch()), 2)
	assert.Equal(t, 1.0, float64(e.metrics.discarded.Load()))
}

func TestParallelRefreshKeepsPerPodOrder(t *testing.T) {
	e := newEnv(Config{Parallelism: 4})
	ctx := context.Background()
	var pods []types.UID
	for i := 0; i < 20; i++ {
		uid := types.UID(string(rune('a' + i)))
		pods = append(pods, uid)
		e.rt.set(uid, nil, map[string]kc.ContainerState{"x-" + string(uid): running})
	}
	e.g.Relist(ctx)
	drain(e.g.Watch())
	for _, uid := range pods {
		e.rt.set(uid, nil, nil) // running container vanished: Died then Removed
	}
	e.g.Relist(ctx)
	got := drain(e.g.Watch())
	require.Len(t, got, 40)
	seenDied := map[string]bool{}
	for _, ev := range got {
		parts := strings.SplitN(ev, "/", 3)
		uid, typ := parts[0], parts[1]
		if typ == string(ContainerDied) {
			seenDied[uid] = true
		} else {
			assert.True(t, seenDied[uid], "pod %s: Removed after Died", uid)
		}
	}
	assert.Len(t, e.cache.deletes, 20)
}

func TestRunRelistsEveryPeriodUntilCancelled(t *testing.T) {
	e := newEnv(Config{RelistPeriod: time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { assert.NoError(t, e.g.Run(ctx)); close(done) }()
	relists := func() int { e.cache.mu.Lock(); defer e.cache.mu.Unlock(); return len(e.cache.times) }
	for i := 1; i <= 3; i++ {
		poll.Eventually(t, func() bool { return relists() >= i && e.clock.HasWaiters() }, 10*time.Second, 0,
			"relist %d done and Run waiting on the fake clock", i)
		e.clock.Step(time.Second)
	}
	cancel()
	<-done
	assert.GreaterOrEqual(t, relists(), 3)
}

func TestConstructorsValidate(t *testing.T) {
	_, err := NewGeneric(Config{})
	assert.EqualError(t, err, "pleg: Config.Runtime is nil")
	_, err = NewGeneric(Config{Runtime: newStubRuntime()})
	assert.EqualError(t, err, "pleg: Config.Cache is nil")
	_, err = NewEvented(EventedConfig{Config: Config{Runtime: newStubRuntime(), Cache: newRecordingCache()}})
	assert.EqualError(t, err, "pleg: EventedConfig.Events is nil")
}

func TestRunClosesWatchAndRunsOnce(t *testing.T) {
	e := newEnv(Config{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.NoError(t, e.g.Run(ctx))
	_, open := <-e.g.Watch()
	assert.False(t, open, "Watch is closed once Run returns")
	assert.EqualError(t, e.g.Run(context.Background()), "pleg: Run was already called")
	e.rt.set("p", nil, map[string]kc.ContainerState{"a": running})
	e.g.Relist(context.Background()) // events after Run are dropped, not a panic
}

func TestRunningCounts(t *testing.T) {
	e := newEnv(Config{})
	e.rt.set("p", map[string]kc.ContainerState{"sb": running}, map[string]kc.ContainerState{"a": running, "b": exited})
	e.rt.set("q", map[string]kc.ContainerState{"sb2": exited}, map[string]kc.ContainerState{"c": exited})
	e.g.Relist(context.Background())
	e.metrics.mu.Lock()
	defer e.metrics.mu.Unlock()
	assert.Equal(t, 1, e.metrics.pods, "one pod has a running sandbox")
	assert.Equal(t, map[kc.ContainerState]int{running: 1, exited: 2}, e.metrics.containers)
	assert.Equal(t, time.Unix(1000, 0), e.metrics.seen)
}
