package prober

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// Result is a probe's effective result for a container.
type Result int8

// Results, as the kubelet's proberesults.
const (
	Unknown Result = iota - 1
	Success
	Failure
)

func (r Result) String() string {
	switch r {
	case Success:
		return "Success"
	case Failure:
		return "Failure"
	}
	return "UNKNOWN"
}

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
func initialResult(t ProbeType) Result {
	switch t {
	case Readiness:
		return Failure
	case Liveness:
		return Success
	}
	return Unknown
}

// Update is a change of a container's result.
type Update struct {
	ContainerID string
	Result      Result
	PodUID      types.UID
	ProbeType   ProbeType
}

// Results holds one probe type's current results by container ID, and
// sends an Update on every change. The consumer must read Updates: a full
// channel holds up the probe that produced the change.
type Results struct {
	probeType ProbeType
	mu        sync.RWMutex
	byID      map[string]Result
	updates   chan Update
}

func newResults(t ProbeType, capacity int) *Results {
	return &Results{probeType: t, byID: map[string]Result{}, updates: make(chan Update, capacity)}
}

// Get returns the container's result, if it has one.
func (r *Results) Get(containerID string) (Result, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	res, ok := r.byID[containerID]
	return res, ok
}

// Updates is the channel of result changes.
func (r *Results) Updates() <-chan Update { return r.updates }

func (r *Results) set(containerID string, res Result, pod types.UID) {
	r.mu.Lock()
	prev, ok := r.byID[containerID]
	changed := !ok || prev != res
	if changed {
		r.byID[containerID] = res
	}
	r.mu.Unlock()
	if changed {
		r.updates <- Update{ContainerID: containerID, Result: res, PodUID: pod, ProbeType: r.probeType}
	}
}

func (r *Results) remove(containerID string) {
	r.mu.Lock()
	delete(r.byID, containerID)
	r.mu.Unlock()
}
