package gc

import (
	"context"

	v1 "k8s.io/api/core/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	internalapi "k8s.io/cri-api/pkg/apis"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// RuntimeService is the part of a CRI runtime service the container GC
// uses. *runtime.Client implements it, as does anything that implements
// the cri-api's internalapi.RuntimeService.
type RuntimeService interface {
	ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error)
	StopPodSandbox(ctx context.Context, id string) error
	RemovePodSandbox(ctx context.Context, id string) error
	ContainerLister
	StopContainer(ctx context.Context, id string, timeout int64) error
	RemoveContainer(ctx context.Context, id string) error
}

// ContainerLister lists a runtime's containers: the image GC spares the
// images they use. *runtime.Client implements it.
type ContainerLister interface {
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
}

// ContainerStatusReader reads a container's status: the image GC spares
// the images its mounts name (image volumes). *runtime.Client implements
// it.
type ContainerStatusReader interface {
	ContainerStatus(ctx context.Context, id string, verbose bool) (*runtimeapi.ContainerStatusResponse, error)
}

// ImageService is the part of the CRI image service the image GC uses.
// *runtime.Client implements it, as does anything that implements the
// cri-api's internalapi.ImageManagerService.
type ImageService interface {
	ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error)
	ImageStatus(ctx context.Context, image *runtimeapi.ImageSpec, verbose bool) (*runtimeapi.ImageStatusResponse, error)
	RemoveImage(ctx context.Context, image *runtimeapi.ImageSpec) error
	ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error)
}

var (
	_ RuntimeService = internalapi.RuntimeService(nil)
	_ ImageService   = internalapi.ImageManagerService(nil)
)

// PodStateProvider is the kubelet's podStateProvider (its pod workers):
// what the container GC may remove of a pod, by UID. It is asked only once
// every pod source has delivered its pods (AllSourcesReady).
type PodStateProvider interface {
	// ShouldPodContentBeRemoved: the pod is deleted (or evicted) and
	// terminated, or the agent does not know it at all. All of its dead
	// containers, its inactive sandboxes and its log directory may go.
	ShouldPodContentBeRemoved(uid types.UID) bool
	// ShouldPodRuntimeBeRemoved: the pod is terminated, though perhaps not
	// deleted. Its dead containers and inactive sandboxes may go when the
	// caller asks for it (DeleteAllUnusedContainers, under disk pressure).
	ShouldPodRuntimeBeRemoved(uid types.UID) bool
}

// PodStateFunc is a PodStateProvider for agents whose pod workers forget
// a pod once it is terminated, as nodekit's podworkers do: it reports
// whether the pod is gone, and a gone pod's content and runtime objects
// may both be removed. With podworkers:
//
//	gc.PodStateFunc(func(uid types.UID) bool { _, known := workers.State(uid); return !known })
type PodStateFunc func(uid types.UID) (gone bool)

// ShouldPodContentBeRemoved implements PodStateProvider.
func (f PodStateFunc) ShouldPodContentBeRemoved(uid types.UID) bool { return f(uid) }

// ShouldPodRuntimeBeRemoved implements PodStateProvider.
func (f PodStateFunc) ShouldPodRuntimeBeRemoved(uid types.UID) bool { return f(uid) }

// EventRecorder records events on the Node; *events.Recorder (as
// client-go's record.EventRecorder) implements it.
type EventRecorder interface {
	Eventf(object apiruntime.Object, eventtype, reason, messageFmt string, args ...any)
}

// The kubelet's event reasons (pkg/kubelet/events) the GC records.
const (
	ReasonContainerGCFailed   = "ContainerGCFailed"
	ReasonImageGCFailed       = "ImageGCFailed"
	ReasonFreeDiskSpaceFailed = "FreeDiskSpaceFailed"
	ReasonInvalidDiskCapacity = "InvalidDiskCapacity"
)

// nodeRef is the kubelet's reference to its Node, which its events are on.
func nodeRef(name string) *v1.ObjectReference {
	return &v1.ObjectReference{Kind: "Node", Name: name, UID: types.UID(name)}
}

// event records on the node if there is a recorder.
func event(r EventRecorder, node string, reason, msg string) {
	if r != nil {
		r.Eventf(nodeRef(node), v1.EventTypeWarning, reason, "%s", msg)
	}
}
