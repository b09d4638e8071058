package prober

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/nodekit-dev/nodekit/prober/probe"
)

// ProbeType is liveness, readiness or startup.
type ProbeType string

// Probe types, named as the kubelet's metrics label them.
const (
	Liveness  ProbeType = "Liveness"
	Readiness ProbeType = "Readiness"
	Startup   ProbeType = "Startup"
)

// initialResult is what a new container ID starts with: not ready, alive,
// and not yet known to have started.
func initialResult(t ProbeType) probe.Result {
	switch t {
	case Readiness:
		return probe.Failure
	case Liveness:
		return probe.Success
	}
	return probe.Unknown
}

// ResultUpdate is a change of a container's result (the kubelet's
// proberesults.Update).
type ResultUpdate struct {
	ContainerID string
	// Result is Success, Failure or Unknown (a probe's Warning counts as
	// Success).
	Result    probe.Result
	PodUID    types.UID
	ProbeType ProbeType
}

// Results holds one probe type's current results by container ID, and
// sends a ResultUpdate on every change. The consumer must read Updates: a full
// channel holds up the probe that produced the change, until the prober's
// Run ends (its context): then nobody reads, and changes are kept, not
// sent.
type Results struct {
	probeType ProbeType
	mu        sync.RWMutex
	byID      map[string]probe.Result
	updates   chan ResultUpdate
	sendMu    sync.Mutex // serialises sends against close
	closed    bool
	abandoned chan struct{} // closed when Run's context ends
	abandon   func()
}

func newResults(t ProbeType, capacity int) *Results {
	r := &Results{probeType: t, byID: map[string]probe.Result{}, updates: make(chan ResultUpdate, capacity),
		abandoned: make(chan struct{})}
	r.abandon = sync.OnceFunc(func() { close(r.abandoned) })
	return r
}

// Get returns the container's result, if it has one.
func (r *Results) Get(containerID string) (probe.Result, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	res, ok := r.byID[containerID]
	return res, ok
}

// close closes Updates; later changes are kept but not sent.
func (r *Results) close() {
	r.sendMu.Lock()
	defer r.sendMu.Unlock()
	if !r.closed {
		r.closed = true
		close(r.updates)
	}
}

// Updates is the channel of result changes; it is closed when the
// prober's Run returns.
func (r *Results) Updates() <-chan ResultUpdate { return r.updates }

func (r *Results) set(containerID string, res probe.Result, pod types.UID) {
	r.mu.Lock()
	prev, ok := r.byID[containerID]
	changed := !ok || prev != res
	if changed {
		r.byID[containerID] = res
	}
	r.mu.Unlock()
	if changed {
		r.sendMu.Lock()
		defer r.sendMu.Unlock()
		if !r.closed {
			select {
			case r.updates <- ResultUpdate{ContainerID: containerID, Result: res, PodUID: pod, ProbeType: r.probeType}:
			case <-r.abandoned: // the consumer stopped with Run: a probe must not wait for it
			}
		}
	}
}

func (r *Results) remove(containerID string) {
	r.mu.Lock()
	delete(r.byID, containerID)
	r.mu.Unlock()
}
