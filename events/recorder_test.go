package events

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/nodekit-dev/nodekit/internal/poll"
)

// call is one write the sink saw.
type call struct {
	verb  string // create or patch
	event *v1.Event
	patch string
}

// sink records writes and answers each with the next of errs (nil when
// they run out); a created event gets resourceVersion "1".
type sink struct {
	mu    sync.Mutex
	calls []call
	errs  []error
}

func (s *sink) answer(verb string, ev *v1.Event, patch []byte) (*v1.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, call{verb: verb, event: ev.DeepCopy(), patch: string(patch)})
	var err error
	if len(s.errs) > 0 {
		err, s.errs = s.errs[0], s.errs[1:]
	}
	if err != nil {
		return nil, err
	}
	out := ev.DeepCopy()
	out.ResourceVersion = "1"
	return out, nil
}

func (s *sink) Create(_ context.Context, ev *v1.Event) (*v1.Event, error) {
	return s.answer("create", ev, nil)
}
func (s *sink) Patch(_ context.Context, ev *v1.Event, data []byte) (*v1.Event, error) {
	return s.answer("patch", ev, data)
}

func (s *sink) seen() []call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]call(nil), s.calls...)
}

var (
	start = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	nanos = fmt.Sprintf("%x", start.UnixNano()) // event names' suffix
)

func newRecorder(t *testing.T, s *sink, mutate func(*Config)) (*Recorder, *clocktesting.FakeClock) {
	clk := clocktesting.NewFakeClock(start)
	scheme := runtime.NewScheme()
	scheme.AddKnownTypes(v1.SchemeGroupVersion, &v1.Pod{})
	cfg := Config{Sink: s, Source: v1.EventSource{Component: "kubelet", Host: "node-1"}, Scheme: scheme, Clock: clk}
	if mutate != nil {
		mutate(&cfg)
	}
	r, err := New(cfg)
	require.NoError(t, err)
	return r, clk
}

// run runs r until the test ends.
func run(t *testing.T, r *Recorder) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); assert.NoError(t, r.Run(ctx)) }()
	t.Cleanup(func() { cancel(); <-done })
}

func TestRecorderWritesTheKubeletsEvent(t *testing.T) {
	s := &sink{}
	r, _ := newRecorder(t, s, nil)
	run(t, r)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "u1", ResourceVersion: "7"}}
	r.Eventf(pod, v1.EventTypeNormal, "Pulled", "Container image %q already present on machine", "pause")
	r.AnnotatedEventf(&v1.ObjectReference{Kind: "Node", Name: "node-1", UID: "node-1"}, map[string]string{"a": "b"},
		v1.EventTypeWarning, "CgroupV1", "cgroup v1")
	poll.Eventually(t, func() bool { return len(s.seen()) == 2 }, 5*time.Second, time.Millisecond)
	now := metav1.NewTime(start)
	source := v1.EventSource{Component: "kubelet", Host: "node-1"}
	assert.Equal(t, []call{{verb: "create", event: &v1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "web." + nanos, Namespace: "ns"},
		InvolvedObject: v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: "ns", Name: "web", UID: "u1", ResourceVersion: "7"},
		Reason:         "Pulled", Message: `Container image "pause" already present on machine`, Type: v1.EventTypeNormal,
		FirstTimestamp: now, LastTimestamp: now, Count: 1, Source: source, ReportingController: "kubelet", ReportingInstance: "node-1",
	}}, {verb: "create", event: &v1.Event{
		// Made at the same instant: its suffix one nanosecond on.
		ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("node-1.%x", start.UnixNano()+1), Namespace: "default", Annotations: map[string]string{"a": "b"}},
		InvolvedObject: v1.ObjectReference{Kind: "Node", Name: "node-1", UID: "node-1"},
		Reason:         "CgroupV1", Message: "cgroup v1", Type: v1.EventTypeWarning,
		FirstTimestamp: now, LastTimestamp: now, Count: 1, Source: source, ReportingController: "kubelet", ReportingInstance: "node-1",
	}}}, s.seen())
}

// A repeated event is a PATCH of the first; one the API no longer has is
// created again, with the first one's name and count.
func TestRecorderPatchesRepeats(t *testing.T) {
	s := &sink{errs: []error{nil, nil, apierrors.NewNotFound(schema.GroupResource{Resource: "events"}, "web")}}
	r, clk := newRecorder(t, s, nil)
	run(t, r)
	ref := &v1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: "web", UID: "u1"}
	for i := range 3 {
		r.Event(ref, v1.EventTypeWarning, "BackOff", "Back-off restarting failed container")
		poll.Eventually(t, func() bool { return len(s.seen()) >= i+1 }, 5*time.Second, time.Millisecond)
		clk.Step(time.Second)
	}
	poll.Eventually(t, func() bool { return len(s.seen()) == 4 }, 5*time.Second, time.Millisecond)
	calls := s.seen()
	assert.Equal(t, []string{"create", "patch", "patch", "create"}, []string{calls[0].verb, calls[1].verb, calls[2].verb, calls[3].verb})
	assert.JSONEq(t, `{"count":2,"lastTimestamp":"2026-11-28T12:00:01Z","message":"Back-off restarting failed container"}`, calls[1].patch)
	assert.JSONEq(t, `{"count":3,"lastTimestamp":"2026-11-28T12:00:02Z","message":"Back-off restarting failed container"}`, calls[2].patch)
	assert.Equal(t, "web."+nanos, calls[3].event.Name)
	assert.Equal(t, int32(3), calls[3].event.Count)
	assert.Empty(t, calls[3].event.ResourceVersion, "a create carries no resourceVersion")
}

func TestRecorderRetries(t *testing.T) {
	down := errors.New("connection refused")
	for _, tc := range []struct {
		name   string
		errs   []error
		writes int
	}{
		{"a transport error is retried", []error{down, down}, 3},
		{"up to 12 tries", []error{down, down, down, down, down, down, down, down, down, down, down, down}, 12},
		{"a refused event is dropped", []error{apierrors.NewForbidden(schema.GroupResource{Resource: "events"}, "x", errors.New("no"))}, 1},
		{"one that exists is dropped", []error{apierrors.NewAlreadyExists(schema.GroupResource{Resource: "events"}, "x")}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &sink{errs: tc.errs}
			r, clk := newRecorder(t, s, nil)
			run(t, r)
			r.Event(&v1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: "web"}, v1.EventTypeNormal, "Started", "Started container web")
			// Each look lets the retry's wait pass, so the writes come as fast
			// as the recorder makes them.
			poll.Eventually(t, func() bool { clk.Step(DefaultRetryInterval); return len(s.seen()) >= tc.writes }, 5*time.Second, time.Millisecond)
			// The next event is written once: the first one's tries are over.
			r.Event(&v1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: "db"}, v1.EventTypeNormal, "Started", "Started container db")
			poll.Eventually(t, func() bool { clk.Step(DefaultRetryInterval); return len(s.seen()) == tc.writes+1 }, 5*time.Second, time.Millisecond)
			calls := s.seen()
			assert.Equal(t, "db", calls[len(calls)-1].event.InvolvedObject.Name)
			for _, c := range calls[:tc.writes] {
				assert.Equal(t, "web", c.event.InvolvedObject.Name)
			}
		})
	}
}

// Events past the queue's length wait for no one: they are dropped.
func TestRecorderDropsWhatTheQueueCannotHold(t *testing.T) {
	s := &sink{}
	r, _ := newRecorder(t, s, func(c *Config) { c.QueueLength = 2 })
	for _, name := range []string{"a", "b", "c"} {
		r.Event(&v1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: name}, v1.EventTypeNormal, "Started", "Started")
	}
	r.Event(&v1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: "d"}, "Fatal", "Started", "not a type")
	run(t, r)
	poll.Eventually(t, func() bool { return len(s.seen()) == 2 }, 5*time.Second, time.Millisecond)
	r.Event(&v1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: "e"}, v1.EventTypeNormal, "Started", "Started")
	poll.Eventually(t, func() bool { return len(s.seen()) == 3 }, 5*time.Second, time.Millisecond)
	var names []string
	for _, c := range s.seen() {
		names = append(names, c.event.InvolvedObject.Name)
	}
	assert.Equal(t, []string{"a", "b", "e"}, names)
}

func TestNewRefusesBadConfig(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{}, "events: Config.Sink is required"},
		{Config{Sink: &sink{}, SpamBurst: -1}, "events: Config has a negative size: CacheSize 0, SpamBurst -1, SpamQPS 0, AggregateMax 0, QueueLength 0, MaxTries 0"},
		{Config{Sink: &sink{}, QueueLength: -5}, "events: Config has a negative size: CacheSize 0, SpamBurst 0, SpamQPS 0, AggregateMax 0, QueueLength -5, MaxTries 0"},
	} {
		_, err := New(tc.cfg)
		assert.EqualError(t, err, tc.want)
	}
}

// With no Scheme the recorder knows the core/v1 kinds.
func TestRecorderDefaultSchemeKnowsCoreKinds(t *testing.T) {
	s := &sink{}
	r, _ := newRecorder(t, s, func(c *Config) { c.Scheme = nil })
	run(t, r)
	r.Event(&v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data", UID: "u2"}},
		v1.EventTypeWarning, "VolumeResizeFailed", "resize failed")
	poll.Eventually(t, func() bool { return len(s.seen()) == 1 }, 5*time.Second, time.Millisecond)
	assert.Equal(t, v1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: "ns", Name: "data", UID: "u2"},
		s.seen()[0].event.InvolvedObject)
}
