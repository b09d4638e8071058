package pleg

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekit-dev/nodekit/internal/poll"
	kc "github.com/nodekit-dev/nodekit/kubecontainer"
)

// stubEvents is an EventSource the test drives: each ContainerEvents call
// takes the next scripted error, or streams what the test sends.
type stubEvents struct {
	mu     sync.Mutex
	script []error // per call: nil streams until ctx ends or end is closed
	calls  int
	feed   chan *kc.ContainerEvent
	gate   chan struct{} // if set, a stream opens only once it is closed
}

func (s *stubEvents) ContainerEvents(ctx context.Context, ch chan<- *kc.ContainerEvent, connected func()) error {
	s.mu.Lock()
	n := s.calls
	s.calls++
	var err error
	if n < len(s.script) {
		err = s.script[n]
	}
	s.mu.Unlock()
	if err != nil {
		return err
	}
	if s.gate != nil {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.gate:
		}
	}
	connected()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case ev := <-s.feed:
			ch <- ev
		}
	}
}

func (s *stubEvents) callCount() int { s.mu.Lock(); defer s.mu.Unlock(); return s.calls }

type logSink struct {
	mu    sync.Mutex
	lines []string
}

func (l *logSink) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.lines = append(l.lines, args)
	}, funcr.Options{})
}

func (l *logSink) contains(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.lines {
		if strings.Contains(line, s) {
			return true
		}
	}
	return false
}

type eventedEnv struct {
	*env
	src     *stubEvents
	logs    *logSink
	metrics *countMetrics
	e       *EventedPLEG
	stop    func()
}

func startEvented(t *testing.T, script ...error) *eventedEnv {
	return startEventedFrom(t, &stubEvents{script: script, feed: make(chan *kc.ContainerEvent)})
}

func startEventedFrom(t *testing.T, src *stubEvents) *eventedEnv {
	base := newEnv(Config{})
	ee := &eventedEnv{env: base, src: src, logs: &logSink{}, metrics: &countMetrics{}}
	var err error
	ee.e, err = NewEvented(EventedConfig{Config: Config{Runtime: base.rt, Cache: base.cache, Clock: base.clock,
		Log: ee.logs.logger(), Metrics: ee.metrics}, Events: ee.src})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { ee.e.Run(ctx); close(done) }()
	ee.stop = func() { cancel(); <-done }
	t.Cleanup(ee.stop)
	return ee
}

func event(typ kc.ContainerEventType, uid, sandboxID, containerID string, created int64) *kc.ContainerEvent {
	return &kc.ContainerEvent{
		ContainerID: containerID, Type: typ, CreatedAt: time.Unix(0, created),
		PodStatus: &kc.PodStatus{ID: types.UID(uid), Name: "p", Namespace: "ns",
			SandboxStatuses:   []*kc.SandboxStatus{{ID: sandboxID, State: kc.SandboxStateReady}},
			ContainerStatuses: []*kc.ContainerStatus{{ID: containerID, Name: "c", State: kc.ContainerStateRunning}}},
	}
}

func TestEventedTranslatesEvents(t *testing.T) {
	ee := startEvented(t)
	base := ee.clock.Now().UnixNano()
	for _, tc := range []struct {
		typ    kc.ContainerEventType
		id     string
		want   []string
		delete bool
	}{
		{kc.ContainerCreatedEvent, "c1", nil, false},
		{kc.ContainerStartedEvent, "c1", []string{"u/ContainerStarted/c1"}, false},
		{kc.ContainerStoppedEvent, "c1", []string{"u/ContainerDied/c1"}, false},
		{kc.ContainerDeletedEvent, "c1", []string{"u/ContainerDied/c1", "u/ContainerRemoved/c1"}, false},
		{kc.ContainerDeletedEvent, "sb", []string{"u/ContainerDied/sb", "u/ContainerRemoved/sb"}, true},
	} {
		base++
		sets := len(ee.cache.sets["u"])
		ee.src.feed <- event(tc.typ, "u", "sb", tc.id, base)
		poll.Eventually(t, func() bool { ee.cache.mu.Lock(); defer ee.cache.mu.Unlock(); return len(ee.cache.sets["u"]) > sets }, 10*time.Second, 0, "cache set")
		if tc.want != nil {
			poll.Eventually(t, func() bool { return len(ee.e.Watch()) >= len(tc.want) }, 10*time.Second, 0, "events")
		}
		assert.Equal(t, tc.want, drain(ee.e.Watch()), string(tc.typ))
		ee.cache.mu.Lock()
		assert.Equal(t, time.Unix(0, base), ee.cache.sets["u"][len(ee.cache.sets["u"])-1], "cache time is the event's")
		assert.Equal(t, tc.delete, len(ee.cache.deletes) > 0, "cache delete")
		ee.cache.mu.Unlock()
	}
	assert.False(t, ee.e.FellBack())
}

// An event older than the cache's data is no news, except a start or a
// stop: the newer data may be a read no lifecycle event came of (a pod
// sync's read-back, a relist's status read timed after its list).
func TestEventedSendsStartsAndStopsOlderThanTheCache(t *testing.T) {
	ee := startEvented(t)
	ee.cache.mu.Lock()
	ee.cache.refuse = true
	ee.cache.mu.Unlock()
	for i, tc := range []struct {
		typ  kc.ContainerEventType
		want []string
	}{
		{kc.ContainerCreatedEvent, nil},
		{kc.ContainerStartedEvent, []string{"u/ContainerStarted/c1"}},
		{kc.ContainerStoppedEvent, []string{"u/ContainerDied/c1"}},
	} {
		ee.src.feed <- event(tc.typ, "u", "sb", "c1", int64(i+1))
		poll.Eventually(t, func() bool { ee.cache.mu.Lock(); defer ee.cache.mu.Unlock(); return len(ee.cache.sets["u"]) > i }, 10*time.Second, 0, "cache set")
		if tc.want != nil {
			poll.Eventually(t, func() bool { return len(ee.e.Watch()) >= len(tc.want) }, 10*time.Second, 0, "events")
		}
		assert.Equal(t, tc.want, drain(ee.e.Watch()), string(tc.typ))
	}
}

func TestEventedIgnoresEventsWithoutSandbox(t *testing.T) {
	ee := startEvented(t)
	ev := event(kc.ContainerStartedEvent, "u", "sb", "c1", 1)
	ev.PodStatus = nil
	ee.src.feed <- ev
	ee.src.feed <- event(kc.ContainerStartedEvent, "u", "sb", "c2", 2)
	poll.Eventually(t, func() bool { return len(ee.e.Watch()) == 1 }, 10*time.Second, 0, "event")
	assert.Equal(t, []string{"u/ContainerStarted/c2"}, drain(ee.e.Watch()))
}

func TestEventedFallsBackOnUnimplemented(t *testing.T) {
	ee := startEvented(t, fmt.Errorf("%w: unknown method GetContainerEvents", errors.ErrUnsupported))
	poll.Eventually(t, ee.e.FellBack, 10*time.Second, 0, "fallback")
	assert.True(t, ee.logs.contains("does not implement GetContainerEvents"), "says so in the log")
	assert.Equal(t, 1, ee.src.callCount(), "no retries")
	assert.Equal(t, time.Second, time.Duration(ee.e.generic.period.Load()), "relists every second")

	// And it relists every second from now on.
	ee.rt.set("p", nil, map[string]kc.ContainerState{"c1": running})
	for i := 0; i < 3; i++ {
		poll.Eventually(t, ee.clock.HasWaiters, 10*time.Second, 0, "relister waiting")
		ee.clock.Step(time.Second)
	}
	poll.Eventually(t, func() bool { return len(ee.e.Watch()) > 0 }, 10*time.Second, 0, "relist event")
	assert.Contains(t, drain(ee.e.Watch()), "p/ContainerStarted/c1")
}

func TestEventedFallsBackAfterMaxRetries(t *testing.T) {
	boom := errors.New("stream broke")
	ee := startEvented(t, boom, boom, boom, boom, boom)
	poll.Eventually(t, ee.e.FellBack, 10*time.Second, 0, "fallback")
	assert.Equal(t, 5, ee.src.callCount())
	assert.Equal(t, 5.0, float64(ee.metrics.streamFailed.Load()))
	ee.cache.mu.Lock()
	relists := len(ee.cache.times)
	ee.cache.mu.Unlock()
	assert.GreaterOrEqual(t, relists, 5, "each failure forces a relist")
	assert.True(t, ee.logs.contains("too many stream failures"))
}

func TestEventedRetriesThenStreams(t *testing.T) {
	boom := errors.New("stream broke")
	ee := startEvented(t, boom, boom)
	ee.src.feed <- event(kc.ContainerStartedEvent, "u", "sb", "c1", 1)
	poll.Eventually(t, func() bool { return len(ee.e.Watch()) == 1 }, 10*time.Second, 0, "event")
	assert.False(t, ee.e.FellBack())
	assert.Equal(t, 3, ee.src.callCount())
	assert.Equal(t, 1.0, float64(ee.metrics.streamConnected.Load()))
	assert.Equal(t, time.Duration(DefaultEventedRelistPeriod), time.Duration(ee.e.generic.period.Load()), "safety-net period")
}

// A container that starts after the first relist but before the stream
// opens sends no event; the relist made when the stream opens finds it,
// with no safety relist (300s of the fake clock) in between.
func TestEventedRelistsWhenTheStreamOpens(t *testing.T) {
	src := &stubEvents{feed: make(chan *kc.ContainerEvent), gate: make(chan struct{})}
	ee := startEventedFrom(t, src)
	relists := func() int { ee.cache.mu.Lock(); defer ee.cache.mu.Unlock(); return len(ee.cache.times) }
	poll.Eventually(t, func() bool { return relists() >= 1 }, 10*time.Second, 0, "first relist")
	ee.rt.set("p", map[string]kc.ContainerState{"sb": running}, map[string]kc.ContainerState{"c1": running})
	close(src.gate)
	poll.Eventually(t, func() bool { return len(ee.e.Watch()) >= 2 }, 10*time.Second, 0, "relist events")
	assert.ElementsMatch(t, []string{"p/ContainerStarted/sb", "p/ContainerStarted/c1"}, drain(ee.e.Watch()))
	assert.Equal(t, int64(1), ee.metrics.streamConnected.Load())
}

func TestEventedHealth(t *testing.T) {
	base := newEnv(Config{})
	e, err := NewEvented(EventedConfig{Config: Config{Runtime: base.rt, Cache: base.cache, Clock: base.clock, ChannelCapacity: 1},
		Events: &stubEvents{}})
	require.NoError(t, err)
	e.Relist(context.Background())
	ok, err := e.Healthy()
	require.True(t, ok, "%v", err)
	base.clock.Step(5 * time.Minute)
	ok, _ = e.Healthy()
	assert.True(t, ok, "the safety net allows 10 minutes")
	base.clock.Step(6 * time.Minute)
	ok, err = e.Healthy()
	assert.False(t, ok)
	assert.Contains(t, err.Error(), "threshold is 10m0s")

	e.Relist(context.Background())
	e.generic.send(&PodLifecycleEvent{ID: "x", Type: PodSync})
	ok, err = e.Healthy()
	assert.False(t, ok)
	assert.EqualError(t, err, "EventedPLEG: pleg event channel capacity is full with 1 events")
}

// kubelet EventedPLEG.Start / updateGlobalCache: every
// globalCacheUpdatePeriod (5s) the cache's global timestamp becomes now,
// so workers blocked in GetNewerThan are released though the relister
// runs only every 300s.
func TestEventedUpdatesGlobalCacheTime(t *testing.T) {
	ee := startEvented(t)
	poll.Eventually(t, func() bool { return ee.src.callCount() == 1 }, 10*time.Second, 0, "stream open")
	start := ee.clock.Now()
	timesAfter := func(at time.Time) func() bool {
		return func() bool {
			ee.cache.mu.Lock()
			defer ee.cache.mu.Unlock()
			for _, ts := range ee.cache.times {
				if ts.Equal(at) {
					return true
				}
			}
			return false
		}
	}
	for i := 1; i <= 3; i++ {
		ee.clock.Step(DefaultEventedGlobalCacheUpdatePeriod)
		poll.Eventually(t, timesAfter(start.Add(time.Duration(i)*DefaultEventedGlobalCacheUpdatePeriod)), 10*time.Second, 0, fmt.Sprintf("global timestamp update %d", i))
	}
}
