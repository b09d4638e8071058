// Package pleg is the pod lifecycle event generator: it watches the
// container runtime and tells the pod workers when a pod's containers
// changed, keeping the pod status cache fresh on the way.
//
// Two implementations, as in the kubelet:
//
//   - GenericPLEG relists every RelistPeriod (1s): it lists all pods,
//     compares each container's and sandbox's state (running, exited,
//     unknown, non-existent) with the previous relist and emits
//     ContainerStarted, ContainerDied and ContainerRemoved (ContainerChanged
//     is computed but, like the kubelet, not sent). It refreshes the cached
//     status of every pod that changed before sending its events, retries
//     pods whose refresh failed on the next relist, and is unhealthy when no
//     relist succeeded for RelistThreshold (3m).
//   - EventedPLEG follows CRI GetContainerEvents, updating the cache from
//     each event's statuses and emitting events at once, with the relister
//     kept as a safety net (300s / 10m). On a stream error it relists at
//     once; after 5 failures in a row, or at once when the runtime answers
//     Unimplemented (containerd 1.6; errors.ErrUnsupported from the
//     EventSource), it falls back to relisting every
//     second and logs why.
//
// Deliberate differences from the kubelet: GenericPLEG reads up to
// Parallelism (16) changed pods' statuses at once, each pod's events still
// in order, where the kubelet reads them one after another; it does not
// read again a changed pod whose cached status already shows every
// container and sandbox in the state listed (the pod worker read it back
// after its sync: podworkers.StatusReadAt), where the kubelet reads every
// changed pod; EventedPLEG
// resets its failure count when a stream opens, and sends ContainerDied
// even for a start or a stop older than the cache's data (each type says
// why).
//
// # Use
//
//	cache := statuscache.New()
//	metrics := plegmetrics.New() // register with your registry
//	p, err := pleg.NewGeneric(pleg.Config{Runtime: manager, Cache: cache, Metrics: metrics})
//	if err != nil { ... }
//	go p.Run(ctx)
//	for ev := range p.Watch() { // closed when Run returns
//		// ev.ID is the pod UID; sync that pod's worker.
//	}
//
// Read Watch from the moment Run starts: a full channel drops events (and
// counts them), and containerd 2 replays to a new event subscriber what it
// held while none listened, up to 5 minutes of it.
//
// Run returns nil when ctx ends, after closing Watch; it runs once. The
// metrics are in package plegmetrics, so that pleg compiles without a
// metrics library; the CRI's events arrive converted (runtime.Client is
// an EventSource), so that it compiles without grpc.
package pleg
