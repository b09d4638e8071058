package kubecontainer

import (
	"time"

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
