package kuberuntime

import (
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// UserNamespaces gives a pod with spec.hostUsers: false its user
// namespace (the kubelet's GetOrCreateUserNamespaceMappings): container
// IDs 0..length-1, UIDs and GIDs alike, are host IDs hostID..; it refuses
// a runtime handler without user namespace support. package userns's
// *Manager is one.
type UserNamespaces interface {
	PodMapping(pod *v1.Pod, runtimeHandler string) (hostID, length uint32, err error)
}

// UserNamespacesFunc adapts a function to UserNamespaces.
type UserNamespacesFunc func(pod *v1.Pod, runtimeHandler string) (hostID, length uint32, err error)

// PodMapping calls f.
func (f UserNamespacesFunc) PodMapping(pod *v1.Pod, runtimeHandler string) (uint32, uint32, error) {
	return f(pod, runtimeHandler)
}

// ErrNoUserNamespaces is SandboxConfig's and ContainerConfig's error for a
// pod with hostUsers: false when ManagerConfig.UserNamespaces is nil: the
// pod is not run with the host's users instead.
var ErrNoUserNamespaces = errors.New("can't set `spec.hostUsers: false`: no user namespace manager (ManagerConfig.UserNamespaces)")

// hostUsers is the pod's spec.hostUsers, true by default.
func hostUsers(pod *v1.Pod) bool {
	return pod.Spec.HostUsers == nil || *pod.Spec.HostUsers
}

// usernsOptions is the pod's CRI user namespace, as the kubelet sends it
// since the feature went GA: the node's for host users, else the pod's own
// with its mappings.
func (m *Manager) usernsOptions(pod *v1.Pod) (*runtimeapi.UserNamespace, error) {
	if hostUsers(pod) {
		return &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_NODE}, nil
	}
	if m.cfg.UserNamespaces == nil {
		return nil, ErrNoUserNamespaces
	}
	hostID, length, err := m.cfg.UserNamespaces.PodMapping(pod, m.cfg.RuntimeHandler)
	if err != nil {
		return nil, err
	}
	ids := []*runtimeapi.IDMapping{{HostId: hostID, ContainerId: 0, Length: length}}
	return &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_POD, Uids: ids,
		Gids: []*runtimeapi.IDMapping{{HostId: hostID, ContainerId: 0, Length: length}}}, nil
}

// idmapMounts gives every mount of a container in its pod's user
// namespace the pod's mappings, as the kubelet does: the runtime mounts
// them idmapped, so that files owned by host IDs show as the container's.
func idmapMounts(mounts []*runtimeapi.Mount, userns *runtimeapi.UserNamespace) {
	if userns == nil || userns.Mode != runtimeapi.NamespaceMode_POD {
		return
	}
	for _, mt := range mounts {
		mt.UidMappings, mt.GidMappings = userns.Uids, userns.Gids
	}
}

// HandlerSupportsUserNamespaces tells from the runtime's status whether
// runtime handler supports user namespaces, as the kubelet's
// HandlerSupportsUserNamespaces: a runtime that lists no handlers (too old
// to say) does not; a handler it does not list is an error.
func HandlerSupportsUserNamespaces(status *runtimeapi.StatusResponse, handler string) (bool, error) {
	hs := status.GetRuntimeHandlers()
	if len(hs) == 0 {
		return false, nil
	}
	for _, h := range hs {
		if h.GetName() == handler {
			return h.GetFeatures().GetUserNamespaces(), nil
		}
	}
	return false, fmt.Errorf("the handler %q is not known", handler)
}
