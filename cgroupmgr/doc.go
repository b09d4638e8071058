// Package cgroupmgr keeps the kubelet's pod cgroup tree — node
// ("kubepods"), QoS class ("burstable", "besteffort"; Guaranteed pods sit
// directly under kubepods), pod ("pod<uid>") — on top of
// github.com/containerd/cgroups/v3, so that Guaranteed pods are protected and
// BestEffort pods are squeezed first. Container cgroups are the runtime's job.
//
//	m, err := cgroupmgr.New(cgroupmgr.Config{}) // detects v1 / hybrid / v2
//	err = m.EnsureQOSCgroups()
//	name, err := m.EnsurePodCgroup(pod)         // shares, CFS quota, memory, pids
//	err = m.UpdateQOSCgroups(activePods)        // burstable shares = sum of requests
//	u, err := m.PodUsage(pod)                   // working set, CPU ns, pids
//	res, err := m.CleanupOrphans(activeUIDs)    // *BusyError for cgroups with processes
//	limits, err := resources.PodsCgroupLimits(allocCfg)
//	err = m.EnforceNodeAllocatable(limits)      // optional, on kubepods
//
// Defaults and choices (all as the kubelet):
//   - Config{} zero value: MountRoot /sys/fs/cgroup, CgroupRoot "/", driver
//     cgroupfs, CFS quota on with a 100 ms period, pods' pids unlimited,
//     memory QoS off, cpu.weight by WeightLinear (KEP-2254:
//     1 + ((shares-2)*9999)/262142; WeightNonLinear is runc >= 1.3.2's).
//   - Arithmetic comes from package resources (MilliCPUToShares,
//     MilliCPUToQuota, ComputePodQOS). ResourceConfigForPod and the pod
//     request/limit totals (init containers max'ed, sidecars summed, overhead
//     added) live here, as only cgroup sizing needs them.
//   - Hybrid hosts (v1 controllers + controller-less cgroup2 at
//     /sys/fs/cgroup/unified) are managed through the v1 controllers cpu,
//     cpuacct, memory and pids; other v1 controllers (cpuset, hugetlb,
//     devices, freezer, blkio) are not touched. Unified hosts use cpu, memory
//     and pids via cgroup2; memory.min (memory QoS) is only written there.
//   - The systemd driver only changes names ("kubepods-burstable-pod<uid
//     with _>.slice"); cgroups are still written through the filesystem, no
//     systemd units are created.
//   - Nothing is cached and no goroutine is started; invalid input (negative
//     quantities, request above limit, ".." in a path) is refused with an
//     error naming the field and value.
package cgroupmgr
