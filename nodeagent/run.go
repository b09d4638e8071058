package nodeagent

import (
	"context"
	"errors"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekit-dev/nodekit/podsource"
)

// Run drives the agent until ctx ends: source updates, lifecycle events
// and probe results reach the pod workers; housekeeping ticks; container
// and image GC, the eviction manager and, in cluster mode, the Node, its
// lease, events and pod statuses run on their own. It returns once every
// goroutine it started has; the pods keep running in the runtime. An
// agent runs once.
//
// As the kubelet's syncLoop, it synchronizes no pod and does no
// housekeeping before the PLEG's first relist: until then the status cache
// shows nothing of what runs, and a pod found Failed in the API while its
// sandbox still runs (the agent was killed between its final status and
// its termination) would be taken for done, its sandbox left running.
// Deviation: the kubelet also stops synchronizing whenever the PLEG is
// unhealthy later; here a sync against a runtime that does not answer
// fails and is retried with back-off, and the evented PLEG, unhealthy
// while its channel is full, is drained by this loop alone.
func (a *Agent) Run(ctx context.Context) error {
	if a.ran.Swap(true) {
		return errors.New("nodeagent: Run called twice")
	}
	var wg sync.WaitGroup
	for _, src := range a.sources {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := src.Run(ctx); ctx.Err() == nil {
				a.logError(err, "pod source stopped")
			}
		}()
	}
	runs := []func(context.Context) error{a.pleg.Run, a.prober.Run, a.workers.Run, a.containerGC.Run, a.imageGC.Run}
	if a.eviction != nil {
		runs = append(runs, a.eviction.Run)
	}
	if a.cadvisor != nil {
		runs = append(runs, a.cadvisor.Run)
	}
	if a.logs != nil {
		runs = append(runs, a.logs.Run, a.oom.Run)
	}
	for _, run := range runs {
		wg.Add(1)
		go func() { defer wg.Done(); a.logError(run(ctx), "run") }()
	}
	if a.cluster != nil {
		a.cluster.run(ctx, a, &wg)
	}
	a.awaitFirstRelist(ctx)
	housekeeping := a.cfg.Clock.NewTicker(HousekeepingPeriod)
	defer housekeeping.Stop()
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case u := <-a.mux.Updates():
			a.apply(u)
		case ev, ok := <-a.pleg.Watch(): // closed once ctx ends
			if ok {
				a.workers.Sync(ev.ID)
			}
		case u := <-a.prober.Liveness().Updates(): // a closed channel's zero Update syncs nobody
			a.workers.Sync(u.PodUID)
		case u := <-a.prober.Readiness().Updates():
			a.workers.Sync(u.PodUID)
		case u := <-a.prober.Startup().Updates():
			a.workers.Sync(u.PodUID)
		case <-housekeeping.C(): // only once every source has delivered: no pod is taken for an orphan
			if a.sourcesApplied() {
				a.logError(a.syncer.Housekeeping(ctx, a.workers), "housekeeping")
				a.statuses.RemoveOrphans(a.keptStatuses())
			}
		}
	}
	wg.Wait()
	if a.cluster != nil {
		a.cluster.close()
	}
	return nil
}

// awaitFirstRelist returns once the PLEG has relisted or ctx ended.
func (a *Agent) awaitFirstRelist(ctx context.Context) {
	select {
	case <-a.pleg.Relisted():
		return
	default:
	}
	a.log.Info("Skipping pod synchronization until the PLEG has relisted")
	select {
	case <-ctx.Done():
	case <-a.pleg.Relisted():
		a.log.Info("PLEG relisted: synchronizing pods")
	}
}

// apply hands a source update to the workers and keeps the QoS cgroups'
// limits to the pods admitted.
func (a *Agent) apply(u podsource.PodUpdate) {
	a.dispatcher.Dispatch(u)
	if a.cgroups != nil {
		a.logError(a.cgroups.UpdateQOSCgroups(a.workers.Pods()), "updating QoS cgroups")
	}
}

// sourcesApplied says whether every source's first full set has reached
// the workers. The mux says a source is ready once its set is on the
// Updates channel; what is still buffered there is dispatched here first,
// on the loop that alone dispatches, so housekeeping and GC never take a
// pod still in the channel for an orphan.
func (a *Agent) sourcesApplied() bool {
	if a.sourcesReady.Load() {
		return true
	}
	if !a.mux.AllSourcesReady() {
		return false
	}
	for {
		select {
		case u := <-a.mux.Updates():
			a.apply(u)
		default:
			a.sourcesReady.Store(true)
			return true
		}
	}
}

// keptStatuses are the pods whose statuses matter: the workers' and those
// the sources still have (an API pod's final status, until it is deleted).
func (a *Agent) keptStatuses() map[types.UID]bool {
	keep := a.workers.Known()
	for uid := range a.mux.UIDs() {
		keep[uid] = true
	}
	return keep
}

func (a *Agent) logError(err error, msg string) {
	if err != nil {
		a.log.Error(err, msg)
	}
}
