// Package gc is the kubelet's container and image garbage collection
// (pkg/kubelet/kuberuntime/kuberuntime_gc.go, pkg/kubelet/images/
// image_gc_manager.go) over CRI, with the kubelet's policies and defaults.
//
// Each half is a pure decision core — given lists, return what to remove —
// table-tested rule by rule, with the runtime calls at the edges:
//
//   - Container GC (ContainerGC, every minute): SelectContainers picks the
//     dead (not running) containers older than MinAge: all of a gone pod's,
//     then all but the newest MaxPerPodContainer (1) per pod and container
//     name, then, over MaxContainers (-1: no limit), an equal share per
//     container and the oldest beyond it. SelectSandboxes picks the
//     sandboxes that are neither ready nor hold a container: all of a gone
//     pod's, all but the newest of a live pod's. SelectPodLogDirs picks the
//     log directories (package podpath's <namespace>_<name>_<uid>) of gone
//     pods the runtime has no sandbox of. Only containers and sandboxes
//     with the kubelet's io.kubernetes.pod.* labels are considered, and
//     with a SandboxSelector only the sandboxes carrying those labels and
//     the containers in them. Which pods are gone, a PodStateProvider
//     says (the kubelet's pod workers), and only once AllSourcesReady.
//   - Image GC (ImageGC, every five minutes): images are tracked across
//     passes, first detected and last used, in memory. EvictionOrder keeps
//     those that may go — not used by any container of the runtime, not
//     pinned, not the SandboxImage — least recently used first. OldImages
//     picks those unused for MaxAge (0: off); when the image filesystem is
//     at 85% or more (capacity and availability from FsStats, statfs(2) at
//     the mountpoint CRI's ImageFsInfo reports), BytesToFree says how much
//     brings it to 80% and ImagesToFree which images, skipping those first
//     seen less than MinAge (2m) ago. Freeing too little is an error and a
//     FreeDiskSpaceFailed event.
//
// Time comes from an injected clock (k8s.io/utils/clock), so tests step a
// fake one and never sleep. There are no metrics of the package's own:
// OnCollect hands each of Run's results to the caller, who may count them.
//
// # Use
//
//	client, _ := runtime.Dial(ctx, endpoint)
//	containers, err := gc.NewContainerGC(gc.ContainerConfig{
//		Runtime: client,
//		PodState: gc.PodStateFunc(func(uid types.UID) bool { _, known := workers.State(uid); return !known }),
//		AllSourcesReady: sources.AllReady,
//		SandboxSelector: map[string]string{"nodekit.dev/node": nodeName}, // as kuberuntime.ManagerConfig.SandboxLabels
//		PodLogsDir:      "/var/log/pods",
//		Recorder:        recorder, NodeName: nodeName,
//	})
//	images, err := gc.NewImageGC(gc.ImageConfig{
//		Images: client, Containers: client,
//		SandboxImage: "registry.k8s.io/pause:3.10", // the runtime's sandbox_image
//		Recorder:     recorder, NodeName: nodeName,
//	})
//	go containers.Run(ctx) // every minute until ctx ends
//	go images.Run(ctx)     // every five minutes
//	// under disk pressure, as the kubelet's eviction manager:
//	containers.DeleteAllUnusedContainers(ctx)
//	images.DeleteUnusedImages(ctx)
//
// # Deviations from the kubelet
//
//   - Containers and sandboxes without the kubelet's pod UID label are
//     never touched (the kubelet takes them for a gone pod's); an image
//     used by any container of the runtime, labelled or not, is kept.
//   - A removed container's log file is found from its labels through
//     podpath (the kubelet asks the runtime for its LogPath, the same
//     file), and is kept if another container of the pod, not removed,
//     writes to it.
//   - A pod's log directory is kept while the runtime has a sandbox of
//     that pod, whoever's, so that agents sharing a runtime and a logs
//     directory do not remove each other's.
//   - For MaxAge, an image never seen in use counts as last used when it
//     was first detected; the kubelet removes such an image, however
//     recently pulled, once MaxAge has passed since it started.
//   - The sandbox image is named (SandboxImage) rather than relied on to
//     be pinned: containerd 1.6 does not pin it.
package gc
