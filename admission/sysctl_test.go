package admission

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
)

// kubelet pkg/kubelet/sysctl allowlist: safe sysctls pass, unsafe ones
// only when --allowed-unsafe-sysctls names them (or their prefix), and a
// namespaced one never with the host's namespace (upstream e2e: "Sysctls
// should not launch unsafe, but not explicitly enabled sysctls on the
// node").
func TestSysctlsAdmit(t *testing.T) {
	s, err := NewSysctls([]string{"kernel.msg*", "net.core.somaxconn"})
	require.NoError(t, err)
	for _, tc := range []struct {
		name         string
		sysctls      []string
		hostNet, ipc bool
		want         string // "" admitted, else the message
	}{
		{"no sysctls", nil, false, false, ""},
		{"safe", []string{"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range"}, false, false, ""},
		{"safe, slash form", []string{"net/ipv4/ip_local_port_range"}, false, false, ""},
		{"unsafe, not enabled", []string{"kernel.shm_rmid_forced", "kernel.shmmax"}, false, false, `forbidden sysctl: "kernel.shmmax" not allowlisted`},
		{"unsafe, enabled by name", []string{"net.core.somaxconn"}, false, false, ""},
		{"unsafe, enabled by prefix", []string{"kernel.msgmax"}, false, false, ""},
		{"net sysctl with hostNetwork", []string{"net.ipv4.tcp_syncookies"}, true, false, `forbidden sysctl: "net.ipv4.tcp_syncookies" not allowed with host Net enabled`},
		{"ipc sysctl with hostIPC", []string{"kernel.shm_rmid_forced"}, false, true, `forbidden sysctl: "kernel.shm_rmid_forced" not allowed with host IPC enabled`},
		{"ipc sysctl with hostNetwork", []string{"kernel.msgmax"}, true, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{HostNetwork: tc.hostNet, HostIPC: tc.ipc, SecurityContext: &v1.PodSecurityContext{}}}
			for _, n := range tc.sysctls {
				pod.Spec.SecurityContext.Sysctls = append(pod.Spec.SecurityContext.Sysctls, v1.Sysctl{Name: n, Value: "1"})
			}
			r := s.Admit(pod)
			if tc.want == "" {
				assert.True(t, r.Admit, r.Message)
				return
			}
			assert.Equal(t, PodAdmitResult{Reason: ReasonSysctlForbidden, Message: tc.want}, r)
		})
	}
}

func TestNewSysctlsRefusesPatternsNotNamespaced(t *testing.T) {
	_, err := NewSysctls([]string{"net.core.somaxconn", "vm.swappiness"})
	assert.EqualError(t, err, `admission: allowed unsafe sysctls[1]: invalid value "vm.swappiness": not known to be namespaced`)
}
