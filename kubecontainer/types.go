package kubecontainer

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
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

// StateFromCRI converts a CRI container state.
func StateFromCRI(s runtimeapi.ContainerState) ContainerState {
	switch s {
	case runtimeapi.ContainerState_CONTAINER_CREATED:
		return ContainerStateCreated
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		return ContainerStateRunning
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		return ContainerStateExited
	default:
		return ContainerStateUnknown
	}
}

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
	SandboxStatuses []*runtimeapi.PodSandboxStatus
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
	Resources    *runtimeapi.ContainerResources
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
