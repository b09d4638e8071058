package kuberuntime

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodekit-dev/nodekit/podpath"
)

// DefaultPodLogsDir is where the kubelet keeps container logs.
const DefaultPodLogsDir = podpath.DefaultPodLogsDir

// SandboxConfig builds the CRI sandbox config for a pod as the kubelet's
// generatePodSandboxConfig does: metadata, labels and annotations, hostname
// (none on the host network, where the runtime cannot set one), log
// directory, DNS, port mappings of every container port, the cgroup parent
// and the Linux security context, with the pod's user namespace (the
// node's, or with hostUsers: false the pod's own from
// ManagerConfig.UserNamespaces, whose error is returned as it is).
func (m *Manager) SandboxConfig(pod *v1.Pod, attempt uint32, cgroupParent string) (*runtimeapi.PodSandboxConfig, error) {
	logDir, err := PodLogsDir(m.cfg.PodLogsDir, pod)
	if err != nil {
		return nil, fmt.Errorf("pod %s: log directory: %w", podRef(pod), err)
	}
	cfg := &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{
			Name: pod.Name, Namespace: pod.Namespace, Uid: string(pod.UID), Attempt: attempt,
		},
		Labels:       sandboxLabels(pod, m.cfg.SandboxLabels),
		Annotations:  copyMap(pod.Annotations),
		LogDirectory: logDir,
	}
	if !pod.Spec.HostNetwork {
		if cfg.Hostname, err = podHostname(pod); err != nil {
			return nil, fmt.Errorf("pod %s: %w", podRef(pod), err)
		}
	}
	dns, err := m.cfg.DNS(pod)
	if err != nil {
		return nil, fmt.Errorf("pod %s: dns: %w", podRef(pod), err)
	}
	cfg.DnsConfig = dns
	for i := range pod.Spec.Containers {
		for _, p := range pod.Spec.Containers[i].Ports {
			if validatePort(p) != nil {
				continue // reported when that container starts; the others run
			}
			cfg.PortMappings = append(cfg.PortMappings, &runtimeapi.PortMapping{
				Protocol: protocol(p.Protocol), ContainerPort: p.ContainerPort, HostPort: p.HostPort, HostIp: p.HostIP,
			})
		}
	}
	cfg.Linux = sandboxLinuxConfig(pod, cgroupParent)
	userns, err := m.usernsOptions(pod)
	if err != nil {
		return nil, err
	}
	cfg.Linux.SecurityContext.NamespaceOptions.UsernsOptions = userns
	return cfg, nil
}

// PodLogsDir is <root>/<namespace>_<name>_<uid> (root "" is
// /var/log/pods), built by package podpath: a namespace, name or UID that
// would put it anywhere else is an error naming the field.
func PodLogsDir(root string, pod *v1.Pod) (string, error) {
	return podpath.Layout{PodLogsDir: root}.PodLogsDirectory(pod.Namespace, pod.Name, pod.UID)
}

func sandboxLinuxConfig(pod *v1.Pod, cgroupParent string) *runtimeapi.LinuxPodSandboxConfig {
	lc := &runtimeapi.LinuxPodSandboxConfig{
		CgroupParent: cgroupParent,
		SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			Privileged:       anyPrivileged(pod),
			NamespaceOptions: namespaceOptions(pod),
			Seccomp:          &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined},
		},
	}
	if sc := pod.Spec.SecurityContext; sc != nil {
		if sc.RunAsUser != nil {
			lc.SecurityContext.RunAsUser = &runtimeapi.Int64Value{Value: *sc.RunAsUser}
		}
		if sc.RunAsGroup != nil {
			lc.SecurityContext.RunAsGroup = &runtimeapi.Int64Value{Value: *sc.RunAsGroup}
		}
		lc.SecurityContext.SupplementalGroups = append(lc.SecurityContext.SupplementalGroups, sc.SupplementalGroups...)
		if sc.FSGroup != nil {
			lc.SecurityContext.SupplementalGroups = append(lc.SecurityContext.SupplementalGroups, *sc.FSGroup)
		}
		if len(sc.Sysctls) > 0 {
			lc.Sysctls = make(map[string]string, len(sc.Sysctls))
			for _, s := range sc.Sysctls {
				lc.Sysctls[s.Name] = s.Value
			}
		}
	}
	return lc
}

func namespaceOptions(pod *v1.Pod) *runtimeapi.NamespaceOption {
	ns := &runtimeapi.NamespaceOption{
		Network: networkNamespaceMode(pod),
		Pid:     runtimeapi.NamespaceMode_CONTAINER,
		Ipc:     runtimeapi.NamespaceMode_POD,
	}
	if pod.Spec.HostPID {
		ns.Pid = runtimeapi.NamespaceMode_NODE
	} else if pod.Spec.ShareProcessNamespace != nil && *pod.Spec.ShareProcessNamespace {
		ns.Pid = runtimeapi.NamespaceMode_POD
	}
	if pod.Spec.HostIPC {
		ns.Ipc = runtimeapi.NamespaceMode_NODE
	}
	return ns
}

func anyPrivileged(pod *v1.Pod) bool {
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			if sc := cs[i].SecurityContext; sc != nil && sc.Privileged != nil && *sc.Privileged {
				return true
			}
		}
	}
	return false
}

// podHostname is spec.hostname, or the pod name cut to 63 characters
// without a trailing '-' or '.', as the kubelet does.
func podHostname(pod *v1.Pod) (string, error) {
	h := pod.Name
	switch {
	case pod.Spec.HostnameOverride != nil: // GA in v1.37: the name whole, no domain
		h = *pod.Spec.HostnameOverride
		if msgs := validation.IsDNS1123Subdomain(h); len(msgs) != 0 {
			return "", fmt.Errorf("pod HostnameOverride %q is not a valid DNS subdomain: %s", h, strings.Join(msgs, ";"))
		}
	case pod.Spec.Hostname != "":
		h = pod.Spec.Hostname
	}
	if len(h) > 63 {
		h = strings.TrimRight(h[:63], "-.")
	}
	return h, nil
}

func protocol(p v1.Protocol) runtimeapi.Protocol {
	switch p {
	case v1.ProtocolUDP:
		return runtimeapi.Protocol_UDP
	case v1.ProtocolSCTP:
		return runtimeapi.Protocol_SCTP
	}
	return runtimeapi.Protocol_TCP
}

func podRef(pod *v1.Pod) string {
	return pod.Namespace + "/" + pod.Name
}

func copyMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
