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

// PodLifecycleEvent is a change in one pod; Data is the container ID for
// container events.
type PodLifecycleEvent struct {
	ID   types.UID
	Type EventType
	Data any
}

// Runtime is what the PLEG reads: the pods with all their containers and
// sandboxes, and one pod's full status. *runtime.Manager implements it.
type Runtime interface {
	GetPods(ctx context.Context, all bool) ([]*kc.Pod, error)
	GetPodStatus(ctx context.Context, uid types.UID, name, namespace string) (*kc.PodStatus, error)
}

// Cache is where the PLEG records statuses: *statuscache.Cache implements it.
type Cache interface {
	Set(uid types.UID, status *kc.PodStatus, err error, timestamp time.Time) bool
	Delete(uid types.UID)
	UpdateTime(timestamp time.Time)
}

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
)

// PLEG is what an agent uses of a pod lifecycle event generator. Both
// GenericPLEG (relisting) and EventedPLEG (CRI events, relisting as a
// safety net) implement it, so an agent can swap one for the other.
type PLEG interface {
	// Run generates events until ctx ends.
	Run(ctx context.Context)
	// Watch is the channel of events.
	Watch() <-chan *PodLifecycleEvent
	// Healthy says whether the PLEG has relisted within its threshold.
	Healthy() (bool, error)
	// Relist lists the runtime once, now.
	Relist(ctx context.Context)
}

var (
	_ PLEG = (*GenericPLEG)(nil)
	_ PLEG = (*EventedPLEG)(nil)
)
