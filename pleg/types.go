package pleg

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
)

// EventType is the kind of a pod lifecycle event.
type EventType string

// The kubelet's pod lifecycle event types.
const (
	// ContainerStarted: a container is now running.
	ContainerStarted EventType = "ContainerStarted"
	// ContainerDied: a container exited (or vanished while running).
	ContainerDied EventType = "ContainerDied"
	// ContainerRemoved: a container no longer exists in the runtime.
	ContainerRemoved EventType = "ContainerRemoved"
	// PodSync: the pod needs a sync; not tied to one container.
	PodSync EventType = "PodSync"
	// ContainerChanged: a container moved to an unknown state. The relister
	// computes it but, as the kubelet does, does not send it.
	ContainerChanged EventType = "ContainerChanged"
)

// PodLifecycleEvent is a change in one pod. (The kubelet's has Data
// interface{}; here the only thing it ever held is typed.)
type PodLifecycleEvent struct {
	ID   types.UID
	Type EventType
	// ContainerID is the container (or sandbox) of a container event; ""
	// for PodSync.
	ContainerID string
}

// RuntimeManager is what the PLEG reads of the runtime manager: the pods
// with all their containers and sandboxes, and one pod's full status.
// *kuberuntime.Manager implements it.
type RuntimeManager interface {
	GetPods(ctx context.Context, all bool) ([]*kc.Pod, error)
	GetPodStatus(ctx context.Context, uid types.UID, name, namespace string) (*kc.PodStatus, error)
}

// Cache is where the PLEG records statuses: *statuscache.Cache implements it.
// Get is the cached status and error of a pod: GenericPLEG does not read
// again a pod whose cached status already shows what it listed.
type Cache interface {
	Get(uid types.UID) (*kc.PodStatus, error)
	Set(uid types.UID, status *kc.PodStatus, err error, timestamp time.Time) bool
	Delete(uid types.UID)
	UpdateTime(timestamp time.Time)
}

// Metrics receives what a PLEG measures. plegmetrics.New returns the
// kubelet's kubelet_pleg_*, kubelet_evented_pleg_* and kubelet_running_*
// metrics, as a Prometheus collector that implements it; nil records
// nothing. It is an interface so that pleg itself compiles without a
// metrics library.
type Metrics interface {
	// Relisted is called after every relist, failed or not: the time since
	// the previous one started (0 for the first) and how long it took.
	Relisted(interval, duration time.Duration)
	// Seen is called when a relist listed the runtime, with its start;
	// pods are those with a ready sandbox, containers counted by state.
	Seen(start time.Time, pods int, containers map[kc.ContainerState]int)
	// EventDiscarded: the Watch channel was full.
	EventDiscarded()
	// StreamConnected and StreamFailed count the evented PLEG's streams.
	StreamConnected()
	StreamFailed()
	// EventLatency is how old a runtime event was when it arrived.
	EventLatency(d time.Duration)
}

type noMetrics struct{}

func (noMetrics) Relisted(time.Duration, time.Duration)          {}
func (noMetrics) Seen(time.Time, int, map[kc.ContainerState]int) {}
func (noMetrics) EventDiscarded()                                {}
func (noMetrics) StreamConnected()                               {}
func (noMetrics) StreamFailed()                                  {}
func (noMetrics) EventLatency(time.Duration)                     {}

// Defaults from the kubelet.
const (
	DefaultRelistPeriod    = time.Second
	DefaultRelistThreshold = 3 * time.Minute
	DefaultChannelCapacity = 1000
	// DefaultParallelism is how many pod statuses a relist refreshes at once
	// (the kubelet: one at a time). 16 brings a relist where 100 pods changed
	// and each status read waits 10 ms on the runtime from >1 s to ~130 ms
	// on two cores (BenchmarkRelistChurn); 8 leaves it near 200 ms.
	DefaultParallelism = 16
	// Evented PLEG: the relister slows to a safety net while events flow.
	DefaultEventedRelistPeriod    = 300 * time.Second
	DefaultEventedRelistThreshold = 10 * time.Minute
	// DefaultEventedMaxRetries stream failures make it fall back to relisting.
	DefaultEventedMaxRetries = 5
	// DefaultEventedGlobalCacheUpdatePeriod is how often the evented PLEG
	// moves the cache's global timestamp (the kubelet's
	// globalCacheUpdatePeriod).
	DefaultEventedGlobalCacheUpdatePeriod = 5 * time.Second
)

// PLEG is what an agent uses of a pod lifecycle event generator. Both
// GenericPLEG (relisting) and EventedPLEG (CRI events, relisting as a
// safety net) implement it, so an agent can swap one for the other.
type PLEG interface {
	// Run generates events until ctx ends, then closes the Watch channel
	// and returns nil. It returns an error at once if already running.
	Run(ctx context.Context) error
	// Watch is the channel of events; it is closed when Run returns.
	Watch() <-chan *PodLifecycleEvent
	// Healthy says whether the PLEG has relisted within its threshold.
	Healthy() (bool, error)
	// Relisted is closed once a relist has succeeded and its statuses are
	// in the cache: before, the cache shows nothing of what runs.
	Relisted() <-chan struct{}
	// Relist lists the runtime once, now.
	Relist(ctx context.Context)
}

var (
	_ PLEG = (*GenericPLEG)(nil)
	_ PLEG = (*EventedPLEG)(nil)
)
