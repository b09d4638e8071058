package pleg

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
)

// EventSource streams the runtime's container events; *runtime.Client
// implements it over CRI GetContainerEvents.
type EventSource interface {
	// ContainerEvents sends events to ch until ctx ends or the stream
	// fails, and returns why. connected, if not nil, is called once the
	// stream is open. An error that errors.Is errors.ErrUnsupported means
	// the runtime has no events (containerd 1.6).
	ContainerEvents(ctx context.Context, ch chan<- *kc.ContainerEvent, connected func()) error
}

// EventedConfig configures an EventedPLEG.
type EventedConfig struct {
	// Config is the relister's; its RelistPeriod and RelistThreshold are
	// the values used after falling back (default 1s and 3m).
	Config
	Events EventSource
	// SafetyRelistPeriod and SafetyRelistThreshold apply while events flow
	// (default 300s and 10m).
	SafetyRelistPeriod    time.Duration
	SafetyRelistThreshold time.Duration
	// MaxRetries stream failures in a row make it fall back (default 5).
	MaxRetries int
	// GlobalCacheUpdatePeriod is how often, while events flow, the cache's
	// global timestamp is moved to now (default 5s, the kubelet's
	// globalCacheUpdatePeriod): with the relister slowed to a safety net,
	// nothing else would wake a pod worker waiting in GetNewerThan for a
	// pod no event is about.
	GlobalCacheUpdatePeriod time.Duration
}

// EventedPLEG turns the runtime's container events into pod lifecycle
// events and cache updates at once, keeping a slow relister as a safety net.
// When the stream fails MaxRetries times in a row, or the runtime does not
// implement it, it falls back to relisting every RelistPeriod.
//
// Three deliberate differences from the kubelet's: it relists each time a
// stream opens, since a container that started between the last relist and
// the opening sends no event (the kubelet leaves it to the 300s safety
// relist); it resets its failure count when a stream opens, so occasional
// reconnects over days do not add up to a fallback (the kubelet counts them
// forever); and a container start or stop older than the cache's data
// still sends ContainerStarted or ContainerDied (the kubelet drops it),
// because the newer data may come from a read no lifecycle event came of
// (a pod sync's read-back, a relist's status read timed after its list).
type EventedPLEG struct {
	cfg      EventedConfig
	generic  *GenericPLEG
	fellBack atomic.Bool
}

// NewEvented returns an evented PLEG; Runtime, Cache and Events are
// required.
func NewEvented(cfg EventedConfig) (*EventedPLEG, error) {
	if cfg.Events == nil {
		return nil, errors.New("pleg: EventedConfig.Events is nil")
	}
	g, err := NewGeneric(cfg.Config)
	if err != nil {
		return nil, err
	}
	cfg.Config.setDefaults()
	if cfg.SafetyRelistPeriod <= 0 {
		cfg.SafetyRelistPeriod = DefaultEventedRelistPeriod
	}
	if cfg.SafetyRelistThreshold <= 0 {
		cfg.SafetyRelistThreshold = DefaultEventedRelistThreshold
	}
	if cfg.MaxRetries <= 0 {
		cfg.MaxRetries = DefaultEventedMaxRetries
	}
	if cfg.GlobalCacheUpdatePeriod <= 0 {
		cfg.GlobalCacheUpdatePeriod = DefaultEventedGlobalCacheUpdatePeriod
	}
	g.SetRelistPeriod(cfg.SafetyRelistPeriod, cfg.SafetyRelistThreshold)
	return &EventedPLEG{cfg: cfg, generic: g}, nil
}

// Watch returns the channel of pod lifecycle events (shared with the
// safety-net relister); it is closed when Run returns.
func (e *EventedPLEG) Watch() <-chan *PodLifecycleEvent { return e.generic.Watch() }

// Relisted is closed once the relister's first relist has succeeded.
func (e *EventedPLEG) Relisted() <-chan struct{} { return e.generic.Relisted() }

// Relist relists once, as the relister does.
func (e *EventedPLEG) Relist(ctx context.Context) { e.generic.Relist(ctx) }

// FellBack reports whether it now relists instead of following events.
func (e *EventedPLEG) FellBack() bool { return e.fellBack.Load() }

// Healthy is the relister's health (with the safety threshold while events
// flow), and unhealthy while the event channel is full.
func (e *EventedPLEG) Healthy() (bool, error) {
	if ch := e.generic.events; len(ch) == cap(ch) {
		return false, fmt.Errorf("EventedPLEG: pleg event channel capacity is full with %v events", len(ch))
	}
	return e.generic.Healthy()
}

// Run follows the runtime's events and runs the relister until ctx ends,
// then closes the Watch channel and returns nil. A second Run returns an
// error.
func (e *EventedPLEG) Run(ctx context.Context) error {
	if !e.generic.running.CompareAndSwap(false, true) {
		return errAlreadyRan
	}
	ch := make(chan *kc.ContainerEvent, e.cfg.ChannelCapacity)
	// Made before anything else runs, so that its first tick is one period
	// after Run started.
	ticker := e.cfg.Clock.NewTicker(e.cfg.GlobalCacheUpdatePeriod)
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); e.generic.run(ctx) }()
	go func() { defer wg.Done(); e.process(ctx, ch) }()
	go func() { defer wg.Done(); e.updateGlobalCache(ctx, ticker) }()
	e.follow(ctx, ch)
	wg.Wait()
	e.generic.close()
	return nil
}

// follow keeps the event stream open; each failure forces a relist, and
// too many in a row — or an Unimplemented answer — end in the fallback.
func (e *EventedPLEG) follow(ctx context.Context, ch chan<- *kc.ContainerEvent) {
	log, m := e.cfg.Log, e.cfg.Metrics
	failures := 0
	for ctx.Err() == nil {
		err := e.cfg.Events.ContainerEvents(ctx, ch, func() {
			m.StreamConnected()
			failures = 0 // a stream that opened resets the count (the kubelet never does)
			// What changed before the stream opened sends no event: a
			// relist now sees it, rather than the safety net minutes later.
			e.generic.relistSoon()
		})
		if ctx.Err() != nil {
			return
		}
		m.StreamFailed()
		if errors.Is(err, errors.ErrUnsupported) {
			log.Info("Evented PLEG: the runtime does not implement GetContainerEvents; falling back to relisting",
				"relistPeriod", e.cfg.RelistPeriod, "error", fmt.Sprint(err))
			e.fallBack()
			return
		}
		failures++
		log.Info("Evented PLEG: container event stream failed; relisting", "attempt", failures, "error", fmt.Sprint(err))
		e.generic.Relist(ctx)
		if failures >= e.cfg.MaxRetries {
			log.Info("Evented PLEG: too many stream failures; falling back to relisting", "relistPeriod", e.cfg.RelistPeriod)
			e.fallBack()
			return
		}
	}
}

// updateGlobalCache is the kubelet's EventedPLEG.updateGlobalCache: every
// tick the cache's global timestamp becomes now, so a worker waiting in
// GetNewerThan is released within a period even if no event or relist
// touches its pod. After the fall back the relister, every RelistPeriod,
// does it (as the kubelet stops this loop when it falls back).
func (e *EventedPLEG) updateGlobalCache(ctx context.Context, ticker clock.Ticker) {
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
			if e.fellBack.Load() {
				return
			}
			e.cfg.Cache.UpdateTime(e.cfg.Clock.Now())
		}
	}
}

func (e *EventedPLEG) fallBack() {
	e.fellBack.Store(true)
	e.generic.SetRelistPeriod(e.cfg.RelistPeriod, e.cfg.RelistThreshold)
}

// process turns each event into a cache update and, when the cache took it
// (it is newer than what the cache has), into lifecycle events.
func (e *EventedPLEG) process(ctx context.Context, ch <-chan *kc.ContainerEvent) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-ch:
			e.handle(ev)
		}
	}
}

func (e *EventedPLEG) handle(ev *kc.ContainerEvent) {
	st := ev.PodStatus
	if st == nil {
		return // no sandbox status: nothing says which pod it is
	}
	created := ev.CreatedAt
	e.cfg.Metrics.EventLatency(e.cfg.Clock.Since(created))
	uid := st.ID
	if !e.cfg.Cache.Set(uid, st, nil, created) {
		// Older than what the cache holds. The kubelet drops such an event
		// whole; but the newer data may be a read no lifecycle event came
		// of: a pod's sync reading its status back (podsync), or a relist
		// whose list still showed the container created while its status
		// read, timed after the start, saw it running. Without these a
		// start or a crash would wait for a resync or the 300s relist. An
		// extra sync costs little.
		switch ev.Type {
		case kc.ContainerStartedEvent:
			e.generic.send(&PodLifecycleEvent{ID: uid, Type: ContainerStarted, ContainerID: ev.ContainerID})
		case kc.ContainerStoppedEvent:
			e.generic.send(&PodLifecycleEvent{ID: uid, Type: ContainerDied, ContainerID: ev.ContainerID})
		}
		return
	}
	id := ev.ContainerID
	switch ev.Type {
	case kc.ContainerStartedEvent:
		e.generic.send(&PodLifecycleEvent{ID: uid, Type: ContainerStarted, ContainerID: id})
	case kc.ContainerStoppedEvent:
		e.generic.send(&PodLifecycleEvent{ID: uid, Type: ContainerDied, ContainerID: id})
	case kc.ContainerDeletedEvent:
		if len(st.SandboxStatuses) > 0 && st.SandboxStatuses[0].ID == id {
			e.cfg.Cache.Delete(uid) // the sandbox itself is gone
		}
		e.generic.send(&PodLifecycleEvent{ID: uid, Type: ContainerDied, ContainerID: id})
		e.generic.send(&PodLifecycleEvent{ID: uid, Type: ContainerRemoved, ContainerID: id})
	}
	// ContainerCreated only updates the cache, as in the kubelet.
}
