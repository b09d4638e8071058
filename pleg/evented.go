package pleg

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
)

// EventSource streams CRI container events; *runtime.Client implements it.
// It returns when the stream ends; an error whose gRPC code is Unimplemented
// means the runtime has no events (containerd 1.6).
type EventSource interface {
	GetContainerEvents(ctx context.Context, ch chan *runtimeapi.ContainerEventResponse,
		established func(runtimeapi.RuntimeService_GetContainerEventsClient)) error
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
}

// EventedPLEG turns the runtime's container events into pod lifecycle
// events and cache updates at once, keeping a slow relister as a safety net.
// When the stream fails MaxRetries times in a row, or the runtime does not
// implement it, it falls back to relisting every RelistPeriod.
type EventedPLEG struct {
	cfg      EventedConfig
	generic  *GenericPLEG
	fellBack atomic.Bool
}

// NewEvented returns an evented PLEG.
func NewEvented(cfg EventedConfig) *EventedPLEG {
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
	g := NewGeneric(cfg.Config)
	g.SetRelistPeriod(cfg.SafetyRelistPeriod, cfg.SafetyRelistThreshold)
	return &EventedPLEG{cfg: cfg, generic: g}
}

// Watch returns the channel of pod lifecycle events (shared with the
// safety-net relister).
func (e *EventedPLEG) Watch() <-chan *PodLifecycleEvent { return e.generic.Watch() }

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

// Run follows the runtime's events and runs the relister until ctx ends.
func (e *EventedPLEG) Run(ctx context.Context) {
	ch := make(chan *runtimeapi.ContainerEventResponse, e.cfg.ChannelCapacity)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); e.generic.Run(ctx) }()
	go func() { defer wg.Done(); e.process(ctx, ch) }()
	e.follow(ctx, ch)
	wg.Wait()
}

// follow keeps the event stream open; each failure forces a relist, and
// too many in a row — or an Unimplemented answer — end in the fallback.
func (e *EventedPLEG) follow(ctx context.Context, ch chan *runtimeapi.ContainerEventResponse) {
	log, m := e.cfg.Log, e.cfg.Metrics
	failures := 0
	for ctx.Err() == nil {
		err := e.cfg.Events.GetContainerEvents(ctx, ch, func(runtimeapi.RuntimeService_GetContainerEventsClient) {
			m.connSuccess.Inc()
			failures = 0 // a stream that opened resets the count (the kubelet never does)
		})
		if ctx.Err() != nil {
			return
		}
		m.connErrors.Inc()
		if status.Code(err) == codes.Unimplemented {
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

func (e *EventedPLEG) fallBack() {
	e.fellBack.Store(true)
	e.generic.SetRelistPeriod(e.cfg.RelistPeriod, e.cfg.RelistThreshold)
}

// process turns each event into a cache update and, when the cache took it
// (it is newer than what the cache has), into lifecycle events.
func (e *EventedPLEG) process(ctx context.Context, ch <-chan *runtimeapi.ContainerEventResponse) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-ch:
			e.handle(ev)
		}
	}
}

func (e *EventedPLEG) handle(ev *runtimeapi.ContainerEventResponse) {
	st, ok := kc.PodStatusFromEvent(ev)
	if !ok {
		return // no sandbox status: nothing says which pod it is
	}
	created := time.Unix(0, ev.CreatedAt)
	e.cfg.Metrics.eventLatency.Observe(e.cfg.Clock.Since(created).Seconds())
	uid := st.ID
	if !e.cfg.Cache.Set(uid, st, nil, created) {
		return // older than what the cache holds: already reported
	}
	id := ev.ContainerId
	switch ev.ContainerEventType {
	case runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT:
		e.generic.send(&PodLifecycleEvent{ID: uid, Type: ContainerStarted, Data: id})
	case runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT:
		e.generic.send(&PodLifecycleEvent{ID: uid, Type: ContainerDied, Data: id})
	case runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT:
		if st.SandboxStatuses[0].Id == id {
			e.cfg.Cache.Delete(uid) // the sandbox itself is gone
		}
		e.generic.send(&PodLifecycleEvent{ID: uid, Type: ContainerDied, Data: id})
		e.generic.send(&PodLifecycleEvent{ID: uid, Type: ContainerRemoved, Data: id})
	}
	// CONTAINER_CREATED only updates the cache, as in the kubelet.
}
