package pleg

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
)

// Config configures a relisting PLEG. Zero fields take the kubelet's defaults.
type Config struct {
	Runtime RuntimeManager
	Cache   Cache
	Clock   clock.WithTicker
	// RelistPeriod is the pause between relists (default 1s).
	RelistPeriod time.Duration
	// RelistThreshold is how long without a successful relist makes the
	// PLEG unhealthy (default 3m).
	RelistThreshold time.Duration
	// ChannelCapacity is the Watch channel's size (default 1000); events
	// that do not fit are dropped and counted.
	ChannelCapacity int
	// Parallelism bounds concurrent status refreshes (default 16; 1 is the
	// kubelet's serial behaviour).
	Parallelism int
	// Metrics records relists and dropped events (default none);
	// plegmetrics.New gives the kubelet's Prometheus metrics.
	Metrics Metrics
	Log     logr.Logger
}

func (c *Config) validate() error {
	switch {
	case c.Runtime == nil:
		return errors.New("pleg: Config.Runtime is nil")
	case c.Cache == nil:
		return errors.New("pleg: Config.Cache is nil")
	}
	return nil
}

func (c *Config) setDefaults() {
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.RelistPeriod <= 0 {
		c.RelistPeriod = DefaultRelistPeriod
	}
	if c.RelistThreshold <= 0 {
		c.RelistThreshold = DefaultRelistThreshold
	}
	if c.ChannelCapacity <= 0 {
		c.ChannelCapacity = DefaultChannelCapacity
	}
	if c.Parallelism <= 0 {
		c.Parallelism = DefaultParallelism
	}
	if c.Metrics == nil {
		c.Metrics = noMetrics{}
	}
}

// GenericPLEG is the kubelet's relisting PLEG: every period it lists all
// pods, compares each container's state with the previous relist, refreshes
// the cached status of the pods that changed — several at once — and sends
// their events.
//
// The kubelet refreshes changed pods one after another, so a relist where
// many pods changed takes their sum: the multi-minute relists of
// kubernetes#93886 and #139788. Here up to Parallelism (default 16) pod
// statuses are read at once; each pod's events still go out in order, right
// after its status is cached, and the cache's global timestamp moves only
// when every refresh of the relist is done (BenchmarkRelistChurn: 100 of
// 1,000 pods changed, 10 ms runtime latency per status read).
type GenericPLEG struct {
	cfg    Config
	events chan *PodLifecycleEvent

	relistMu   sync.Mutex // one relist at a time
	records    map[types.UID]*podRecord
	reinspect  map[types.UID]*kc.Pod
	lastStart  time.Time
	lastRelist atomic.Pointer[time.Time] // last successful relist, for Healthy
	period     atomic.Int64              // current relist period, changeable by the evented PLEG
	threshold  atomic.Int64
	wake       chan struct{} // cuts Run's wait short (period change, stream opened)
	relisted   chan struct{} // closed after the first successful relist
	firstDone  sync.Once

	running atomic.Bool
	sendMu  sync.RWMutex // send against close
	closed  bool
}

type podRecord struct {
	old, current *kc.Pod
}

// NewGeneric returns a relisting PLEG; Runtime and Cache are required.
func NewGeneric(cfg Config) (*GenericPLEG, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg.setDefaults()
	g := &GenericPLEG{
		cfg:       cfg,
		events:    make(chan *PodLifecycleEvent, cfg.ChannelCapacity),
		records:   map[types.UID]*podRecord{},
		reinspect: map[types.UID]*kc.Pod{},
		wake:      make(chan struct{}, 1),
		relisted:  make(chan struct{}),
	}
	g.period.Store(int64(cfg.RelistPeriod))
	g.threshold.Store(int64(cfg.RelistThreshold))
	return g, nil
}

// Relisted is closed once a relist has succeeded and its statuses are in
// the cache.
func (g *GenericPLEG) Relisted() <-chan struct{} { return g.relisted }

// Watch returns the channel of pod lifecycle events; it is closed when Run
// returns.
func (g *GenericPLEG) Watch() <-chan *PodLifecycleEvent { return g.events }

// SetRelistPeriod changes the period and health threshold. A Run waiting
// out the old period relists at once and continues with the new one.
func (g *GenericPLEG) SetRelistPeriod(period, threshold time.Duration) {
	g.period.Store(int64(period))
	g.threshold.Store(int64(threshold))
	g.relistSoon()
}

// relistSoon makes a Run waiting out its period relist at once; a Run in
// the middle of a relist relists again when it ends.
func (g *GenericPLEG) relistSoon() {
	select {
	case g.wake <- struct{}{}:
	default:
	}
}

// Run relists until ctx ends, waiting the relist period after each relist
// ends (as wait.Until does), so a slow relist never overlaps the next. It
// then closes the Watch channel and returns nil. A PLEG runs once: a
// second Run returns an error.
func (g *GenericPLEG) Run(ctx context.Context) error {
	if !g.running.CompareAndSwap(false, true) {
		return errAlreadyRan
	}
	g.run(ctx)
	g.close()
	return nil
}

var errAlreadyRan = errors.New("pleg: Run was already called")

// close closes the Watch channel; events sent later are dropped.
func (g *GenericPLEG) close() {
	g.sendMu.Lock()
	defer g.sendMu.Unlock()
	g.closed = true
	close(g.events)
}

func (g *GenericPLEG) run(ctx context.Context) {
	for {
		g.Relist(ctx)
		t := g.cfg.Clock.NewTimer(time.Duration(g.period.Load()))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-g.wake:
			t.Stop()
		case <-t.C():
		}
	}
}

// Healthy fails with the kubelet's message when no relist succeeded within
// the threshold.
func (g *GenericPLEG) Healthy() (bool, error) {
	last := g.lastRelist.Load()
	if last == nil {
		return false, fmt.Errorf("pleg has yet to be successful")
	}
	threshold := time.Duration(g.threshold.Load())
	if elapsed := g.cfg.Clock.Since(*last); elapsed > threshold {
		return false, fmt.Errorf("pleg was last seen active %v ago; threshold is %v", elapsed, threshold)
	}
	return true, nil
}

// Relist lists the pods once, updates the cache for those that changed (or
// whose last refresh failed) and sends their events. A pod whose refresh
// fails keeps its old record, so its changes are found again next time.
func (g *GenericPLEG) Relist(ctx context.Context) {
	g.relistMu.Lock()
	defer g.relistMu.Unlock()
	m := g.cfg.Metrics
	start := g.cfg.Clock.Now()
	var interval time.Duration
	if !g.lastStart.IsZero() {
		interval = start.Sub(g.lastStart)
	}
	g.lastStart = start
	defer func() { m.Relisted(interval, g.cfg.Clock.Since(start)) }()

	pods, err := g.cfg.Runtime.GetPods(ctx, true)
	if err != nil {
		g.cfg.Log.Error(err, "PLEG: unable to retrieve pods")
		return
	}
	g.lastRelist.Store(&start)
	running, counts := countRunning(pods)
	m.Seen(start, running, counts)
	g.setCurrent(pods)

	var changed []refresh
	for uid, r := range g.records {
		events := computePodEvents(uid, r.old, r.current)
		_, again := g.reinspect[uid]
		if len(events) > 0 || again {
			changed = append(changed, refresh{uid: uid, pod: r.current, events: events})
		}
	}
	g.refreshAll(ctx, changed)

	g.reinspect = map[types.UID]*kc.Pod{}
	for i := range changed {
		if changed[i].err != nil {
			g.reinspect[changed[i].uid] = changed[i].pod
			continue
		}
		g.advance(changed[i].uid)
	}
	// Only now is every changed pod's status in the cache at least as new
	// as start.
	g.cfg.Cache.UpdateTime(start)
	g.firstDone.Do(func() { close(g.relisted) })
}

type refresh struct {
	uid    types.UID
	pod    *kc.Pod
	events []*PodLifecycleEvent
	err    error
}

// refreshAll updates the cache for each changed pod with up to Parallelism
// workers; each pod's events are sent, in order, right after its status is
// cached, so a consumer that reacts to an event finds the status.
func (g *GenericPLEG) refreshAll(ctx context.Context, todo []refresh) {
	workers := min(g.cfg.Parallelism, len(todo))
	if workers <= 1 {
		for i := range todo {
			g.refreshOne(ctx, &todo[i])
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < len(todo); i = int(next.Add(1) - 1) {
				g.refreshOne(ctx, &todo[i])
			}
		}()
	}
	wg.Wait()
}

func (g *GenericPLEG) refreshOne(ctx context.Context, r *refresh) {
	if r.err = g.updateCache(ctx, r.uid, r.pod); r.err != nil {
		g.cfg.Log.V(4).Info("PLEG: ignoring events for pod; will retry", "uid", r.uid, "error", r.err.Error())
		return
	}
	for _, e := range r.events {
		if e.Type == ContainerChanged {
			continue // not reliable enough to act on; the kubelet drops it too
		}
		g.send(e)
	}
}

func (g *GenericPLEG) send(e *PodLifecycleEvent) {
	g.sendMu.RLock()
	defer g.sendMu.RUnlock()
	if g.closed {
		return // Run returned: nobody reads any more
	}
	select {
	case g.events <- e:
	default:
		g.cfg.Metrics.EventDiscarded()
		g.cfg.Log.Error(nil, "PLEG: event channel is full, discarding event", "uid", e.ID, "type", e.Type)
	}
}

// updateCache reads the pod's status into the cache, or deletes the entry of
// a pod that no longer has any container or sandbox. A cached status that
// already shows what the listing found (the pod worker read it back after
// its sync, and its next sync takes it: podworkers.StatusReadAt) is left as
// it is, not read again; the relist's UpdateTime then vouches for it.
func (g *GenericPLEG) updateCache(ctx context.Context, uid types.UID, pod *kc.Pod) error {
	if pod == nil {
		g.cfg.Cache.Delete(uid)
		return nil
	}
	if cached, err := g.cfg.Cache.Get(uid); err == nil && showsListing(cached, pod) {
		return nil
	}
	ts := g.cfg.Clock.Now()
	status, err := g.cfg.Runtime.GetPodStatus(ctx, pod.ID, pod.Name, pod.Namespace)
	// The error is cached too: a pod worker waiting for this pod learns of it.
	g.cfg.Cache.Set(pod.ID, status, err, ts)
	return err
}

// showsListing says whether s has exactly the listed pod's containers and
// sandboxes, each in the state listed and none unknown. What a status says
// of a container beyond its state (start and finish times, exit code,
// reason) does not change while that state holds, so such a status is as
// true as of the listing as a new read would be.
func showsListing(s *kc.PodStatus, listed *kc.Pod) bool {
	if s == nil || len(s.ContainerStatuses) != len(listed.Containers) || len(s.SandboxStatuses) != len(listed.Sandboxes) {
		return false
	}
	// As many of each, and IDs are unique: each status found listed is all.
	for _, c := range s.ContainerStatuses {
		if l := listed.FindContainerByID(c.ID); l == nil || l.State != c.State || c.State == kc.ContainerStateUnknown {
			return false
		}
	}
	for _, sb := range s.SandboxStatuses {
		state := kc.ContainerStateExited // as GetPods lists a sandbox not ready
		if sb.Ready() {
			state = kc.ContainerStateRunning
		}
		if l := listed.FindSandboxByID(sb.ID); l == nil || l.State != state {
			return false
		}
	}
	return true
}

func (g *GenericPLEG) setCurrent(pods []*kc.Pod) {
	for _, r := range g.records {
		r.current = nil
	}
	for _, p := range pods {
		if r, ok := g.records[p.ID]; ok {
			r.current = p
		} else {
			g.records[p.ID] = &podRecord{current: p}
		}
	}
}

// advance makes the current listing the baseline for the pod's next
// comparison, and forgets pods that are gone.
func (g *GenericPLEG) advance(uid types.UID) {
	r, ok := g.records[uid]
	if !ok {
		return
	}
	if r.current == nil {
		delete(g.records, uid)
		return
	}
	r.old, r.current = r.current, nil
}

// countRunning counts the pods with a ready sandbox and the containers by
// state, for kubelet_running_pods and kubelet_running_containers.
func countRunning(pods []*kc.Pod) (int, map[kc.ContainerState]int) {
	running := 0
	counts := map[kc.ContainerState]int{}
	for _, p := range pods {
		for _, c := range p.Containers {
			counts[c.State]++
		}
		for _, s := range p.Sandboxes {
			if s.State == kc.ContainerStateRunning {
				running++
				break
			}
		}
	}
	return running, counts
}
