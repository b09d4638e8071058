// Package oomwatch is the kubelet's OOM watcher (pkg/kubelet/oom, v1.37)
// as a library: it reads the kernel log, finds each OOM kill in it as
// cAdvisor's oomparser does, records the kubelet's Warning event SystemOOM
// on the Node for a system-wide OOM ("System OOM encountered, victim
// process: java, pid: 6012"), and counts OOM kills per memory cgroup for
// container_oom_events_total, keyed by the killed process's cgroup as the
// kernel prints it (task_memcg: on cgroup v1 the memory controller's path,
// such as /kubepods/burstable/pod<UID>/<container ID>).
//
//	w, err := oomwatch.New(oomwatch.Config{Recorder: recorder, NodeRef: nodeRef, Log: log})
//	go func() { errs <- w.Run(ctx) }() // "oomwatch: open /dev/kmsg: permission denied" unless root
//	n := w.OOMEvents(containerCgroup)   // the metric, for a live container
//	w.Forget(containerCgroup)           // when the container's cgroup is removed
//
// Parser, pure, turns /dev/kmsg lines into OOMs (the boot time that dates
// them is an input); a Source gives the lines: Kmsg reads /dev/kmsg or,
// in tests, a FIFO or a file.
//
// Deliberate deviations from the kubelet:
//   - Kmsg starts at the end of the log. The kubelet's parser never seeks,
//     so every restart records the OOMs still in the ring buffer again,
//     as new events. Kmsg{FromStart: true} reads them as the kubelet does.
//   - The oom-kill summary is read field by field, not with cAdvisor's
//     regular expression, which needs oom_memcg and cpuset: a system OOM's
//     line (global_oom), a kernel without cpusets and task names holding
//     commas are read right. Hence a system OOM counts for the killed
//     process's cgroup and for "/" (the kubelet, which falls back to the
//     "Killed process" line, counts it for "/" only).
//   - A report without a victim is dropped at the next "invoked
//     oom-killer" instead of taking that report's lines; \xHH escapes in
//     task names are decoded.
//   - The counter is the Watcher's, not a process global, and Forget
//     prunes it: the caller knows when a cgroup goes, which a callback
//     here would have to poll a container list for.
//
// Not done, as in the kubelet: kills the kernel reports without a header
// (over 10 in 5 s, rate-limited) are not counted; line fragments (the 'c'
// flag of kernels before 4.9) are not joined.
package oomwatch
