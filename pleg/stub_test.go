package pleg

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
)

// stubRuntime is an in-memory RuntimeManager whose pods the tests edit directly.
type stubRuntime struct {
	mu        sync.Mutex
	pods      map[types.UID]*kc.Pod
	listErr   error
	statusErr map[types.UID]error
	calls     map[types.UID]int
	delay     func(uid types.UID) // runs inside GetPodStatus, unlocked
}

func newStubRuntime() *stubRuntime {
	return &stubRuntime{pods: map[types.UID]*kc.Pod{}, statusErr: map[types.UID]error{}, calls: map[types.UID]int{}}
}

func (s *stubRuntime) set(uid types.UID, sandboxes map[string]kc.ContainerState, containers map[string]kc.ContainerState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sandboxes == nil && containers == nil {
		delete(s.pods, uid)
		return
	}
	p := &kc.Pod{ID: uid, Name: string(uid), Namespace: "ns"}
	for id, st := range sandboxes {
		p.Sandboxes = append(p.Sandboxes, &kc.Container{ID: id, Name: "POD", State: st})
	}
	for id, st := range containers {
		p.Containers = append(p.Containers, &kc.Container{ID: id, Name: "c-" + id, State: st})
	}
	s.pods[uid] = p
}

func (s *stubRuntime) GetPods(ctx context.Context, all bool) ([]*kc.Pod, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listErr != nil {
		return nil, s.listErr
	}
	out := make([]*kc.Pod, 0, len(s.pods))
	for _, p := range s.pods {
		out = append(out, p)
	}
	return out, nil
}

func (s *stubRuntime) GetPodStatus(ctx context.Context, uid types.UID, name, ns string) (*kc.PodStatus, error) {
	if s.delay != nil {
		s.delay(uid)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[uid]++
	st := &kc.PodStatus{ID: uid, Name: name, Namespace: ns}
	if p := s.pods[uid]; p != nil {
		for _, c := range p.Containers {
			st.ContainerStatuses = append(st.ContainerStatuses, &kc.ContainerStatus{ID: c.ID, Name: c.Name, State: c.State})
		}
	}
	return st, s.statusErr[uid]
}

// recordingCache records what the PLEG writes.
type recordingCache struct {
	mu      sync.Mutex
	sets    map[types.UID][]time.Time
	refuse  bool // Set reports the data older than the cache's
	errs    map[types.UID]error
	deletes []types.UID
	times   []time.Time
}

func newRecordingCache() *recordingCache {
	return &recordingCache{sets: map[types.UID][]time.Time{}, errs: map[types.UID]error{}}
}

func (c *recordingCache) Set(uid types.UID, _ *kc.PodStatus, err error, ts time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sets[uid] = append(c.sets[uid], ts)
	c.errs[uid] = err
	return !c.refuse
}

// Get has nothing cached: every changed pod is read.
func (c *recordingCache) Get(uid types.UID) (*kc.PodStatus, error) {
	return &kc.PodStatus{ID: uid}, nil
}

func (c *recordingCache) Delete(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deletes = append(c.deletes, uid)
}

func (c *recordingCache) UpdateTime(ts time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.times = append(c.times, ts)
}

// countMetrics records what the PLEG reports.
type countMetrics struct {
	discarded, streamConnected, streamFailed atomic.Int64

	mu         sync.Mutex
	seen       time.Time
	pods       int
	containers map[kc.ContainerState]int
}

func (*countMetrics) Relisted(time.Duration, time.Duration) {}
func (m *countMetrics) Seen(start time.Time, pods int, containers map[kc.ContainerState]int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.seen, m.pods, m.containers = start, pods, containers
}
func (m *countMetrics) EventDiscarded()          { m.discarded.Add(1) }
func (m *countMetrics) StreamConnected()         { m.streamConnected.Add(1) }
func (m *countMetrics) StreamFailed()            { m.streamFailed.Add(1) }
func (*countMetrics) EventLatency(time.Duration) {}
