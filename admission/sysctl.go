package admission

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/node/util/sysctl"
)

// ReasonSysctlForbidden is the kubelet's reason for a pod whose sysctls
// are not allowed (pkg/kubelet/sysctl).
const ReasonSysctlForbidden = "SysctlForbidden"

// SafeSysctls are the kubelet's safe sysctls (v1.34's SafeSysctlAllowlist):
// namespaced, and with no effect on other pods. The kubelet drops the
// newest three on kernels older than 3.16 and 4.15; nodekit needs a newer
// kernel anyway, so they are always in.
var SafeSysctls = []string{
	"kernel.shm_rmid_forced",
	"net.ipv4.ip_local_port_range",
	"net.ipv4.tcp_syncookies",
	"net.ipv4.ping_group_range",
	"net.ipv4.ip_unprivileged_port_start",
	"net.ipv4.tcp_keepalive_time",
	"net.ipv4.tcp_fin_timeout",
	"net.ipv4.tcp_keepalive_intvl",
	"net.ipv4.tcp_keepalive_probes",
	"net.ipv4.ip_local_reserved_ports",
	"net.ipv4.tcp_rmem",
	"net.ipv4.tcp_wmem",
}

// Sysctls is the kubelet's sysctl admit handler: a pod may set only the
// safe sysctls and those --allowed-unsafe-sysctls names (a trailing *
// allows a prefix), and none of the network namespace's with hostNetwork
// or of the IPC namespace's with hostIPC. Others are refused before the
// pod starts, with SysctlForbidden.
type Sysctls struct {
	names    map[string]sysctl.Namespace
	prefixes map[string]sysctl.Namespace
}

// NewSysctls allows SafeSysctls and allowedUnsafe; a pattern that is not
// known to be namespaced is an error naming it, as the kubelet's.
func NewSysctls(allowedUnsafe []string) (*Sysctls, error) {
	s := &Sysctls{names: map[string]sysctl.Namespace{}, prefixes: map[string]sysctl.Namespace{}}
	for i, pattern := range append(append([]string(nil), SafeSysctls...), allowedUnsafe...) {
		ns, nameOrPrefix, prefixed := sysctl.GetNamespace(pattern)
		if ns == sysctl.UnknownNamespace {
			return nil, fmt.Errorf("admission: allowed unsafe sysctls[%d]: invalid value %q: not known to be namespaced",
				i-len(SafeSysctls), pattern)
		}
		if prefixed {
			s.prefixes[nameOrPrefix] = ns
		} else {
			s.names[nameOrPrefix] = ns
		}
	}
	return s, nil
}

// Admit refuses a pod that sets a sysctl not allowed: Sysctls is a
// PodAdmitHandler.
func (s *Sysctls) Admit(pod *v1.Pod) PodAdmitResult {
	if pod.Spec.SecurityContext == nil {
		return PodAdmitResult{Admit: true}
	}
	for _, sc := range pod.Spec.SecurityContext.Sysctls {
		if err := s.check(sysctl.NormalizeName(sc.Name), pod.Spec.HostNetwork, pod.Spec.HostIPC); err != "" {
			return PodAdmitResult{Reason: ReasonSysctlForbidden, Message: "forbidden sysctl: " + err}
		}
	}
	return PodAdmitResult{Admit: true}
}

// check is the kubelet's validateSysctl: "" if name is allowed.
func (s *Sysctls) check(name string, hostNet, hostIPC bool) string {
	ns, found := s.names[name]
	for p, pns := range s.prefixes {
		if !found && strings.HasPrefix(name, p) {
			ns, found = pns, true
		}
	}
	switch {
	case !found:
		return fmt.Sprintf("%q not allowlisted", name)
	case ns == sysctl.IPCNamespace && hostIPC, ns == sysctl.NetNamespace && hostNet:
		return fmt.Sprintf("%q not allowed with host %s enabled", name, ns)
	}
	return ""
}
