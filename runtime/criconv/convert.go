// Package criconv converts the CRI's types to kubecontainer's: container
// states, sandbox and container statuses, container events. It is the one
// place for them, shared by the CRI client (package runtime), the pod-level
// manager (kuberuntime) and the garbage collectors (gc), and it compiles no
// more than kubecontainer and the CRI's API, so the vocabulary packages stay
// free of grpc and gc of the client's metrics.
//
//	state := criconv.ContainerStateFromCRI(c.State) // kubecontainer.ContainerStateRunning, ...
//	status := criconv.ContainerStatusFromCRI(resp.Status, sandboxID)
package criconv

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	kc "github.com/nodekit-dev/nodekit/kubecontainer"
	"github.com/nodekit-dev/nodekit/resources"
)

// ContainerStateFromCRI converts a CRI container state.
func ContainerStateFromCRI(s runtimeapi.ContainerState) kc.ContainerState {
	switch s {
	case runtimeapi.ContainerState_CONTAINER_CREATED:
		return kc.ContainerStateCreated
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		return kc.ContainerStateRunning
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		return kc.ContainerStateExited
	default:
		return kc.ContainerStateUnknown
	}
}

// SandboxStatusFromCRI converts a CRI sandbox status.
func SandboxStatusFromCRI(s *runtimeapi.PodSandboxStatus) *kc.SandboxStatus {
	md := s.GetMetadata()
	out := &kc.SandboxStatus{
		ID: s.Id, Name: md.GetName(), Namespace: md.GetNamespace(), UID: types.UID(md.GetUid()), Attempt: md.GetAttempt(),
		State: kc.SandboxStateNotReady, CreatedAt: unixNano(s.CreatedAt),
		HostNetwork: s.GetLinux().GetNamespaces().GetOptions().GetNetwork() == runtimeapi.NamespaceMode_NODE,
	}
	if s.State == runtimeapi.PodSandboxState_SANDBOX_READY {
		out.State = kc.SandboxStateReady
	}
	if s.Network != nil && s.Network.Ip != "" {
		out.IPs = []string{s.Network.Ip}
		for _, ip := range s.Network.AdditionalIps {
			out.IPs = append(out.IPs, ip.Ip)
		}
	}
	return out
}

// ContainerStatusFromCRI converts a CRI container status, reading the
// kubelet's labels for the name, hash and restart count.
func ContainerStatusFromCRI(s *runtimeapi.ContainerStatus, sandboxID string) *kc.ContainerStatus {
	li := kc.ReadLabels(s.Labels, s.Annotations)
	cs := &kc.ContainerStatus{
		ID: s.Id, Name: s.GetMetadata().GetName(), State: ContainerStateFromCRI(s.State),
		CreatedAt: unixNano(s.CreatedAt), StartedAt: unixNano(s.StartedAt), FinishedAt: unixNano(s.FinishedAt),
		ExitCode: int(s.ExitCode), Image: s.GetImage().GetImage(), ImageRef: s.ImageRef,
		Hash: li.Hash, RestartCount: li.RestartCount, Reason: s.Reason, Message: s.Message,
		SandboxID: sandboxID,
	}
	if li.ContainerName != "" {
		cs.Name = li.ContainerName
	}
	cs.Resources = ContainerResourcesFromCRI(s.GetResources())
	return cs
}

// ContainerResourcesFromCRI is the kubelet's toKubeContainerResources:
// the requests and limits a runtime reports for a running container, or
// nil when it reports none. Shares below MinShares (2) and a quota of -1
// mean none.
func ContainerResourcesFromCRI(r *runtimeapi.ContainerResources) *kc.ContainerResources {
	l := r.GetLinux()
	if l == nil {
		return nil
	}
	var out kc.ContainerResources
	if l.CpuPeriod > 0 {
		out.CPULimitMilli = max(resources.QuotaToMilliCPU(l.CpuQuota, l.CpuPeriod), 0)
	}
	if l.CpuShares > 0 {
		out.CPURequestMilli = resources.SharesToMilliCPU(l.CpuShares)
	}
	out.MemoryLimitBytes = max(l.MemoryLimitInBytes, 0)
	if out == (kc.ContainerResources{}) {
		return nil
	}
	return &out
}

func unixNano(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

var eventTypes = map[runtimeapi.ContainerEventType]kc.ContainerEventType{
	runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT: kc.ContainerCreatedEvent,
	runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT: kc.ContainerStartedEvent,
	runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT: kc.ContainerStoppedEvent,
	runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT: kc.ContainerDeletedEvent,
}

// ContainerEventFromCRI converts a CRI container event. The pod's status
// is built from the sandbox and container statuses the event carries (the
// evented PLEG's GeneratePodStatus); it is nil when the event has no
// sandbox status to tell which pod it is about.
func ContainerEventFromCRI(ev *runtimeapi.ContainerEventResponse) *kc.ContainerEvent {
	out := &kc.ContainerEvent{ContainerID: ev.ContainerId, Type: eventTypes[ev.ContainerEventType], CreatedAt: unixNano(ev.CreatedAt)}
	sb := ev.GetPodSandboxStatus()
	if sb.GetMetadata() == nil {
		return out
	}
	sandbox := SandboxStatusFromCRI(sb)
	s := &kc.PodStatus{ID: sandbox.UID, Name: sandbox.Name, Namespace: sandbox.Namespace,
		SandboxStatuses: []*kc.SandboxStatus{sandbox}}
	if sandbox.Ready() {
		s.IPs = sandbox.IPs
	}
	for _, c := range ev.ContainersStatuses {
		s.ContainerStatuses = append(s.ContainerStatuses, ContainerStatusFromCRI(c, sb.Id))
	}
	kc.SortNewestFirst(s.ContainerStatuses)
	out.PodStatus = s
	return out
}
