package podsource

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

// drain returns what the mux emitted so far.
func drain(m *Mux) []PodUpdate {
	var out []PodUpdate
	for {
		select {
		case u := <-m.Updates():
			out = append(out, u)
		default:
			return out
		}
	}
}

type emitted struct {
	Op     Op
	Source string
	Names  []string
}

func summarize(us []PodUpdate) []emitted {
	out := []emitted{}
	for _, u := range us {
		out = append(out, emitted{u.Op, u.Source, names(u.Pods)})
	}
	return out
}

func TestMuxOps(t *testing.T) {
	a := testPod("file", "a", "uid-a")
	b := testPod("file", "b", "uid-b")
	with := func(p *v1.Pod, f func(*v1.Pod)) *v1.Pod {
		p = p.DeepCopy()
		f(p)
		return p
	}
	tests := []struct {
		name  string
		first []*v1.Pod
		op    Op
		next  []*v1.Pod
		want  []emitted
	}{
		{"identical re-send emits nothing", []*v1.Pod{a, b}, SET, []*v1.Pod{a.DeepCopy(), b.DeepCopy()}, []emitted{}},
		{"same pointers emit nothing", []*v1.Pod{a, b}, SET, []*v1.Pod{a, b}, []emitted{}},
		{"add", []*v1.Pod{a}, SET, []*v1.Pod{a, b}, []emitted{{ADD, "file", []string{"b"}}}},
		{"remove", []*v1.Pod{a, b}, SET, []*v1.Pod{a}, []emitted{{REMOVE, "file", []string{"b"}}}},
		{"spec change is UPDATE", []*v1.Pod{a}, SET, []*v1.Pod{with(a, func(p *v1.Pod) { p.Spec.Containers[0].Image = "img:2" })},
			[]emitted{{UPDATE, "file", []string{"a"}}}},
		{"label change is UPDATE", []*v1.Pod{a}, SET, []*v1.Pod{with(a, func(p *v1.Pod) { p.Labels = map[string]string{"x": "y"} })},
			[]emitted{{UPDATE, "file", []string{"a"}}}},
		{"annotation change is UPDATE", []*v1.Pod{a}, SET, []*v1.Pod{with(a, func(p *v1.Pod) { p.Annotations["x"] = "y" })},
			[]emitted{{UPDATE, "file", []string{"a"}}}},
		{"config.seen change is nothing", []*v1.Pod{a}, SET, []*v1.Pod{with(a, func(p *v1.Pod) { p.Annotations[ConfigSeenAnnotation] = "then" })},
			[]emitted{}},
		{"status change is RECONCILE", []*v1.Pod{a}, SET, []*v1.Pod{with(a, func(p *v1.Pod) { p.Status.Phase = v1.PodRunning })},
			[]emitted{{RECONCILE, "file", []string{"a"}}}},
		{"deletion timestamp is DELETE", []*v1.Pod{a}, SET, []*v1.Pod{with(a, func(p *v1.Pod) { now := metav1.Now(); p.DeletionTimestamp = &now })},
			[]emitted{{DELETE, "file", []string{"a"}}}},
		{"new UID for same name (file edit) is REMOVE then ADD", []*v1.Pod{a}, SET, []*v1.Pod{with(a, func(p *v1.Pod) { p.UID = "uid-a2" })},
			[]emitted{{REMOVE, "file", []string{"a"}}, {ADD, "file", []string{"a"}}}},
		{"mixed, kubelet order", []*v1.Pod{a, b}, SET, []*v1.Pod{
			with(a, func(p *v1.Pod) { p.Status.Phase = v1.PodRunning }), testPod("file", "c", "uid-c")},
			[]emitted{{REMOVE, "file", []string{"b"}}, {ADD, "file", []string{"c"}}, {RECONCILE, "file", []string{"a"}}}},
		{"delta ADD of existing unchanged pod emits nothing", []*v1.Pod{a}, ADD, []*v1.Pod{a.DeepCopy()}, []emitted{}},
		{"delta UPDATE", []*v1.Pod{a, b}, UPDATE, []*v1.Pod{with(b, func(p *v1.Pod) { p.Spec.Containers[0].Image = "x" })},
			[]emitted{{UPDATE, "file", []string{"b"}}}},
		{"delta REMOVE", []*v1.Pod{a, b}, REMOVE, []*v1.Pod{a}, []emitted{{REMOVE, "file", []string{"a"}}}},
		{"delta REMOVE of unknown pod is nothing", []*v1.Pod{a}, REMOVE, []*v1.Pod{b}, []emitted{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			m := NewMux(MuxConfig{})
			m.Register("file")
			require.NoError(t, m.Update(ctx, PodUpdate{Op: SET, Pods: tt.first, Source: "file"}))
			drain(m)
			require.NoError(t, m.Update(ctx, PodUpdate{Op: tt.op, Pods: tt.next, Source: "file"}))
			assert.Equal(t, tt.want, summarize(drain(m)))
		})
	}
}

// The mux passes pods on without copying them, and stamps config.seen on
// its own shallow copy: the source's object is never modified.
func TestMuxSeenAnnotationSharesWithoutModifying(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC))
	m := NewMux(MuxConfig{Clock: clk})
	m.Register("file")
	a := testPod("file", "a", "uid-a")
	require.NoError(t, m.Update(ctx, PodUpdate{Op: SET, Pods: []*v1.Pod{a}, Source: "file"}))
	us := drain(m)
	require.Len(t, us, 1)
	got := us[0].Pods[0]
	assert.Equal(t, "2026-01-02T03:04:05.000000006Z", got.Annotations[ConfigSeenAnnotation])
	assert.NotContains(t, a.Annotations, ConfigSeenAnnotation, "the source's pod is not modified")
	assert.Same(t, &a.Spec.Containers[0], &got.Spec.Containers[0], "the spec is shared, not copied")

	clk.Step(time.Hour)
	a2 := a.DeepCopy()
	a2.Spec.Containers[0].Image = "img:2"
	require.NoError(t, m.Update(ctx, PodUpdate{Op: SET, Pods: []*v1.Pod{a2}, Source: "file"}))
	us = drain(m)
	require.Len(t, us, 1)
	assert.Equal(t, UPDATE, us[0].Op)
	updated := us[0].Pods[0]
	assert.Equal(t, "2026-01-02T03:04:05.000000006Z", us[0].Pods[0].Annotations[ConfigSeenAnnotation], "first sight is kept on update")
	assert.Equal(t, "img:2", m.Pods()[0].Spec.Containers[0].Image)
	assert.Equal(t, map[types.UID]bool{"uid-a": true}, m.UIDs(), "UIDs are Pods' without copies")

	// A status-only change (RECONCILE) and a held-back pod that passes
	// once its name is free: still nothing of the source's is modified.
	a3 := a2.DeepCopy()
	a3.Status.Phase = v1.PodRunning
	dup := testPod("file", "a", "uid-dup")
	sent := []*v1.Pod{a3.DeepCopy(), dup.DeepCopy()}
	require.NoError(t, m.Update(ctx, PodUpdate{Op: SET, Pods: sent, Source: "file"}))
	us = drain(m)
	require.Len(t, us, 1)
	assert.Equal(t, RECONCILE, us[0].Op)
	assert.Equal(t, v1.PodRunning, m.Pods()[0].Status.Phase, "Pods has the latest status")
	assert.NotSame(t, updated, us[0].Pods[0], "a new object: the one the consumer has is left as it was")
	require.NoError(t, m.Update(ctx, PodUpdate{Op: SET, Pods: sent[1:], Source: "file"}))
	us = drain(m)
	require.Len(t, us, 2)
	assert.Equal(t, ADD, us[1].Op, "the held-back pod passes")
	assert.Contains(t, us[1].Pods[0].Annotations, ConfigSeenAnnotation)
	assert.Empty(t, updated.Status.Phase, "the consumer's object is left as it was")
	assert.Equal(t, []*v1.Pod{a3, dup}, sent, "the source's pods are as sent")
}

// A pod its source stamped with config.seen (the API server source does,
// keeping the first sight across updates) is passed on as it is: no copy.
func TestMuxPassesPodsTheSourceStamped(t *testing.T) {
	ctx := context.Background()
	m := NewMux(MuxConfig{Clock: clocktesting.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC))})
	m.Register("api")
	a := testPod("api", "a", "uid-a")
	a.Annotations = map[string]string{ConfigSeenAnnotation: "2025-12-31T00:00:00Z"}
	require.NoError(t, m.Update(ctx, PodUpdate{Op: SET, Pods: []*v1.Pod{a}, Source: "api"}))
	us := drain(m)
	require.Len(t, us, 1)
	assert.Same(t, a, us[0].Pods[0])

	a2 := a.DeepCopy()
	a2.Spec.Containers[0].Image = "img:2"
	require.NoError(t, m.Update(ctx, PodUpdate{Op: SET, Pods: []*v1.Pod{a2}, Source: "api"}))
	us = drain(m)
	require.Len(t, us, 1)
	assert.Equal(t, UPDATE, us[0].Op)
	assert.Same(t, a2, us[0].Pods[0])
	assert.Equal(t, "2025-12-31T00:00:00Z", us[0].Pods[0].Annotations[ConfigSeenAnnotation])

	// A status change only: the source's newer object is passed on and
	// kept, so the older one is no longer held beside it.
	a3 := a2.DeepCopy()
	a3.Status.Phase = v1.PodRunning
	require.NoError(t, m.Update(ctx, PodUpdate{Op: SET, Pods: []*v1.Pod{a3}, Source: "api"}))
	us = drain(m)
	require.Len(t, us, 1)
	assert.Equal(t, RECONCILE, us[0].Op)
	assert.Same(t, a3, us[0].Pods[0])
	assert.Same(t, a3, m.sources["api"].pods[a3.UID].pod)
}

func TestMuxSourcesReady(t *testing.T) {
	ctx := context.Background()
	m := NewMux(MuxConfig{})
	m.Register("file", "http")
	assert.False(t, m.AllSourcesReady())
	require.NoError(t, m.Update(ctx, PodUpdate{Op: SET, Source: "file"}))
	// The kubelet's signal: an empty ADD on a source's first, empty set.
	assert.Equal(t, []emitted{{ADD, "file", []string{}}}, summarize(drain(m)))
	assert.True(t, m.SourcesReady("file"))
	assert.False(t, m.SourcesReady("file", "http"))
	assert.False(t, m.AllSourcesReady())
	require.NoError(t, m.Update(ctx, PodUpdate{Op: ADD, Pods: []*v1.Pod{testPod("http", "x", "ux")}, Source: "http"}))
	assert.False(t, m.SourcesReady("http"), "deltas do not make a source ready, only a SET")
	require.NoError(t, m.Update(ctx, PodUpdate{Op: SET, Pods: []*v1.Pod{testPod("http", "x", "ux")}, Source: "http"}))
	assert.True(t, m.AllSourcesReady())
	assert.False(t, m.SourcesReady("api"), "unknown source")

	assert.Error(t, m.Update(ctx, PodUpdate{Op: SET, Source: "nope"}))
	assert.Error(t, m.Update(ctx, PodUpdate{Op: RECONCILE, Source: "file"}))
}

func TestMuxConflicts(t *testing.T) {
	ctx := context.Background()
	metrics := NewMetrics()
	m := NewMux(MuxConfig{Metrics: metrics})
	m.Register("file", "http")
	fa := testPod("file", "web", "uid-file")
	ha := testPod("http", "web", "uid-http")
	require.NoError(t, m.Update(ctx, PodUpdate{Op: SET, Pods: []*v1.Pod{fa}, Source: "file"}))
	require.NoError(t, m.Update(ctx, PodUpdate{Op: SET, Pods: []*v1.Pod{ha, testPod("http", "other", "uid-o")}, Source: "http"}))
	assert.Equal(t, []emitted{{ADD, "file", []string{"web"}}, {ADD, "http", []string{"other"}}}, summarize(drain(m)))
	assert.Equal(t, []Conflict{{FullName: "default/web", Kept: Ref{"file", "uid-file"}, Rejected: Ref{"http", "uid-http"}}}, m.Conflicts())
	assert.Equal(t, 1.0, testutil.ToFloat64(metrics.conflicts.WithLabelValues("http")))

	// The rejected pod changing emits nothing.
	ha2 := ha.DeepCopy()
	ha2.Spec.Containers[0].Image = "img:2"
	require.NoError(t, m.Update(ctx, PodUpdate{Op: SET, Pods: []*v1.Pod{ha2, testPod("http", "other", "uid-o")}, Source: "http"}))
	assert.Empty(t, drain(m))

	// The file's pod edited (new UID) keeps the name: the first source wins.
	fa2 := fa.DeepCopy()
	fa2.UID = "uid-file-2"
	require.NoError(t, m.Update(ctx, PodUpdate{Op: SET, Pods: []*v1.Pod{fa2}, Source: "file"}))
	assert.Equal(t, []emitted{{REMOVE, "file", []string{"web"}}, {ADD, "file", []string{"web"}}}, summarize(drain(m)))

	// The file's pod gone: the held-back pod passes, in its latest version.
	require.NoError(t, m.Update(ctx, PodUpdate{Op: SET, Source: "file"}))
	us := drain(m)
	assert.Equal(t, []emitted{{REMOVE, "file", []string{"web"}}, {ADD, "http", []string{"web"}}}, summarize(us))
	assert.Equal(t, "img:2", us[1].Pods[0].Spec.Containers[0].Image)
	assert.Empty(t, m.Conflicts())

	// Same name twice within a source: the first one is kept.
	m2 := NewMux(MuxConfig{})
	m2.Register("file")
	require.NoError(t, m2.Update(ctx, PodUpdate{Op: SET, Pods: []*v1.Pod{testPod("file", "x", "u1"), testPod("file", "x", "u2")}, Source: "file"}))
	us = drain(m2)
	require.Len(t, us, 1)
	assert.Equal(t, "u1", string(us[0].Pods[0].UID))
	assert.Len(t, m2.Conflicts(), 1)
}

func TestMuxSnapshotMode(t *testing.T) {
	ctx := context.Background()
	m := NewMux(MuxConfig{Mode: ModeSnapshot})
	m.Register("file", "http")
	require.NoError(t, m.Update(ctx, PodUpdate{Op: SET, Pods: []*v1.Pod{testPod("file", "a", "ua")}, Source: "file"}))
	require.NoError(t, m.Update(ctx, PodUpdate{Op: SET, Pods: []*v1.Pod{testPod("http", "b", "ub")}, Source: "http"}))
	require.NoError(t, m.Update(ctx, PodUpdate{Op: SET, Pods: []*v1.Pod{testPod("http", "b", "ub")}, Source: "http"}))
	assert.Equal(t, []emitted{{SET, "file", []string{"a"}}, {SET, "http", []string{"a", "b"}}}, summarize(drain(m)))
}

func TestMuxBlocksUntilContextEnds(t *testing.T) {
	m := NewMux(MuxConfig{Buffer: 1})
	m.Register("file")
	ctx, cancel := context.WithCancel(context.Background())
	require.NoError(t, m.Update(ctx, PodUpdate{Op: SET, Pods: []*v1.Pod{testPod("file", "a", "ua")}, Source: "file"}))
	cancel()
	err := m.Update(ctx, PodUpdate{Op: SET, Pods: []*v1.Pod{testPod("file", "b", "ub")}, Source: "file"})
	assert.ErrorIs(t, err, context.Canceled)
}

func TestMuxPodsGauge(t *testing.T) {
	ctx := context.Background()
	metrics := NewMetrics()
	m := NewMux(MuxConfig{Metrics: metrics})
	m.Register("file", "http")
	require.NoError(t, m.Update(ctx, PodUpdate{Op: SET, Pods: []*v1.Pod{testPod("file", "a", "ua"), testPod("file", "b", "ub")}, Source: "file"}))
	require.NoError(t, m.Update(ctx, PodUpdate{Op: SET, Pods: []*v1.Pod{testPod("http", "a", "ha")}, Source: "http"}))
	assert.Equal(t, 2.0, testutil.ToFloat64(metrics.pods.WithLabelValues("file")))
	require.NoError(t, m.Update(ctx, PodUpdate{Op: SET, Pods: []*v1.Pod{testPod("file", "b", "ub")}, Source: "file"}))
	assert.Equal(t, 1.0, testutil.ToFloat64(metrics.pods.WithLabelValues("file")))
	assert.Equal(t, 1.0, testutil.ToFloat64(metrics.pods.WithLabelValues("http")), "promoted")
	assert.Equal(t, 2.0, testutil.ToFloat64(metrics.updates.WithLabelValues("file", string(ADD))))
}

// A static pod's mirror pod comes back from the API source with the static
// pod's name: it is not a conflict, and both pass (the agent keeps the
// mirror pod out of the pods to run).
func TestMuxMirrorPodIsNoConflict(t *testing.T) {
	ctx := context.Background()
	m := NewMux(MuxConfig{})
	m.Register("file", "api")
	static := testPod("file", "etcd", "uid-static")
	mirror := testPod("api", "etcd", "uid-mirror")
	mirror.Annotations[ConfigMirrorAnnotation] = "hash"
	require.NoError(t, m.Update(ctx, PodUpdate{Op: SET, Pods: []*v1.Pod{static}, Source: "file"}))
	require.NoError(t, m.Update(ctx, PodUpdate{Op: SET, Pods: []*v1.Pod{mirror}, Source: "api"}))
	assert.Equal(t, []emitted{{ADD, "file", []string{"etcd"}}, {ADD, "api", []string{"etcd"}}}, summarize(drain(m)))
	assert.Empty(t, m.Conflicts())
}

// observations records what an Observer is told.
type observations struct{ seen []string }

func (o *observations) ObservedPodOnWatch(p *v1.Pod, when time.Time) {
	o.seen = append(o.seen, fmt.Sprintf("%s %s %s", p.Name, p.Status.Phase, when.Format(time.TimeOnly)))
}
func (o *observations) DeletePodStartupState(uid types.UID) {
	o.seen = append(o.seen, "gone "+string(uid))
}

// The kubelet's config tells its pod startup latency tracker of each API
// pod (not static ones) of each update, with the time, and the mux of
// each pod gone.
func TestMuxTellsTheObserver(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	obs := &observations{}
	m := NewMux(MuxConfig{Clock: clk, Observer: obs})
	m.Register(SourceAPI, SourceFile)
	web, static := testPod(SourceAPI, "web", "uid-web"), testPod(SourceFile, "static", "uid-static")
	running := web.DeepCopy()
	running.Status.Phase = v1.PodRunning
	for _, step := range []struct {
		source string
		pods   []*v1.Pod
		want   []string
	}{
		{SourceAPI, []*v1.Pod{web}, []string{"web  03:04:05"}},
		{SourceFile, []*v1.Pod{static}, nil},
		{SourceAPI, []*v1.Pod{web}, nil}, // the very object again: nothing new
		{SourceAPI, []*v1.Pod{running}, []string{"web Running 03:04:08"}},
		{SourceAPI, nil, []string{"gone uid-web"}},
	} {
		obs.seen = nil
		require.NoError(t, m.Update(ctx, PodUpdate{Op: SET, Pods: step.pods, Source: step.source}))
		drain(m)
		assert.Equal(t, step.want, obs.seen)
		clk.Step(time.Second)
	}
}
