package eviction

import (
	"context"

	v1 "k8s.io/api/core/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// SummaryProvider gives the Summary API's stats: the pods' usage ranks
// them, and the node's fields give the signals a SignalProvider does not.
// *server.SummaryProvider implements it.
type SummaryProvider interface {
	Summary(ctx context.Context) (*statsapi.Summary, error)
}

// SummaryProviderFunc adapts a function to a SummaryProvider.
type SummaryProviderFunc func(ctx context.Context) (*statsapi.Summary, error)

// Summary calls f.
func (f SummaryProviderFunc) Summary(ctx context.Context) (*statsapi.Summary, error) { return f(ctx) }

// SignalProvider reads the node's signals; its observations replace the
// summary's. *LinuxSignals implements it. On an error, the observations
// it returns (those it could read) are used.
type SignalProvider interface {
	Signals(ctx context.Context) (Observations, error)
}

// SignalProviderFunc adapts a function to a SignalProvider.
type SignalProviderFunc func(ctx context.Context) (Observations, error)

// Signals calls f.
func (f SignalProviderFunc) Signals(ctx context.Context) (Observations, error) { return f(ctx) }

// ActivePods lists the pods that may be evicted: those admitted and not
// yet terminated (the kubelet's GetActivePods, which its eviction manager
// takes as an ActivePodsFunc).
type ActivePods interface {
	ActivePods() []*v1.Pod
}

// ActivePodsFunc adapts a function to an ActivePods
// (eviction.ActivePodsFunc(workers.Pods)).
type ActivePodsFunc func() []*v1.Pod

// ActivePods calls f.
func (f ActivePodsFunc) ActivePods() []*v1.Pod { return f() }

// PodKiller evicts: it kills e.Pod with e.GracePeriodSeconds and
// publishes the status e.UpdateStatus makes, and returns once the pod's
// containers are stopped (the kubelet's KillPodFunc, killPodNow). An error
// is logged; the pod still counts as evicted.
type PodKiller interface {
	KillPod(ctx context.Context, e Eviction) error
}

// PodKillerFunc adapts a function to a PodKiller.
type PodKillerFunc func(ctx context.Context, e Eviction) error

// KillPod calls f.
func (f PodKillerFunc) KillPod(ctx context.Context, e Eviction) error { return f(ctx, e) }

// NodeReclaimer frees disk without evicting pods: the kubelet's container
// GC (DeleteAllUnusedContainers: dead containers and sandboxes) and image
// GC (DeleteUnusedImages: every image no container uses). Disk pressure
// calls them first (containers, then images, as the kubelet), then
// observes again and evicts a pod only if a threshold is still met.
type NodeReclaimer interface {
	DeleteAllUnusedContainers(ctx context.Context) error
	DeleteUnusedImages(ctx context.Context) error
}

// NodeReclaimerFuncs adapts two functions to a NodeReclaimer; a nil one
// does nothing.
type NodeReclaimerFuncs struct {
	Containers func(ctx context.Context) error
	Images     func(ctx context.Context) error
}

// DeleteAllUnusedContainers calls f.Containers.
func (f NodeReclaimerFuncs) DeleteAllUnusedContainers(ctx context.Context) error {
	if f.Containers == nil {
		return nil
	}
	return f.Containers(ctx)
}

// DeleteUnusedImages calls f.Images.
func (f NodeReclaimerFuncs) DeleteUnusedImages(ctx context.Context) error {
	if f.Images == nil {
		return nil
	}
	return f.Images(ctx)
}

// DiskInfo tells where the runtime's filesystems are (the kubelet's
// DiskInfoProvider): an image filesystem apart from --root-dir's, and
// containers' writable layers apart from the images. *LinuxSignals
// implements it.
type DiskInfo interface {
	HasDedicatedImageFs(ctx context.Context) (bool, error)
	HasDedicatedContainerFs(ctx context.Context) (bool, error)
}

// EventRecorder records the kubelet's eviction events: EvictionThresholdMet
// on the node, Evicted (with annotations) on the pod. *events.Recorder
// (as client-go's record.EventRecorder) implements it.
type EventRecorder interface {
	Eventf(object apiruntime.Object, eventtype, reason, messageFmt string, args ...any)
	AnnotatedEventf(object apiruntime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...any)
}
