package kuberuntime

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// kubelet calculateLinuxResources (kuberuntime_container_linux.go): on
// cgroup v2, unless singleProcessOOMKill, Unified asks for
// memory.oom.group=1.
func TestContainerConfigOOMGroup(t *testing.T) {
	for _, tc := range []struct {
		name          string
		v2, single    bool
		wantOOMGroup  bool
		wantNoUnified bool
	}{
		{name: "kubelet calculateLinuxResources: cgroup v2, singleProcessOOMKill false (its default there): memory.oom.group=1", v2: true, wantOOMGroup: true},
		{name: "kubelet calculateLinuxResources: cgroup v2, singleProcessOOMKill true: no memory.oom.group", v2: true, single: true, wantNoUnified: true},
		{name: "kubelet calculateLinuxResources: cgroup v1: no unified resources at all", wantNoUnified: true},
		{name: "kubelet calculateLinuxResources: cgroup v1 ignores singleProcessOOMKill", single: true, wantNoUnified: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newTestManager(t)
			m.cfg.CgroupV2, m.cfg.SingleProcessOOMKill = tc.v2, tc.single
			pod := webPod()
			cfg, err := m.ContainerConfig(pod, &pod.Spec.Containers[0], ContainerInput{})
			require.NoError(t, err)
			r := cfg.Linux.Resources
			if tc.wantOOMGroup {
				assert.Equal(t, map[string]string{"memory.oom.group": "1"}, r.Unified)
			}
			if tc.wantNoUnified {
				assert.Empty(t, r.Unified)
			}
			assert.Equal(t, int64(64<<20), r.MemoryLimitInBytes, "the rest as before")
		})
	}
}
