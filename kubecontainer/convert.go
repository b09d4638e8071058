package kubecontainer

import (
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/types"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// SandboxIPs returns a sandbox's IPs, primary first; none for a sandbox on
// the host network.
func SandboxIPs(s *runtimeapi.PodSandboxStatus) []string {
	if s.Network == nil || s.Network.Ip == "" {
		return nil
	}
	ips := []string{s.Network.Ip}
	for _, ip := range s.Network.AdditionalIps {
		ips = append(ips, ip.Ip)
	}
	return ips
}

// ContainerStatusFromCRI converts a CRI container status, reading the
// kubelet's labels for the name, hash and restart count.
func ContainerStatusFromCRI(s *runtimeapi.ContainerStatus, sandboxID string) *ContainerStatus {
	li := ReadLabels(s.Labels, s.Annotations)
	cs := &ContainerStatus{
		ID: s.Id, Name: s.GetMetadata().GetName(), State: StateFromCRI(s.State),
		CreatedAt: unixNano(s.CreatedAt), StartedAt: unixNano(s.StartedAt), FinishedAt: unixNano(s.FinishedAt),
		ExitCode: int(s.ExitCode), Image: s.GetImage().GetImage(), ImageRef: s.ImageRef,
		Hash: li.Hash, RestartCount: li.RestartCount, Reason: s.Reason, Message: s.Message,
		SandboxID: sandboxID, Resources: s.Resources,
	}
	if li.ContainerName != "" {
		cs.Name = li.ContainerName
	}
	return cs
}

func unixNano(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// PodStatusFromEvent builds a pod's status from a CRI container event, which
// carries the sandbox's and every container's status, so no further runtime
// call is needed (the evented PLEG's GeneratePodStatus). ok is false when the
// event has no sandbox status to tell which pod it is about.
func PodStatusFromEvent(ev *runtimeapi.ContainerEventResponse) (status *PodStatus, ok bool) {
	sb := ev.GetPodSandboxStatus()
	if sb.GetMetadata() == nil {
		return nil, false
	}
	s := &PodStatus{
		ID:              types.UID(sb.Metadata.Uid),
		Name:            sb.Metadata.Name,
		Namespace:       sb.Metadata.Namespace,
		SandboxStatuses: []*runtimeapi.PodSandboxStatus{sb},
	}
	if sb.State == runtimeapi.PodSandboxState_SANDBOX_READY {
		s.IPs = SandboxIPs(sb)
	}
	for _, c := range ev.ContainersStatuses {
		s.ContainerStatuses = append(s.ContainerStatuses, ContainerStatusFromCRI(c, sb.Id))
	}
	SortNewestFirst(s.ContainerStatuses)
	return s, true
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
