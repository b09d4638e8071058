// Package eviction is the kubelet's eviction manager as a library: it
// watches the node's memory, disk and PID signals, reports the
// MemoryPressure, DiskPressure and PIDPressure conditions, refuses pods
// the node cannot take, and evicts pods, one per pass, when a threshold
// is met, with the rules, messages and defaults of the kubelet v1.34
// (pkg/kubelet/eviction).
//
//   - Thresholds: ParseFlags reads --eviction-hard, --eviction-soft,
//     --eviction-soft-grace-period, --eviction-minimum-reclaim and
//     mergeDefaultEvictionSettings into []Threshold. An unset
//     --eviction-hard means the kubelet's default (memory.available<100Mi,
//     nodefs.available<10%, nodefs.inodesFree<5%, imagefs.available<15%,
//     imagefs.inodesFree<5%); any hard threshold replaces the whole default
//     unless MergeDefaults (the kubelet's default: replace). The syntax is
//     resources.ParseThresholds, which allocatable uses too.
//   - Signals: a SummaryProvider (the Summary API, with each pod's usage)
//     and, if set, a SignalProvider such as LinuxSignals (cgroups v1 or v2,
//     statfs, pid_max), read as the kubelet's cadvisor reads them.
//   - Decisions, pure and table-tested (Manager has them in full): soft
//     thresholds after their grace period, the pressure transition period
//     (5m), minimum reclaim, node-level reclaim before any eviction, the
//     kubelet's ranking (Rank); static, mirror and critical pods are never
//     evicted.
//   - I/O at the edges: a PodKiller, an EventRecorder, a clock.
//
// A Manager is the loop (Run, every 10s) around Synchronize; it is a
// nodestatus.Pressure, and Admit is the kubelet's admission handler:
//
//	thresholds, err := eviction.ParseFlags(eviction.Flags{Hard: &hardFlag, Soft: "memory.available<1Gi",
//		SoftGracePeriod: "memory.available=1m30s"})
//	signals, err := eviction.NewLinuxSignals(eviction.LinuxConfig{RootDir: "/var/lib/kubelet",
//		KubepodsCgroup: cgroups.Path(cgroups.KubepodsCgroupName())})
//	m, err := eviction.New(eviction.Config{Thresholds: thresholds, Summary: summaryProvider, Signals: signals,
//		DiskInfo: signals, Pods: eviction.ActivePodsFunc(workers.Pods), Killer: killer, Reclaimer: gc,
//		Recorder: recorder, NodeRef: nodeRef})
//	go m.Run(ctx)
//	node, err := nodestatus.New(nodestatus.Config{..., Pressure: m})
//	if r := m.Admit(pod); !r.Admit { /* reject with r.Reason, r.Message */ }
//
// Not done: the kernel memcg notification (--kernel-memcg-notification)
// that makes the kubelet evaluate at once when memory crosses a threshold;
// the eviction metrics.
package eviction
