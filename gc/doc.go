// Package gc is the kubelet's container and image garbage collection
// (pkg/kubelet/kuberuntime/kuberuntime_gc.go, pkg/kubelet/images/
// image_gc_manager.go) over CRI, with the kubelet's policies and defaults.
//
// Each half is a pure decision core — given lists, return what to remove —
// table-tested rule by rule, with the runtime calls at the edges:
//
//   - ContainerGC, every minute: dead containers beyond the newest per pod
//     and container name (SelectContainers), inactive sandboxes
//     (SelectSandboxes) and gone pods' log directories (SelectPodLogDirs);
//     a pod is gone when the PodStateProvider says so, and only once
//     AllSourcesReady.
//   - ImageGC, every five minutes: unused, unpinned images, least recently
//     used first (EvictionOrder), those older than MaxAge (OldImages), and
//     from 85% of the image filesystem down to 80% (BytesToFree,
//     ImagesToFree), never one first seen less than MinAge (2m) ago.
//
// Time comes from an injected clock (k8s.io/utils/clock), so tests step a
// fake one and never sleep. There are no metrics of the package's own:
// OnCollect hands each of Run's results to the caller, who may count them.
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
//	images, err := gc.NewImageGC(gc.ImageConfig{Images: client, Containers: client,
//		SandboxImage: "registry.k8s.io/pause:3.10", Recorder: recorder, NodeName: nodeName})
//	go containers.Run(ctx) // every minute until ctx ends
//	go images.Run(ctx)     // every five minutes
//	// under disk pressure, as the kubelet's eviction manager:
//	containers.DeleteAllUnusedContainers(ctx)
//	images.DeleteUnusedImages(ctx)
//
// Deliberate differences from the kubelet (detailed on ContainerGC and
// ImageGC): containers and sandboxes without the kubelet's pod UID label
// are never touched; a log file another container still writes to is
// kept; a pod's log directory is kept while the runtime has a sandbox of
// that pod; an image never seen in use ages from when it was first
// detected; and the sandbox image is named (SandboxImage), not relied on to
// be pinned.
package gc
