// Package containerlog is the kubelet's container log manager
// (pkg/kubelet/logs) and its /var/log/containers symlinks
// (pkg/kubelet/kuberuntime/legacy.go), with the kubelet's defaults, file
// names and messages.
//
// Every MonitorInterval (10s) the Manager looks at each running
// container's CRI log file; one that has reached MaxSize (10Mi) is renamed
// to <log>.<YYYYMMDD-hhmmss> and the runtime reopens the log
// (ReopenContainerLog), the older rotated files are gzipped (.gz), and at
// most MaxFiles (5) files are kept, the live one included. AllLogs lists
// a log's files oldest first, for a reader that reads across rotations;
// RemoveLogs (or Manager.Clean) removes them with the container.
//
//	logs, err := containerlog.NewManager(containerlog.Config{Runtime: client}) // *runtime.Client
//	go logs.Run(ctx)
//	_ = containerlog.MakeSymlinkDir(containerlog.DefaultContainersLogDir) // at start
//	// after StartContainer:
//	ref := containerlog.ContainerRef{PodName: pod.Name, PodNamespace: pod.Namespace, ContainerName: c.Name, ContainerID: id}
//	_ = containerlog.CreateSymlink(containerlog.DefaultContainersLogDir, ref, logPath)
//	// before RemoveContainer:
//	_ = logs.Clean(ctx, id)
//	_ = containerlog.RemoveSymlink(containerlog.DefaultContainersLogDir, ref)
//	// with each container GC pass:
//	removed, err := containerlog.RemoveDeadSymlinks(ctx, containerlog.DefaultContainersLogDir, client)
//
// The kubelet has no metrics of its own for log rotation (its work queue's
// are not registered), so neither does this package.
//
// Deliberate differences from the kubelet:
//
//   - A log rotated at a pass (or since) is hot until the next pass: it is
//     looked at every HotCheckInterval (500ms, a stat) and rotated once it
//     reaches MaxSize again, so a fast writer's files stay near MaxSize.
//     The kubelet looks only every MonitorInterval: a pod writing 1 MiB/s
//     leaves 10 MiB files with a 1Mi limit.
//   - Run's passes do not overlap: a pass (RotateAll) hands the running
//     containers to MaxWorkers workers and returns when they are done,
//     where the kubelet feeds a work queue that deduplicates. Either way a
//     container is rotated by one worker at a time; here also against
//     Rotate and Clean.
//   - A MaxSize of zero takes the default (the kubelet would rotate every
//     log at every pass); negative disables rotation, as in the kubelet.
//   - An existing <log>.<timestamp> is never overwritten: a second
//     rotation within one second waits for the next pass (the kubelet
//     would lose the first file).
//   - A compression whose gzip or file Close fails is an error, not a
//     truncated archive.
//   - A container that is not running, or has no log path, is skipped
//     when looked at, not only when listed (and the listing asks the
//     runtime for running containers only).
//   - A container's status is read when a pass first lists it running,
//     and after only if its log has reached MaxSize or gone missing: a
//     log's path never changes. The kubelet reads every running
//     container's status every pass (25 calls a second at 250 pods).
//   - Clean removes the logs with rotation disabled too (the kubelet's
//     stub manager removes nothing).
package containerlog
