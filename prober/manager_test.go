package prober

import (
	"context"
	"errors"
	"fmt"
	"os"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit-dev/nodekit/internal/poll"
	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/prober/probe"
)

func TestMain(m *testing.M) {
	if os.Getenv(targetEnv) != "" {
		serveTarget() // BenchmarkManyWorkers' child process
		return
	}
	goleak.VerifyTestMain(m)
}

// statuses is a StatusProvider the tests edit.
type statuses struct {
	mu sync.Mutex
	m  map[types.UID]*kc.PodStatus
}

func (s *statuses) Get(uid types.UID) (*kc.PodStatus, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.m[uid]; ok {
		return st, nil
	}
	return nil, errors.New("no status")
}

func (s *statuses) set(uid types.UID, name, id string, state kc.ContainerState, started time.Time, exit int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[uid] = &kc.PodStatus{ID: uid, IPs: []string{"127.1.0.1"}, ContainerStatuses: []*kc.ContainerStatus{
		{ID: id, Name: name, State: state, StartedAt: started, ExitCode: exit}}}
}

// script answers probes from a queue per probe type (default: success).
type script struct {
	mu    sync.Mutex
	next  map[string][]probe.Result
	errs  map[string]int
	calls map[string]int
}

func newScript() *script {
	return &script{next: map[string][]probe.Result{}, errs: map[string]int{}, calls: map[string]int{}}
}

func kind(p *v1.Probe) string {
	switch {
	case p.Exec != nil:
		return p.Exec.Command[0]
	case p.HTTPGet != nil:
		return p.HTTPGet.Path
	}
	return "?"
}

func (s *script) Run(_ context.Context, p *v1.Probe, _ ProbeTarget) (probe.Result, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := kind(p)
	s.calls[k]++
	if s.errs[k] > 0 {
		s.errs[k]--
		return probe.Unknown, "", errors.New("probe errored")
	}
	if q := s.next[k]; len(q) > 0 {
		s.next[k] = q[1:]
		return q[0], "scripted", nil
	}
	return probe.Success, "", nil
}

func (s *script) push(k string, rs ...probe.Result) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next[k] = append(s.next[k], rs...)
}

func (s *script) count(k string) int { s.mu.Lock(); defer s.mu.Unlock(); return s.calls[k] }

type env struct {
	t      *testing.T
	clock  *clocktesting.FakeClock
	st     *statuses
	script *script
	m      *Manager
	pod    *v1.Pod
}

// A probe of each type, told apart by their exec command.
func execProbe(cmd string) *v1.Probe {
	return &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{cmd}}}}
}

func newEnv(t *testing.T, c v1.Container) *env {
	clk := clocktesting.NewFakeClock(time.Unix(10000, 0))
	e := &env{t: t, clock: clk, st: &statuses{m: map[types.UID]*kc.PodStatus{}}, script: newScript()}
	var err error
	e.m, err = New(Config{Statuses: e.st, Runner: e.script, Clock: clk, Rand: func() float64 { return 0 }})
	require.NoError(t, err)
	c.Name = "c"
	e.pod = &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid"},
		Spec: v1.PodSpec{RestartPolicy: v1.RestartPolicyAlways, Containers: []v1.Container{c}}}
	e.m.AddPod(e.pod)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { drainUpdates(e.m, stop); close(done) }()
	t.Cleanup(func() { close(stop); <-done })
	return e
}

func drainUpdates(m *Manager, stop <-chan struct{}) {
	for {
		select {
		case <-m.liveness.updates:
		case <-m.readiness.updates:
		case <-m.startup.updates:
		case <-stop:
			return
		}
	}
}

func (e *env) probe(t ProbeType) bool {
	w := e.m.worker("uid", "c", t)
	require.NotNil(e.t, w)
	return w.doProbe(context.Background())
}

func (e *env) result(r *Results, id string) probe.Result {
	res, ok := r.Get(id)
	if !ok {
		return probe.Result("none")
	}
	return res
}

func TestInitialResultsAndThresholds(t *testing.T) {
	e := newEnv(t, v1.Container{
		LivenessProbe:  execProbe("live"),
		ReadinessProbe: &v1.Probe{ProbeHandler: execProbe("ready").ProbeHandler, SuccessThreshold: 2},
	})
	e.st.set("uid", "c", "id1", kc.ContainerStateRunning, e.clock.Now(), 0)
	e.script.push("live", probe.Failure, probe.Failure, probe.Failure)
	e.script.push("ready", probe.Success, probe.Success)

	require.True(t, e.probe(Liveness))
	require.True(t, e.probe(Readiness))
	assert.Equal(t, probe.Success, e.result(e.m.liveness, "id1"), "liveness starts as Success, one failure is not enough")
	assert.Equal(t, probe.Failure, e.result(e.m.readiness, "id1"), "readiness starts as Failure, one success is not enough")

	e.probe(Liveness)
	assert.Equal(t, probe.Success, e.result(e.m.liveness, "id1"), "two failures: still alive")
	e.probe(Liveness)
	assert.Equal(t, probe.Failure, e.result(e.m.liveness, "id1"), "third failure: dead")
	assert.True(t, e.m.LivenessFailed("id1"))
	e.probe(Readiness)
	assert.Equal(t, probe.Success, e.result(e.m.readiness, "id1"), "second success: ready")
}

func TestInitialDelay(t *testing.T) {
	e := newEnv(t, v1.Container{ReadinessProbe: &v1.Probe{ProbeHandler: execProbe("ready").ProbeHandler, InitialDelaySeconds: 5}})
	e.st.set("uid", "c", "id1", kc.ContainerStateRunning, e.clock.Now(), 0)
	e.probe(Readiness)
	e.clock.Step(4 * time.Second)
	e.probe(Readiness)
	assert.Equal(t, 0, e.script.count("ready"), "no probe before the initial delay")
	e.clock.Step(time.Second)
	e.probe(Readiness)
	assert.Equal(t, 1, e.script.count("ready"))
	assert.Equal(t, probe.Success, e.result(e.m.readiness, "id1"))
}

func TestStartupGatesTheOthers(t *testing.T) {
	e := newEnv(t, v1.Container{
		StartupProbe:   execProbe("start"),
		LivenessProbe:  execProbe("live"),
		ReadinessProbe: execProbe("ready"),
	})
	e.st.set("uid", "c", "id1", kc.ContainerStateRunning, e.clock.Now(), 0)
	e.script.push("start", probe.Failure)
	e.probe(Startup)
	e.probe(Liveness)
	e.probe(Readiness)
	assert.Equal(t, 0, e.script.count("live")+e.script.count("ready"), "liveness and readiness wait for startup")
	assert.Equal(t, probe.Unknown, e.result(e.m.startup, "id1"), "startup starts Unknown")

	e.probe(Startup) // succeeds
	assert.Equal(t, probe.Success, e.result(e.m.startup, "id1"))
	e.probe(Liveness)
	e.probe(Readiness)
	assert.Equal(t, 1, e.script.count("live"))
	assert.Equal(t, 1, e.script.count("ready"))
	e.probe(Startup)
	assert.Equal(t, 2, e.script.count("start"), "startup stops probing once started")
}

func TestHoldAfterLivenessFailureUntilNewContainer(t *testing.T) {
	e := newEnv(t, v1.Container{LivenessProbe: &v1.Probe{ProbeHandler: execProbe("live").ProbeHandler, FailureThreshold: 1}})
	e.st.set("uid", "c", "id1", kc.ContainerStateRunning, e.clock.Now(), 0)
	e.script.push("live", probe.Failure)
	e.probe(Liveness)
	assert.Equal(t, probe.Failure, e.result(e.m.liveness, "id1"))
	e.probe(Liveness)
	e.probe(Liveness)
	assert.Equal(t, 1, e.script.count("live"), "on hold until a new container")

	e.st.set("uid", "c", "id2", kc.ContainerStateRunning, e.clock.Now(), 0)
	e.probe(Liveness)
	assert.Equal(t, 2, e.script.count("live"), "probing resumes for the new container")
	_, ok := e.m.liveness.Get("id1")
	assert.False(t, ok, "the old container's result is dropped")
	assert.Equal(t, probe.Success, e.result(e.m.liveness, "id2"))
}

func TestStartupFailureHolds(t *testing.T) {
	e := newEnv(t, v1.Container{StartupProbe: &v1.Probe{ProbeHandler: execProbe("start").ProbeHandler, FailureThreshold: 2}})
	e.st.set("uid", "c", "id1", kc.ContainerStateRunning, e.clock.Now(), 0)
	e.script.push("start", probe.Failure, probe.Failure)
	e.probe(Startup)
	e.probe(Startup)
	assert.True(t, e.m.StartupFailed("id1"))
	e.probe(Startup)
	assert.Equal(t, 2, e.script.count("start"))
}

func TestProbeErrorsAreRetriedAndIgnored(t *testing.T) {
	e := newEnv(t, v1.Container{ReadinessProbe: execProbe("ready")})
	e.st.set("uid", "c", "id1", kc.ContainerStateRunning, e.clock.Now(), 0)
	e.script.errs["ready"] = 3
	e.probe(Readiness)
	assert.Equal(t, 3, e.script.count("ready"), "three tries")
	assert.Equal(t, probe.Failure, e.result(e.m.readiness, "id1"), "no result: still the initial one")
	e.script.errs["ready"] = 2
	e.probe(Readiness)
	assert.Equal(t, 6, e.script.count("ready"))
	assert.Equal(t, probe.Success, e.result(e.m.readiness, "id1"), "third try succeeded")
}

// recorder keeps events as "type reason fieldPath: message".
type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) Eventf(obj apiruntime.Object, eventtype, reason, format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, fmt.Sprintf("%s %s %s: ", eventtype, reason, obj.(*v1.ObjectReference).FieldPath)+fmt.Sprintf(format, args...))
}

func TestProbeEvents(t *testing.T) {
	e := newEnv(t, v1.Container{LivenessProbe: execProbe("live"), ReadinessProbe: execProbe("ready")})
	rec := &recorder{}
	e.m.cfg.Recorder = rec
	e.st.set("uid", "c", "id1", kc.ContainerStateRunning, e.clock.Now(), 0)
	e.script.push("ready", probe.Failure, probe.Warning, probe.Success)
	e.script.errs["live"] = 3
	for range 3 {
		e.probe(Readiness)
	}
	e.probe(Liveness)
	assert.Equal(t, []string{
		"Warning Unhealthy spec.containers{c}: Readiness probe failed: scripted",
		"Warning ProbeWarning spec.containers{c}: Readiness probe warning: scripted",
		"Warning Unhealthy spec.containers{c}: Liveness probe errored: probe errored",
	}, rec.events, "a success records nothing")
}

func TestWorkerStopsAndIsRemoved(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy v1.RestartPolicy
		exit   int
		keep   bool
	}{
		{"Always keeps probing an exited container", v1.RestartPolicyAlways, 1, true},
		{"Never stops", v1.RestartPolicyNever, 1, false},
		{"OnFailure stops after success", v1.RestartPolicyOnFailure, 0, false},
		{"OnFailure keeps after failure", v1.RestartPolicyOnFailure, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, v1.Container{ReadinessProbe: execProbe("ready")})
			e.pod.Spec.RestartPolicy = tc.policy
			e.st.set("uid", "c", "id1", kc.ContainerStateExited, e.clock.Now(), tc.exit)
			assert.Equal(t, tc.keep, e.probe(Readiness))
			assert.Equal(t, probe.Failure, e.result(e.m.readiness, "id1"))
		})
	}

	e := newEnv(t, v1.Container{ReadinessProbe: execProbe("ready"), LivenessProbe: execProbe("live")})
	e.st.set("uid", "c", "id1", kc.ContainerStateRunning, e.clock.Now(), 0)
	e.probe(Readiness)
	assert.Equal(t, 2, e.m.Workers())
	e.m.RemovePod("uid")
	assert.Equal(t, 0, e.m.Workers())
	_, ok := e.m.readiness.Get("id1")
	assert.False(t, ok, "results removed with the worker")

	e.m.AddPod(e.pod)
	e.m.CleanupPods(map[types.UID]struct{}{"other": {}})
	assert.Equal(t, 0, e.m.Workers())
}

func TestDeletingPodStopsLiveness(t *testing.T) {
	e := newEnv(t, v1.Container{LivenessProbe: execProbe("live")})
	e.st.set("uid", "c", "id1", kc.ContainerStateRunning, e.clock.Now(), 0)
	e.pod.DeletionTimestamp = &metav1.Time{Time: e.clock.Now()}
	assert.False(t, e.probe(Liveness), "liveness stops during shutdown")
	assert.Equal(t, probe.Success, e.result(e.m.liveness, "id1"))
	assert.Equal(t, 0, e.script.count("live"))
}

func TestUpdatePodStatus(t *testing.T) {
	e := newEnv(t, v1.Container{StartupProbe: execProbe("start"), ReadinessProbe: execProbe("ready")})
	e.st.set("uid", "c", "id1", kc.ContainerStateRunning, e.clock.Now(), 0)
	status := &v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: "c", ContainerID: "containerd://id1",
		State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}}
	e.m.UpdatePodStatus(e.pod, status)
	assert.False(t, *status.ContainerStatuses[0].Started)
	assert.False(t, status.ContainerStatuses[0].Ready)
	e.probe(Startup)
	e.probe(Readiness)
	e.m.UpdatePodStatus(e.pod, status)
	assert.True(t, *status.ContainerStatuses[0].Started)
	assert.True(t, status.ContainerStatuses[0].Ready)
}

// TestSchedulerRunsEveryPeriod drives Run with a fake clock: probes follow
// their period, the first one jittered over a period after start-up.
func TestSchedulerRunsEveryPeriod(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(10000, 0))
	st := &statuses{m: map[types.UID]*kc.PodStatus{}}
	sc := newScript()
	m, err := New(Config{Statuses: st, Runner: sc, Clock: clk, Rand: func() float64 { return 0.5 }})
	require.NoError(t, err)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", ReadinessProbe: &v1.Probe{
			ProbeHandler: execProbe("ready").ProbeHandler, PeriodSeconds: 2}}}}}
	st.set("uid", "c", "id1", kc.ContainerStateRunning, clk.Now(), 0)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	go func() {
		for {
			select {
			case <-m.readiness.Updates():
			case <-done:
				return
			}
		}
	}()
	m.AddPod(pod)

	poll.Eventually(t, clk.HasWaiters, 10*time.Second, 0)
	clk.Step(999 * time.Millisecond)
	assert.Equal(t, 0, sc.count("ready"), "jitter: half a period")
	for want := 1; want <= 4; want++ {
		clk.Step(time.Millisecond)
		poll.Eventually(t, func() bool { return sc.count("ready") == want }, 10*time.Second, 0)
		poll.Eventually(t, clk.HasWaiters, 10*time.Second, 0)
		clk.Step(2*time.Second - time.Millisecond)
	}
}

// blockingRunner holds every probe until release is closed.
type blockingRunner struct {
	inFlight, peak, total atomic.Int64
	release               chan struct{}
}

func (b *blockingRunner) Run(ctx context.Context, _ *v1.Probe, _ ProbeTarget) (probe.Result, string, error) {
	n := b.inFlight.Add(1)
	for p := b.peak.Load(); n > p && !b.peak.CompareAndSwap(p, n); p = b.peak.Load() {
	}
	<-b.release
	b.inFlight.Add(-1)
	b.total.Add(1)
	return probe.Success, "", nil
}

// TestProbesInFlightAreBounded: 20 probes due at once against targets that
// hang run at most MaxConcurrentProbes (3) at a time; once they answer all
// 20 run, and no goroutine stays behind for them.
func TestProbesInFlightAreBounded(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(10000, 0))
	st := &statuses{m: map[types.UID]*kc.PodStatus{}}
	br := &blockingRunner{release: make(chan struct{})}
	m, err := New(Config{Statuses: st, Runner: br, Clock: clk, Rand: func() float64 { return 0 }, MaxConcurrentProbes: 3})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { m.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	go drainUpdates(m, done)
	base := goruntime.NumGoroutine()
	for i := 0; i < 20; i++ {
		uid := types.UID(fmt.Sprintf("uid%d", i))
		st.set(uid, "c", fmt.Sprintf("id%d", i), kc.ContainerStateRunning, clk.Now(), 0)
		m.AddPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: string(uid), Namespace: "ns", UID: uid},
			Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", ReadinessProbe: &v1.Probe{
				ProbeHandler: execProbe("ready").ProbeHandler, PeriodSeconds: 60}}}}})
	}
	poll.Eventually(t, func() bool { return br.inFlight.Load() == 3 }, 10*time.Second, 0)
	for i := 0; i < 1000; i++ {
		goruntime.Gosched()
	}
	assert.Equal(t, int64(3), br.peak.Load(), "never more than MaxConcurrentProbes in flight")
	close(br.release)
	poll.Eventually(t, func() bool { return br.total.Load() == 20 }, 10*time.Second, 0)
	assert.Equal(t, int64(3), br.peak.Load())
	poll.Eventually(t, func() bool { return goruntime.NumGoroutine() <= base }, 10*time.Second, 0)
}

// TestSchedulerQueue: workers come out in due order; a triggered worker
// comes out at once, only once; a removed one never does.
func TestSchedulerQueue(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(10000, 0))
	s := newScheduler(clk, 100)
	now := clk.Now()
	var ws []*worker
	for i, off := range []int{50, 10, 40, 20, 30, 60, 70} {
		w := &worker{key: workerKey{container: strconv.Itoa(i)}}
		ws = append(ws, w)
		s.add(w, now.Add(time.Duration(off)*time.Second))
	}
	s.trigger(ws[6])                     // 70s → now
	s.remove(ws[2])                      // 40s: gone
	s.add(ws[5], now.Add(5*time.Second)) // re-added earlier: 60s superseded
	var order []string
	for {
		w, wait := s.next(now.Add(time.Hour))
		if w == nil {
			assert.Zero(t, wait)
			break
		}
		order = append(order, w.key.container)
	}
	assert.Equal(t, []string{"6", "5", "1", "3", "4", "0"}, order)
}

// The kubelet's labels (pkg/kubelet/prober/prober_manager.go): pod_uid on
// the total, not on the duration.
func TestMetricsHaveTheKubeletsLabels(t *testing.T) {
	e := newEnv(t, v1.Container{ReadinessProbe: execProbe("ready")})
	e.st.set("uid", "c", "id1", kc.ContainerStateRunning, e.clock.Now(), 0)
	e.probe(Readiness)
	want := `# HELP prober_probe_total Cumulative number of a liveness, readiness or startup probe for a container by result.
# TYPE prober_probe_total counter
prober_probe_total{container="c",namespace="ns",pod="p",pod_uid="uid",probe_type="Readiness",result="failed"} 0
prober_probe_total{container="c",namespace="ns",pod="p",pod_uid="uid",probe_type="Readiness",result="successful"} 1
prober_probe_total{container="c",namespace="ns",pod="p",pod_uid="uid",probe_type="Readiness",result="unknown"} 0
`
	require.NoError(t, testutil.CollectAndCompare(e.m.cfg.Metrics, strings.NewReader(want), "prober_probe_total"))
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(e.m.cfg.Metrics)
	mfs, err := reg.Gather()
	require.NoError(t, err)
	var labels []string
	for _, mf := range mfs {
		if mf.GetName() == "prober_probe_duration_seconds" {
			require.Len(t, mf.GetMetric(), 1)
			for _, l := range mf.GetMetric()[0].GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
		}
	}
	assert.Equal(t, []string{"container=c", "namespace=ns", "pod=p", "probe_type=Readiness"}, labels)
}
