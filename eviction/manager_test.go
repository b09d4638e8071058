package eviction

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit-dev/nodekit/admission"
	"github.com/nodekit-dev/nodekit/internal/poll"
)

// fakeNode is the manager's world: signals, pods with their stats, a
// killer that removes the pod, reclaimers that change the signals.
type fakeNode struct {
	mu        sync.Mutex
	clock     *clocktesting.FakeClock
	obs       map[string][2]int64
	pods      []*v1.Pod
	stats     []statsapi.PodStats
	killed    []Eviction
	killErr   error
	summErr   error
	reclaimed []string
	reclaim   map[string]func() // what each reclaimer does to the signals
	events    []string
}

func (f *fakeNode) Summary(context.Context) (*statsapi.Summary, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &statsapi.Summary{Pods: slices.Clone(f.stats)}, f.summErr
}

func (f *fakeNode) Signals(context.Context) (Observations, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := Observations{}
	for k, v := range f.obs {
		out[k] = Observation{Available: v[0], Capacity: v[1], Time: f.clock.Now()}
	}
	return out, nil
}

func (f *fakeNode) ActivePods() []*v1.Pod {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.pods)
}

func (f *fakeNode) KillPod(_ context.Context, e Eviction) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.killed = append(f.killed, e)
	f.pods = slices.DeleteFunc(f.pods, func(p *v1.Pod) bool { return p == e.Pod })
	return f.killErr
}

func (f *fakeNode) reclaimer(name string) func(context.Context) error {
	return func(context.Context) error {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.reclaimed = append(f.reclaimed, name)
		if do := f.reclaim[name]; do != nil {
			do()
		}
		return nil
	}
}

func (f *fakeNode) Eventf(o apiruntime.Object, typ, reason, format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	name := ""
	switch o := o.(type) {
	case *v1.ObjectReference:
		name = o.Name
	case metav1.Object:
		name = o.GetName()
	}
	f.events = append(f.events, fmt.Sprintf("%s %s %s: %s", typ, name, reason, fmt.Sprintf(format, args...)))
}

func (f *fakeNode) AnnotatedEventf(o apiruntime.Object, a map[string]string, typ, reason, format string, args ...any) {
	f.Eventf(o, typ, reason, format+" %v", append(args, a)...)
}

func (f *fakeNode) killedNames() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, e := range f.killed {
		out = append(out, e.Pod.Name)
	}
	return out
}

func newFake(obs map[string][2]int64) *fakeNode {
	return &fakeNode{clock: clocktesting.NewFakeClock(t0), obs: obs, reclaim: map[string]func(){}}
}

func (f *fakeNode) add(pod *v1.Pod, st statsapi.PodStats) {
	f.pods = append(f.pods, pod)
	f.stats = append(f.stats, st)
}

func (f *fakeNode) manager(t *testing.T, ts []Threshold, mod ...func(*Config)) *Manager {
	t.Helper()
	cfg := Config{Thresholds: ts, Summary: f, Signals: f, Pods: f, Killer: f, Recorder: f,
		NodeRef: &v1.ObjectReference{Kind: "Node", Name: "node-1"}, Clock: f.clock,
		Reclaimer: NodeReclaimerFuncs{Containers: f.reclaimer("containers"), Images: f.reclaimer("images")}}
	for _, m := range mod {
		m(&cfg)
	}
	m, err := New(cfg)
	require.NoError(t, err)
	return m
}

// sync steps the clock by the monitoring interval, then runs a pass.
func (f *fakeNode) sync(t *testing.T, m *Manager) []string {
	t.Helper()
	f.clock.Step(DefaultMonitoringInterval)
	evicted, err := m.Synchronize(context.Background())
	require.NoError(t, err)
	return names(evicted)
}

func TestSynchronizeEvictsOnePodPerPassInRankOrder(t *testing.T) {
	f := newFake(map[string][2]int64{SignalMemoryAvailable: {50 * Mi, 8 * Gi}})
	mem := rl("memory", "100Mi")
	f.add(mkPod("under", mem, nil), memStats("under", 50*Mi))
	f.add(mkPod("over-big", mem, nil), memStats("over-big", 900*Mi))
	f.add(mkPod("over-small", mem, nil), memStats("over-small", 200*Mi))
	m := f.manager(t, []Threshold{hard(SignalMemoryAvailable, qv("100Mi"))})

	assert.Equal(t, []string{"over-big"}, f.sync(t, m))
	assert.True(t, m.MemoryPressure())
	assert.False(t, m.DiskPressure())
	e := f.killed[0]
	assert.Equal(t, SignalMemoryAvailable, e.Signal)
	assert.Equal(t, int64(1), e.GracePeriodSeconds)
	assert.Equal(t, "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. "+
		"Container c was using 900Mi, request is 100Mi, has larger consumption of memory. ", e.Message)
	assert.Equal(t, []string{
		"Warning node-1 EvictionThresholdMet: Attempting to reclaim memory",
		"Warning over-big Evicted: " + e.Message + " map[offending_containers:c offending_containers_usage:900Mi starved_resource:memory]",
	}, f.events)
	assert.Equal(t, []string{"over-small"}, f.sync(t, m), "one pod per pass")
	assert.Equal(t, []string{"under"}, f.sync(t, m))
	assert.Empty(t, f.sync(t, m), "no pod left")
	assert.Equal(t, []string(nil), f.reclaimed, "memory has no node-level reclaim")
}

func TestSynchronizeNeverEvictsCriticalPods(t *testing.T) {
	f := newFake(map[string][2]int64{SignalMemoryAvailable: {50 * Mi, 8 * Gi}})
	f.add(mkPod("static", nil, nil, annotate("kubernetes.io/config.source", "file")), memStats("static", 4*Gi))
	f.add(mkPod("mirror", nil, nil, annotate("kubernetes.io/config.mirror", "x")), memStats("mirror", 3*Gi))
	f.add(mkPod("node-critical", nil, nil, priority(2000001000)), memStats("node-critical", 2*Gi))
	f.add(mkPod("cluster-critical", nil, nil, priority(2000000000)), memStats("cluster-critical", 2*Gi))
	m := f.manager(t, []Threshold{hard(SignalMemoryAvailable, qv("100Mi"))})
	assert.Empty(t, f.sync(t, m), "only critical pods")
	f.add(mkPod("web", nil, nil, priority(2000000)), memStats("web", 10*Mi))
	assert.Equal(t, []string{"web"}, f.sync(t, m), "the first pod of the ranking that is not critical")
}

func TestSynchronizeReclaimsDiskAtNodeLevelFirst(t *testing.T) {
	nodefs := []Threshold{{Signal: SignalNodeFsAvailable, Value: pct(0.1), MinReclaim: &Value{Quantity: q("5Gi")}}}
	imagefs := []Threshold{hard(SignalImageFsAvailable, pct(0.1))}
	low := map[string][2]int64{SignalNodeFsAvailable: {5 * Gi, 100 * Gi}, SignalImageFsAvailable: {5 * Gi, 100 * Gi}}
	setAvail := func(f *fakeNode, sig string, v int64) func() { return func() { f.obs[sig] = [2]int64{v, 100 * Gi} } }
	for _, tc := range []struct {
		rule      string
		ts        []Threshold
		layout    FsLayout
		freed     int64 // what deleting images frees
		reclaimed []string
		evicted   []string
	}{
		{"one filesystem: containers then images; enough freed, no eviction", nodefs, SharedFs, 20 * Gi, []string{"containers", "images"}, nil},
		{"freed above the threshold but not by the minimum reclaim: a pod is evicted", nodefs, SharedFs, 8 * Gi, []string{"containers", "images"}, []string{"p"}},
		{"dedicated imagefs: nodefs pressure frees nothing at node level", nodefs, DedicatedImageFs, 20 * Gi, nil, []string{"p"}},
		{"dedicated imagefs: imagefs pressure deletes containers then images", imagefs, DedicatedImageFs, 20 * Gi, []string{"containers", "images"}, nil},
		{"split imagefs: imagefs pressure deletes images only", imagefs, SplitImageFs, 20 * Gi, []string{"images"}, nil},
		{"split imagefs: nodefs pressure deletes containers only", nodefs, SplitImageFs, 0, []string{"containers"}, []string{"p"}},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			f := newFake(maps(low))
			f.add(mkPod("p", nil, nil), diskStats("p", Gi, 0, nil))
			sig := tc.ts[0].Signal
			f.reclaim["images"] = setAvail(f, sig, 5*Gi+tc.freed)
			m := f.manager(t, tc.ts, func(c *Config) { c.DiskInfo = layoutInfo(tc.layout) })
			assert.Equal(t, tc.evicted, f.sync(t, m))
			assert.Equal(t, tc.reclaimed, f.reclaimed)
			assert.True(t, m.DiskPressure())
		})
	}
}

func maps(m map[string][2]int64) map[string][2]int64 {
	out := map[string][2]int64{}
	for k, v := range m {
		out[k] = v
	}
	return out
}

type diskInfo struct{ image, container bool }

func (d diskInfo) HasDedicatedImageFs(context.Context) (bool, error)     { return d.image, nil }
func (d diskInfo) HasDedicatedContainerFs(context.Context) (bool, error) { return d.container, nil }

func layoutInfo(l FsLayout) DiskInfo {
	return diskInfo{image: l != SharedFs, container: l == SplitImageFs}
}

func TestSynchronizeLocalStorageLimitsFirst(t *testing.T) {
	f := newFake(map[string][2]int64{SignalMemoryAvailable: {50 * Mi, 8 * Gi}})
	f.add(mkPod("hog", nil, nil), memStats("hog", 4*Gi))
	withLimit := mkPod("disk", nil, rl("ephemeral-storage", "1Gi"))
	f.add(withLimit, diskStats("disk", 2*Gi, 0, nil))
	m := f.manager(t, []Threshold{hard(SignalMemoryAvailable, qv("100Mi"))})
	assert.Equal(t, []string{"disk"}, f.sync(t, m), "local storage evictions end the pass")
	assert.Equal(t, SignalEphemeralPodFsLimit, f.killed[0].Signal, "over the pod's limit, tested before the container's")
	assert.Nil(t, f.killed[0].Condition)
	assert.Equal(t, []string{"hog"}, f.sync(t, m))

	off := false
	f = newFake(nil)
	f.add(withLimit, diskStats("disk", 2*Gi, 0, nil))
	m = f.manager(t, []Threshold{}, func(c *Config) { c.LocalStorageCapacityIsolation = &off })
	assert.Empty(t, f.sync(t, m), "LocalStorageCapacityIsolation off")
	m = f.manager(t, []Threshold{})
	assert.Equal(t, []string{"disk"}, f.sync(t, m), "no threshold: local storage limits still enforced")
}

func TestSynchronizeSoftThreshold(t *testing.T) {
	f := newFake(map[string][2]int64{SignalMemoryAvailable: {512 * Mi, 8 * Gi}})
	f.add(mkPod("p", nil, nil, func(p *v1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr(int64(30)) }), memStats("p", Gi))
	ts, err := ParseFlags(Flags{Hard: str(""), Soft: "memory.available<1Gi", SoftGracePeriod: "memory.available=20s"})
	require.NoError(t, err)
	m := f.manager(t, ts, func(c *Config) { c.MaxPodGracePeriodSeconds = 60 })
	assert.Empty(t, f.sync(t, m))
	assert.True(t, m.MemoryPressure(), "the condition does not wait for the grace period")
	assert.Empty(t, f.sync(t, m))
	assert.Equal(t, []string{"p"}, f.sync(t, m), "20s after first met")
	assert.Equal(t, int64(30), f.killed[0].GracePeriodSeconds, "min(max pod grace period, the pod's own)")
}

func ptr[T any](v T) *T { return &v }

func TestSynchronizeContainerFsFollowsTheLayout(t *testing.T) {
	f := newFake(map[string][2]int64{SignalContainerFsAvailable: {5 * Gi, 100 * Gi}})
	f.add(mkPod("p", nil, nil), diskStats("p", Gi, 0, nil))
	ts, err := ParseFlags(Flags{Hard: str("imagefs.available<10%")})
	require.NoError(t, err)
	m := f.manager(t, ts, func(c *Config) { c.DiskInfo = layoutInfo(DedicatedImageFs); c.Reclaimer = nil })
	assert.Equal(t, []string{"p"}, f.sync(t, m), "containerfs.available<10%, from imagefs")
	assert.Equal(t, SignalContainerFsAvailable, f.killed[0].Signal)
}

func TestSynchronizeKillErrorStillCountsAndStatsErrorsEndThePass(t *testing.T) {
	f := newFake(map[string][2]int64{SignalMemoryAvailable: {50 * Mi, 8 * Gi}})
	f.add(mkPod("p", nil, nil), memStats("p", Gi))
	f.add(mkPod("q", nil, nil), memStats("q", Gi))
	f.killErr = errors.New("runtime down")
	m := f.manager(t, []Threshold{hard(SignalMemoryAvailable, qv("100Mi"))})
	assert.Equal(t, []string{"p"}, f.sync(t, m), "the kubelet's evictPod returns true on a kill error")
	f.summErr = errors.New("no stats")
	assert.Empty(t, f.sync(t, m))
	assert.True(t, m.MemoryPressure(), "conditions unchanged")
}

type failingDiskInfo struct{ calls int }

func (d *failingDiskInfo) HasDedicatedImageFs(context.Context) (bool, error) {
	d.calls++
	if d.calls == 1 {
		return false, errors.New("cadvisor not ready")
	}
	return false, nil
}
func (d *failingDiskInfo) HasDedicatedContainerFs(context.Context) (bool, error) { return false, nil }

func TestSynchronizeRetriesTheLayout(t *testing.T) {
	f := newFake(map[string][2]int64{SignalMemoryAvailable: {50 * Mi, 8 * Gi}})
	f.add(mkPod("p", nil, nil), memStats("p", Gi))
	d := &failingDiskInfo{}
	m := f.manager(t, nil, func(c *Config) { c.DiskInfo = d })
	_, err := m.Synchronize(context.Background())
	assert.EqualError(t, err, "eviction: HasDedicatedImageFs: cadvisor not ready")
	assert.Equal(t, []string{"p"}, f.sync(t, m))
	assert.Equal(t, 2, d.calls)
	f.sync(t, m)
	assert.Equal(t, 2, d.calls, "asked until known, then never again")
}

func TestObservationsFromSummary(t *testing.T) {
	now := metav1.NewTime(t0)
	s := &statsapi.Summary{Node: statsapi.NodeStats{
		Memory:           &statsapi.MemoryStats{Time: now, AvailableBytes: u64(Gi), WorkingSetBytes: u64(3 * Gi)},
		SystemContainers: []statsapi.ContainerStats{{Name: "pods", Memory: &statsapi.MemoryStats{Time: now, AvailableBytes: u64(Gi), WorkingSetBytes: u64(Gi)}}},
		Fs:               &statsapi.FsStats{Time: now, AvailableBytes: u64(10), CapacityBytes: u64(100), InodesFree: u64(5), Inodes: u64(50)},
		Runtime: &statsapi.RuntimeStats{ImageFs: &statsapi.FsStats{Time: now, AvailableBytes: u64(20), CapacityBytes: u64(200)},
			ContainerFs: &statsapi.FsStats{Time: now, InodesFree: u64(6), Inodes: u64(60)}},
		Rlimit: &statsapi.RlimitStats{Time: now, MaxPID: ptr(int64(4096)), NumOfRunningProcesses: ptr(int64(4050))},
	}}
	assert.Equal(t, Observations{
		SignalMemoryAvailable:            {Gi, 4 * Gi, t0},
		SignalAllocatableMemoryAvailable: {Gi, 2 * Gi, t0},
		SignalNodeFsAvailable:            {10, 100, t0},
		SignalNodeFsInodesFree:           {5, 50, t0},
		SignalImageFsAvailable:           {20, 200, t0},
		SignalContainerFsInodesFree:      {6, 60, t0},
		SignalPIDAvailable:               {46, 4096, t0},
	}, ObservationsFromSummary(s))
	assert.Empty(t, ObservationsFromSummary(&statsapi.Summary{}))

	// Without a SignalProvider the manager reads the summary's node.
	f := newFake(nil)
	m, err := New(Config{Summary: SummaryProviderFunc(func(context.Context) (*statsapi.Summary, error) { return s, nil }),
		Pods: ActivePodsFunc(func() []*v1.Pod { return nil }), Killer: f, Clock: f.clock,
		Thresholds: []Threshold{hard(SignalPIDAvailable, qv("100"))}})
	require.NoError(t, err)
	_, err = m.Synchronize(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []v1.NodeConditionType{v1.NodePIDPressure}, m.Conditions())
	assert.Equal(t, admission.PodAdmitResult{Reason: "Evicted", Message: "The node had condition: [PIDPressure]. "}, m.Admit(mkPod("x", nil, nil)))
	var h admission.PodAdmitHandler = m // the Dispatcher's admit handler, as it is
	assert.Equal(t, m.Admit(mkPod("x", nil, nil)), h.Admit(mkPod("x", nil, nil)))
}

func TestNewChecksConfig(t *testing.T) {
	f := newFake(nil)
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{}, "eviction: Config.[Killer Pods Summary]: Required value"},
		{Config{Summary: f, Pods: f, Killer: f, MonitoringInterval: -time.Second}, "eviction: Config.MonitoringInterval: Invalid value: -1s: must not be negative"},
		{Config{Summary: f, Pods: f, Killer: f, PressureTransitionPeriod: -time.Second}, "eviction: Config.PressureTransitionPeriod: Invalid value: -1s"},
		{Config{Summary: f, Pods: f, Killer: f, Thresholds: []Threshold{{Signal: SignalMemoryAvailable}, {Signal: "cpu.available"}}},
			`eviction: Config.Thresholds[1].Signal: Invalid value: "cpu.available": unknown signal`},
	} {
		_, err := New(tc.cfg)
		assert.ErrorContains(t, err, tc.want)
	}
	m, err := New(Config{Summary: f, Pods: f, Killer: f})
	require.NoError(t, err)
	assert.Equal(t, DefaultThresholds(), m.cfg.Thresholds)
	assert.Equal(t, 5*time.Minute, m.cfg.PressureTransitionPeriod)
	assert.Equal(t, 10*time.Second, m.cfg.MonitoringInterval)
	assert.True(t, m.localStorage)
}

func TestRunEveryIntervalUntilCancelled(t *testing.T) {
	f := newFake(map[string][2]int64{SignalMemoryAvailable: {50 * Mi, 8 * Gi}})
	f.add(mkPod("a", nil, nil), memStats("a", 2*Gi))
	f.add(mkPod("b", nil, nil), memStats("b", Gi))
	var cleaned sync.Map
	var looks atomic.Int32
	m := f.manager(t, []Threshold{hard(SignalMemoryAvailable, qv("100Mi"))}, func(c *Config) {
		c.PodCleanedUp = func(p *v1.Pod) bool { looks.Add(1); _, ok := cleaned.Load(p.Name); return ok }
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- m.Run(ctx) }()
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		poll.Eventually(t, cond, 5*time.Second, time.Millisecond, what)
	}
	waitFor("a evicted at once", func() bool { return slices.Equal(f.killedNames(), []string{"a"}) })
	// Waiting for a's clean-up: polls every second, up to 30s.
	waitFor("the clean-up timer and ticker", func() bool { return f.clock.HasWaiters() })
	f.clock.Step(PodCleanupPollInterval)
	waitFor("the first look", func() bool { return looks.Load() == 1 })
	assert.Equal(t, []string{"a"}, f.killedNames(), "not cleaned at the first look")
	cleaned.Store("a", true)
	f.clock.Step(PodCleanupPollInterval)
	waitFor("b evicted right after a's clean-up", func() bool { return slices.Equal(f.killedNames(), []string{"a", "b"}) })
	// b is never cleaned up: 30s, then the next pass.
	for i := 0; i < 30; i++ {
		waitFor("waiting for b", func() bool { return f.clock.HasWaiters() })
		f.clock.Step(PodCleanupPollInterval)
	}
	waitFor("the monitoring interval's timer", func() bool { return f.clock.HasWaiters() })
	assert.ErrorContains(t, m.Run(ctx), "Run called twice")
	cancel()
	require.NoError(t, <-done)
}
