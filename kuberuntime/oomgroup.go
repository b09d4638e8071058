package kuberuntime

// cgroup2OOMGroup is the cgroup v2 file that makes the kernel kill every
// process of a cgroup when one of them is chosen by the OOM killer.
const cgroup2OOMGroup = "memory.oom.group"

// unifiedResources are the cgroup v2 files a container's CRI resources set
// (LinuxContainerResources.Unified): the kubelet's calculateLinuxResources
// asks for memory.oom.group=1 on a cgroup v2 node unless
// singleProcessOOMKill, so that an OOM kill takes the whole container
// down (no half-dead worker pool left running) rather than one process.
// On cgroup v1 there is no such file: nil.
func (m *Manager) unifiedResources() map[string]string {
	if !m.cfg.CgroupV2 || m.cfg.SingleProcessOOMKill {
		return nil
	}
	return map[string]string{cgroup2OOMGroup: "1"}
}
