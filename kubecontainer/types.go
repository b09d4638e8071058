package kubecontainer

import (
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// ContainerState is a container's state as the kubelet sees it.
type ContainerState string

// The kubelet's container states (pkg/kubelet/container/runtime.go).
const (
	ContainerStateCreated ContainerState = "created"
	ContainerStateRunning ContainerState = "running"
	ContainerStateExited  ContainerState = "exited"
	ContainerStateUnknown ContainerState = "unknown"
)

// Pod is a pod as the runtime knows it: its sandboxes and containers, found
// through the labels the manager sets. It may belong to no current *v1.Pod.
type Pod struct {
	ID         types.UID
	Name       string
	Namespace  string
	Containers []*Container
	// Sandboxes are the pod's sandboxes, as containers (kubelet convention).
	Sandboxes []*Container
}

// Container is one container or sandbox in a Pod listing.
type Container struct {
	ID        string
	Name      string
	Image     string
	ImageRef  string
	Hash      uint64
	State     ContainerState
	SandboxID string
	CreatedAt int64 // UnixNano
}

// PodStatus is the runtime's full view of one pod (kubecontainer.PodStatus).
type PodStatus struct {
	ID        types.UID
	Name      string
	Namespace string
	// IPs of the newest sandbox when it is ready; empty for host-network pods.
	IPs []string
	// SandboxStatuses, newest first.
	SandboxStatuses []*SandboxStatus
	// ContainerStatuses, newest first.
	ContainerStatuses []*ContainerStatus
	// TimeStamp is when this status was read (set by whoever caches it).
	TimeStamp time.Time
}

// ContainerStatus is one container's status (kubecontainer.Status).
type ContainerStatus struct {
	ID           string
	Name         string
	State        ContainerState
	CreatedAt    time.Time
	StartedAt    time.Time
	FinishedAt   time.Time
	ExitCode     int
	Image        string
	ImageRef     string
	Hash         uint64
	RestartCount int
	Reason       string
	Message      string
	SandboxID    string
	// Resources are what the runtime reports the running container has
	// (CRI ContainerStatus.resources); nil when it reports none.
	Resources *ContainerResources
}

// ContainerResources are a container's resources as its runtime reports
// them (the kubelet's kubecontainer.ContainerResources), in the API's
// units; 0 is "not reported" (no limit, or no value).
type ContainerResources struct {
	CPURequestMilli  int64 // from cpu.shares
	CPULimitMilli    int64 // from the CFS quota and period
	MemoryLimitBytes int64
}

// SandboxState is a pod sandbox's state.
type SandboxState string

// The CRI's two sandbox states.
const (
	SandboxStateReady    SandboxState = "ready"
	SandboxStateNotReady SandboxState = "notready"
)

// SandboxStatus is one pod sandbox's status, the parts of the CRI's
// PodSandboxStatus a node agent decides on.
type SandboxStatus struct {
	ID        string
	Name      string
	Namespace string
	UID       types.UID
	// Attempt counts the pod's sandboxes: 0 for the first.
	Attempt   uint32
	State     SandboxState
	CreatedAt time.Time
	// IPs, primary first; none on the host network.
	IPs []string
	// HostNetwork is true when the sandbox shares the node's network namespace.
	HostNetwork bool
}

// Ready reports whether the sandbox is ready.
func (s *SandboxStatus) Ready() bool { return s != nil && s.State == SandboxStateReady }

// Mount is a host path, or an image, mounted into a container.
type Mount struct {
	// Name is the pod volume's name; "" for the mounts the runtime
	// manager adds itself (/etc/hosts, the termination message file).
	Name          string
	ContainerPath string
	// HostPath is the node's path to mount; "" for an image volume.
	HostPath string
	ReadOnly bool
	// Image is, for an image volume, the image the runtime mounts
	// instead of a host path: the image ID (or reference) the pull
	// resolved, as the kubelet passes it in the CRI Mount's image. The
	// runtime manager sets it from its pull of the pod's volumes[].image.
	Image string
	// ImageSubPath is the path inside Image to mount (the volumeMount's
	// subPath or expanded subPathExpr); "" for the whole image.
	ImageSubPath string
	// Device says HostPath is a block device a volumeDevices entry puts at
	// ContainerPath: the runtime gets it as a device (permissions mrw, r
	// when ReadOnly), not as a mount.
	Device bool
}

// ContainerEventType is the kind of a runtime container event.
type ContainerEventType string

// The CRI's container event types.
const (
	ContainerCreatedEvent ContainerEventType = "ContainerCreated"
	ContainerStartedEvent ContainerEventType = "ContainerStarted"
	ContainerStoppedEvent ContainerEventType = "ContainerStopped"
	ContainerDeletedEvent ContainerEventType = "ContainerDeleted"
)

// ContainerEvent is one container event from the runtime. It carries the
// pod's status as the runtime saw it at that moment (its sandbox and every
// container), so no further runtime call is needed to act on it.
type ContainerEvent struct {
	ContainerID string
	Type        ContainerEventType
	CreatedAt   time.Time
	PodStatus   *PodStatus
}

// FindContainerStatusByName returns the newest status of the named container, or nil.
func (s *PodStatus) FindContainerStatusByName(name string) *ContainerStatus {
	if s == nil {
		return nil
	}
	for _, c := range s.ContainerStatuses {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// AnySandboxReady reports whether any of the pod's sandboxes is ready
// (false for a nil status).
func (s *PodStatus) AnySandboxReady() bool {
	if s == nil {
		return false
	}
	for _, sb := range s.SandboxStatuses {
		if sb.Ready() {
			return true
		}
	}
	return false
}

// RunningContainers returns the statuses of the running containers.
func (s *PodStatus) RunningContainers() []*ContainerStatus {
	var out []*ContainerStatus
	for _, c := range s.ContainerStatuses {
		if c.State == ContainerStateRunning {
			out = append(out, c)
		}
	}
	return out
}

// FindContainerByID returns the container with this ID, or nil.
func (p *Pod) FindContainerByID(id string) *Container {
	for _, c := range p.Containers {
		if c.ID == id {
			return c
		}
	}
	return nil
}

// FindSandboxByID returns the sandbox with this ID, or nil.
func (p *Pod) FindSandboxByID(id string) *Container {
	for _, s := range p.Sandboxes {
		if s.ID == id {
			return s
		}
	}
	return nil
}

// StartResult is the outcome of one try to start a container in a sync:
// Reason is the kubelet's waiting reason when the start failed (e.g.
// CrashLoopBackOff, ErrImagePull), "" when the container started.
type StartResult struct {
	Container string
	Reason    string
	Message   string
}

// SortNewestFirst orders container statuses newest first; at equal creation
// times the higher restart count is the newer.
func SortNewestFirst(cs []*ContainerStatus) {
	sort.SliceStable(cs, func(i, j int) bool {
		a, b := cs[i], cs[j]
		if !a.CreatedAt.Equal(b.CreatedAt) {
			return a.CreatedAt.After(b.CreatedAt)
		}
		return a.RestartCount > b.RestartCount
	})
}
