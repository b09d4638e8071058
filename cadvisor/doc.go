// Package cadvisor serves the container metrics the kubelet's embedded
// cAdvisor serves on /metrics/cadvisor, read from the cgroup files
// themselves (v1, hybrid and v2) without cAdvisor: the same names, help
// texts, types and labels (container, id, image, name, namespace, pod,
// and cpu, device, interface, failure_type, scope, ulimit where cAdvisor
// has them), for the cgroups the kubelet's cAdvisor reports: "/",
// kubepods, its QoS cgroups, each pod's cgroup (labelled with its pod,
// as the kubelet does) and each running container and sandbox the
// runtime lists. The kubernetes-mixin's dashboards and alerts read them.
//
//	c, err := cadvisor.New(cadvisor.Config{Runtime: client, // *runtime.Client
//		KubepodsCgroup: cgroups.Path(cgroups.KubepodsCgroupName())})
//	go c.Run(ctx)                            // housekeeping every 10s
//	mux.Handle("/metrics/cadvisor", c)       // behind nodes/metrics authz
//	registry.MustRegister(c)                 // or as a prometheus.Collector
//
// As cAdvisor, figures come from housekeeping (every
// HousekeepingInterval, the kubelet's 10s), each sample stamped with its
// time; container_last_seen is the scrape's time. The metric sets are the
// kubelet's: cpu, memory, disk I/O, network, process and OOM metrics
// (container_oom_events_total from an OOMCounter such as oomwatch's), and
// on cgroup v2 with PSI the pressure metrics (container_pressure_*, the
// kubelet's since KubeletPSI went GA in v1.36).
// Network counters are the sandbox's network namespace's (/proc/<pid>/net/dev),
// on sandboxes only, leaving out lo, veth*, docker* and nerdctl*.
// ContainerStats, PodStats and KubepodsStats give the same figures to
// /stats/summary and /metrics/resource (server.SummaryProvider.CgroupStats).
//
// Deliberate differences from the kubelet's cAdvisor, and why:
//   - ServeHTTP renders the text format at the first scrape after each
//     housekeeping (a node nothing scrapes never renders it), keeps it
//     only compressed (250 KB for a 110-pod node's 5 MB) and adds
//     container_last_seen per scrape: through a registry those 18,000
//     series cost about 40 ms per scrape, here under 1 ms gzipped
//     (BenchmarkScrape110Pods); an uncompressed scrape inflates it.
//   - container_start_time_seconds is the creation time (the runtime's,
//     or the cgroup directory's for other cgroups), as cAdvisor's for
//     containerd containers; the root cgroup has no process metrics
//     (cAdvisor counts every host process's descriptors there).
//   - container_fs_usage_bytes, _limit_bytes, _inodes_free and
//     _inodes_total are "/"'s, for the host's ext2/3/4, xfs and btrfs
//     filesystems (cAdvisor measures no containerd container's; its
//     tmpfs, overlay and zfs plugins are left out).
//   - Not produced: the disk I/O time, sector and merge counters (not in
//     cgroup files on multi-queue kernels), container_health_state
//     (Docker only), cadvisor_version_info and the machine_* collector.
package cadvisor
